/**
 * Training steps of src/zoo/models.ts models (the MNIST MLP, LeNet, ResNet-20), batch 64 of seeded
 * random MNIST-shaped data, cross entropy, Adam (foreach), one submit per step: samples/s
 * with the loss read at the end (the GPU kept fed) and with the loss awaited every step
 * (step ms = the wall of one step including Deno's readback wait). Rounds interleave the
 * models so load hits them alike. Also the kernel GFLOP/s of our n×n matmul with `--matmul`,
 * timed as many dispatches in one submit (so a GPU's ~10 ms submit floor does not hide it).
 *
 *   deno run -A --no-check bench/steps.ts [--models mlp,lenet,resnet20] [--rounds 3] [--steps 30] [--matmul 1024,2048]
 *     [--profile]   then each model's GPU time by kernel family and entry (bench/profile.ts's replay, ×3)
 *
 * Used for the before/after tables of bench/README.md and by bench/gpu.sh.
 */
import process from "node:process";
import { Adam, crossEntropy, Device, fromArray, rand, Variable } from "../src/index.ts";
import { ops } from "../src/engine.ts";
import { lenet, mlp, resnet20 } from "../src/zoo/mod.ts";
import { profileKernels, timeMedian } from "./profile.ts";
import { labelsI32, median, uniformF32 } from "./workloads.ts";

const arg = (name: string, dflt: string) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : dflt;
};
const MODELS = {
  mlp: { build: mlp, input: [64, 784] as number[] },
  lenet: { build: lenet, input: [64, 1, 28, 28] as number[] },
  resnet20: { build: resnet20, input: [64, 1, 28, 28] as number[] },
};
type Name = keyof typeof MODELS;
const names = arg("models", "mlp,lenet").split(",").filter(Boolean) as Name[];
for (const n of names) {
  if (!(n in MODELS)) throw new RangeError(`bench/steps: --models takes ${Object.keys(MODELS)}, got ${n}`);
}
const rounds = Number(arg("rounds", "3")), steps = Number(arg("steps", "30"));
const sizes = arg("matmul", "").split(",").filter(Boolean).map(Number);

const device = await Device.request({ label: "steps" });
Device.setDefault(device);

/** Launches (dispatches, copies, clears) `f` records on the device, by `<shader>/<entry>`. */
function countLaunches(f: () => void): string[] {
  const seen: string[] = [];
  const dev = device as unknown as Record<string, unknown>;
  const own = { dispatch: device.dispatch, copy: device.copy, clear: device.clear };
  dev.dispatch = (
    d: Parameters<typeof device.dispatch>[0],
  ) => (seen.push(`${d.shader}/${d.entry}`), own.dispatch.call(device, d));
  dev.copy = (...a: Parameters<typeof device.copy>) => (seen.push("copy"), own.copy.apply(device, a));
  dev.clear = (...a: Parameters<typeof device.clear>) => (seen.push("clear"), own.clear.apply(device, a));
  try {
    f();
  } finally {
    delete dev.dispatch;
    delete dev.copy;
    delete dev.clear;
  }
  return seen;
}
const launchLists = new Map<Name, string[]>();

/** A model of MODELS with Adam, a seeded batch, one step's recording, and its disposal. */
function setup(name: Name) {
  const { build, input } = MODELS[name];
  const model = build(device);
  const opt = new Adam(model.parameters(), { lr: 1e-3, foreach: true });
  const count = input.reduce((a, b) => a * b, 1);
  const x = fromArray(uniformF32(3, count, 0, 1), input, { device }).keep();
  const y = fromArray(labelsI32(4, input[0], 10), [input[0]], { device }).keep();
  const step = () => {
    const loss = crossEntropy(model.forward(new Variable(x)), y);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss.data;
  };
  const dispose = () => {
    opt.resetState();
    for (const p of model.parameters()) {
      p.zeroGrad();
      p.data.dispose();
    }
    x.dispose();
    y.dispose();
    device.endStep();
  };
  return { input, step, dispose };
}

/** samples/s of `steps` steps after 3 warm-ups; `every`: await each step's loss. */
async function trainSteps(name: Name, every: boolean): Promise<{ sps: number; last: number; spCpuS: number }> {
  const { input, step, dispose } = setup(name);
  try {
    for (let i = 0; i < 3; i++) {
      let loss: ReturnType<typeof step> | undefined;
      if (i === 2 && !launchLists.has(name)) launchLists.set(name, countLaunches(() => loss = step()));
      const r = (loss ?? step()).toArray();
      device.endStep();
      await r;
    }
    let last = NaN;
    const u0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < steps; i++) {
      const loss = step();
      const read = every || i === steps - 1 ? loss.toArray() : undefined;
      device.endStep();
      if (read) last = (await read)[0];
    }
    const ms = performance.now() - t0;
    const u = process.cpuUsage(u0);
    if (!Number.isFinite(last)) throw new Error(`bench/steps: ${name} ended at loss ${last}`);
    return { sps: (steps * input[0] * 1000) / ms, last, spCpuS: (steps * input[0] * 1e6) / (u.user + u.system) };
  } finally {
    dispose();
  }
}

/** One step's GPU time by kernel family and by entry, after 2 warm-ups. */
async function profileModel(name: Name): Promise<void> {
  const { step, dispose } = setup(name);
  try {
    for (let i = 0; i < 2; i++) {
      await step().toArray();
      device.endStep();
    }
    const p = await profileKernels(device, step, await timeMedian(3, () => device.sync()), 3);
    console.log(`\n${name}: ${p.launches} launches, Σ kernel ${p.kernelMs.toFixed(0)} ms\n| family or entry | launches | ms | share |\n|---|---|---|---|`);
    for (const f of p.families) console.log(`| ${f.family} | ${f.launches} | ${f.ms.toFixed(0)} | ${(100 * f.share).toFixed(1)}% |`);
    const byEntry = new Map<string, { n: number; ms: number }>();
    for (const k of p.kernels) {
      const e = byEntry.get(k.kernel) ?? { n: 0, ms: 0 };
      e.n++, e.ms += k.ms;
      byEntry.set(k.kernel, e);
    }
    for (const [k, e] of [...byEntry].sort((a, b) => b[1].ms - a[1].ms).slice(0, 8)) {
      console.log(`| ${k} | ${e.n} | ${e.ms.toFixed(0)} | ${((100 * e.ms) / p.kernelMs).toFixed(1)}% |`);
    }
  } finally {
    dispose();
  }
}

/** Kernel GFLOP/s of n×n matmul: `reps` dispatches in one submit minus one, median of 5. */
async function matmulKernel(n: number): Promise<{ wall: number; cpu: number }> {
  const a = rand([n, n], { device, seed: 1 }).keep(), b = rand([n, n], { device, seed: 2 }).keep();
  const run = async (k: number) => {
    const u0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < k; i++) ops.matmul(a, b);
    await device.sync();
    device.endStep();
    const u = process.cpuUsage(u0);
    return { wall: performance.now() - t0, cpu: (u.user + u.system) / 1000 };
  };
  await run(2);
  const reps = device.isFallback ? 4 : Math.max(8, Math.round(2 * 4096 ** 3 / n ** 3));
  const xs: number[] = [], cs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const one = await run(1), many = await run(reps + 1);
    xs.push((many.wall - one.wall) / reps);
    cs.push((many.cpu - one.cpu) / reps);
  }
  a.dispose();
  b.dispose();
  return { wall: (2 * n ** 3) / median(xs) / 1e6, cpu: (2 * n ** 3) / median(cs) / 1e6 };
}

const i = device.info;
console.log(
  `bench/steps: deno ${Deno.version.deno}, adapter ${i.vendor}|${i.architecture}|${i.description} (${device.adapterKind}), ` +
    `tiling ${JSON.stringify(device.matmul)} classes ${JSON.stringify(device.matmulClasses)}, load ${
      Deno.loadavg()[0].toFixed(1)
    }`,
);
const res = new Map<string, number[]>();
const push = (k: string, v: number) => res.set(k, [...(res.get(k) ?? []), v]);
for (let r = 0; r < rounds; r++) {
  for (const n of sizes) {
    const k = await matmulKernel(n);
    push(`matmul ${n} kernel GFLOP/s`, k.wall);
    push(`matmul ${n} kernel GFLOP per CPU-s`, k.cpu);
  }
  for (const name of names) {
    const end = await trainSteps(name, false);
    push(`${name} b64 samples/s, loss at end`, end.sps);
    push(`${name} b64 samples per CPU-s, loss at end`, end.spCpuS);
    const every = await trainSteps(name, true);
    push(`${name} b64 step ms, loss awaited every step`, (64 * 1000) / every.sps);
  }
}
console.log(`\n| measure | median | runs |\n|---|---|---|`);
for (const [k, xs] of res) {
  console.log(`| ${k} | ${median(xs).toFixed(k.includes("ms") ? 2 : 1)} | ${xs.map((x) => x.toFixed(1)).join(", ")} |`);
}
for (const [name, seen] of launchLists) console.log(`${name} launches per step (${seen.length}): ${seen.join(", ")}`);
if (Deno.args.includes("--profile")) for (const name of names) await profileModel(name);
console.log(`load ${Deno.loadavg()[0].toFixed(1)}`);
device.destroy();
