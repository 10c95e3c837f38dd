/**
 * The native anchor (issue 13): our engine against native code on the same CPU, in one
 * sitting, rounds interleaved (ours, then native, R times) so machine load hits both alike.
 *
 * - matmul n×n (W1's seeded operands, n = 1024): ours = `matmul` + `device.sync()` (the
 *   kernel) and + `toArray()` (W1's definition, C read back); native = numpy `a @ b` (f32,
 *   through the BLAS numpy loaded: OpenBLAS once `libopenblas0-pthread` is installed) and
 *   torch `a @ b`.
 * - W2, the MLP 784-256-10 + Adam, batch 64 (bench/ours.ts): samples/s with the loss read at
 *   the end, every step awaited, and every step read two steps late (bench/loss_lag.ts);
 *   native = PyTorch CPU, at the end and every step (`loss.item()`, synchronous anyway).
 *   Every contender's loss at step 1 and 55 must match the float64 reference.
 * - Kernel by kernel: our step's profile (bench/profile.ts) beside PyTorch's own ops of the
 *   same step (torch.profiler, self CPU ms), from the last round.
 *
 *   deno run -A --no-check bench/native_anchor.ts [--rounds 3] [--n 1024] [--python /usr/bin/python3]
 *
 * The native side (bench/native_anchor.py) runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
 * removed from its environment (the machine sets them for other tools; they would pin
 * OpenBLAS to a smaller kernel), and reports the BLAS library its process mapped.
 */
import { Device } from "../src/index.ts";
import { ops } from "../src/engine.ts";
import { oursMlpLagged } from "./ours.ts";
import { profileOurs } from "./profile.ts";
import { profileLines } from "./report.ts";
import { checkMatmul, lossOk, matmulFlops, median, w1Data, W2, w2Data } from "./workloads.ts";
import process from "node:process";

const arg = (name: string, dflt: string) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : dflt;
};
const rounds = Number(arg("rounds", "3")), n = Number(arg("n", "1024")), python = arg("python", "/usr/bin/python3");
if (!Number.isInteger(rounds) || rounds < 1) {
  throw new RangeError(`bench/native_anchor: --rounds must be a positive integer, got ${arg("rounds", "")}`);
}
if (!Number.isInteger(n) || n < 4) {
  throw new RangeError(`bench/native_anchor: --n must be an integer ≥ 4, got ${arg("n", "")}`);
}

// The operands, written once for the native side.
const dir = await Deno.makeTempDir({ prefix: "native_anchor_" });
const w1 = w1Data(n), w2 = w2Data();
const files: [string, ArrayBufferView][] = [
  ["w1_a.f32", w1.a],
  ["w1_b.f32", w1.b],
  ["w2_x.f32", w2.x],
  ["w2_y.i32", w2.y],
  ["w2_w1.f32", w2.w1],
  ["w2_w2.f32", w2.w2],
];
for (const [name, v] of files) {
  await Deno.writeFile(`${dir}/${name}`, new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
}

type NativeMlp = { samplesPerS: number; samplesPerCpuS: number; firstLoss: number; lastLoss: number };
interface Native {
  profile?: { stepSelfMs: number; ops: { op: string; calls: number; ms: number }[] };
  numpy: string;
  torch: string;
  torchThreads: number;
  blas: string[];
  matmul: { numpyGflops: number; numpyGflopsPerCpuS: number; torchGflops: number; row0MaxAbsErr: number };
  /** Every core, and one thread. */
  mlp: Record<"lossAtEnd" | "lossEveryStep", NativeMlp>;
  mlp1: Record<"lossAtEnd" | "lossEveryStep", NativeMlp>;
}

async function native(profile = false): Promise<Native> {
  const env = Deno.env.toObject();
  delete env.OPENBLAS_CORETYPE;
  delete env.OPENBLAS_L2_SIZE;
  const script = new URL("./native_anchor.py", import.meta.url).pathname;
  const out = await new Deno.Command(python, {
    args: [script, dir, "--n", String(n), ...(profile ? ["--profile"] : [])],
    env,
    clearEnv: true,
    stderr: "inherit",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success) throw new Error(`bench/native_anchor: ${python} ${script} exited with ${out.code}: ${text}`);
  const r = JSON.parse(text.split("\n").at(-1)!) as Native;
  if (!(r.matmul.row0MaxAbsErr < 1e-3)) {
    throw new Error(`bench/native_anchor: numpy's matmul row 0 is off by ${r.matmul.row0MaxAbsErr} (want < 1e-3)`);
  }
  for (const [mode, m] of [...Object.entries(r.mlp), ...Object.entries(r.mlp1)]) {
    if (!lossOk(m.firstLoss, m.lastLoss)) {
      throw new Error(
        `bench/native_anchor: PyTorch ${mode} losses ${m.firstLoss} → ${m.lastLoss}, reference ${W2.refFirst} → ${W2.refLast}`,
      );
    }
  }
  return r;
}

const device = await Device.request({ label: "native_anchor" });
Device.setDefault(device);
const a = ops.fromArray(w1.a, [n, n], { device }).keep(), b = ops.fromArray(w1.b, [n, n], { device }).keep();

/** Our matmul GFLOP/s and GFLOP per CPU-second, medians of 7 after 2 warm-ups; `readback` adds reading C back. */
async function oursMatmul(readback: boolean): Promise<{ gflops: number; perCpu: number }> {
  const runs: number[] = [], cpu: number[] = [];
  let c: ArrayLike<number> = [];
  for (let i = 0; i < 9; i++) {
    const u0 = process.cpuUsage();
    const t0 = performance.now();
    const out = ops.matmul(a, b);
    if (readback) c = await out.toArray();
    else await device.sync();
    const ms = performance.now() - t0;
    const u = process.cpuUsage(u0);
    device.endStep();
    if (i >= 2) {
      runs.push(ms);
      cpu.push((u.user + u.system) / 1000);
    }
  }
  if (readback) {
    const chk = checkMatmul(n, w1.a, w1.b, c);
    if (!chk.ok) throw new Error(`bench/native_anchor: our matmul ${n} is off by ${chk.maxErr} of Σ|a·b|`);
  }
  return { gflops: matmulFlops(n) / median(runs) / 1e6, perCpu: matmulFlops(n) / median(cpu) / 1e6 };
}

/** Per round: [ours, native] for each measure; "cpu" measures are per CPU-second of each process. */
const rows = new Map<string, [number[], number[]]>();
const put = (k: string, ours: number, nat: number) => {
  const r = rows.get(k) ?? [[], []];
  r[0].push(ours);
  r[1].push(nat);
  rows.set(k, r);
};
let info: Native | undefined;
const load0 = Deno.loadavg();
const t0 = performance.now();
for (let r = 0; r < rounds; r++) {
  const mm = await oursMatmul(false), mmRead = await oursMatmul(true);
  const ours: Record<string, { sps: number; last: number; spCpuS: number }> = {};
  for (const [mode, lag] of [["end", -1], ["every", 0], ["lag2", 2]] as const) {
    const res = await oursMlpLagged(device, W2.steps, lag);
    if (!(Math.abs(res.last - W2.refLast) <= W2.tolLast)) {
      throw new Error(`bench/native_anchor: our MLP (loss read ${mode}) ended at ${res.last}, reference ${W2.refLast}`);
    }
    ours[mode] = res;
  }
  info = await native(r === rounds - 1);
  const best = (mode: "lossAtEnd" | "lossEveryStep", k: "samplesPerS" | "samplesPerCpuS") =>
    Math.max(info!.mlp[mode][k], info!.mlp1[mode][k]);
  put(`matmul ${n} GFLOP/s: ours dispatch + sync / numpy`, mm.gflops, info.matmul.numpyGflops);
  put(`matmul ${n} GFLOP/s: ours incl. readback / numpy`, mmRead.gflops, info.matmul.numpyGflops);
  put(`matmul ${n} GFLOP/s: ours dispatch + sync / torch`, mm.gflops, info.matmul.torchGflops);
  put(`matmul ${n} GFLOP per CPU-s: ours / numpy`, mm.perCpu, info.matmul.numpyGflopsPerCpuS);
  put("MLP samples/s, loss at end: ours / PyTorch", ours.end.sps, best("lossAtEnd", "samplesPerS"));
  put("MLP samples/s, loss every step: ours awaited / PyTorch", ours.every.sps, best("lossEveryStep", "samplesPerS"));
  put(
    "MLP samples/s, loss every step: ours read 2 steps late / PyTorch",
    ours.lag2.sps,
    best("lossEveryStep", "samplesPerS"),
  );
  put("MLP samples per CPU-s, loss at end: ours / PyTorch", ours.end.spCpuS, best("lossAtEnd", "samplesPerCpuS"));
  put(
    "MLP samples per CPU-s, loss every step: ours awaited / PyTorch",
    ours.every.spCpuS,
    best("lossEveryStep", "samplesPerCpuS"),
  );
  console.log(
    `round ${r + 1}/${rounds} (load ${Deno.loadavg()[0].toFixed(1)}): ours mm ${
      mm.gflops.toFixed(2)
    } GFLOP/s, numpy ${info.matmul.numpyGflops}; ` +
      `ours MLP ${ours.end.sps.toFixed(0)}/${
        ours.every.sps.toFixed(0)
      }, torch ${info.mlp.lossAtEnd.samplesPerS}/${info.mlp.lossEveryStep.samplesPerS} ` +
      `(1 thread ${info.mlp1.lossAtEnd.samplesPerS}/${info.mlp1.lossEveryStep.samplesPerS}) samples/s`,
  );
}
a.dispose();
b.dispose();
await Deno.remove(dir, { recursive: true });
// Kernel by kernel: where our step's time goes, beside PyTorch's own ops of the same step.
const prof = await profileOurs(device);

const m = (xs: number[]) => median(xs);
const f = (x: number, d = 2) => x.toFixed(d);
const all = (xs: number[], d = 1) => xs.map((x) => x.toFixed(d)).join(", ");
const adapter = `${device.info.vendor}|${device.info.architecture}|${device.info.description}`;
console.log(
  `\nbench/native_anchor: deno ${Deno.version.deno} on ${adapter}, tiling ${JSON.stringify(device.matmul)}; ` +
    `numpy ${info!.numpy}, torch ${info!.torch} (${info!.torchThreads} threads), BLAS mapped: ${
      info!.blas.join(", ") || "none found"
    }; ` +
    `${rounds} rounds interleaved, ${((performance.now() - t0) / 1000).toFixed(0)} s, load ${f(load0[0])} → ${
      f(Deno.loadavg()[0])
    }`,
);
console.log(
  "\n| measure | ours (median) | native (median) | ours / native | runs ours / native |\n|---|---|---|---|---|",
);
for (const [k, [o, nat]] of rows) {
  const d = k.includes("GFLOP") ? 2 : 0;
  console.log(`| ${k} | ${f(m(o), d)} | ${f(m(nat), d)} | ${f(m(o) / m(nat))}× | ${all(o, d)} / ${all(nat, d)} |`);
}
console.log("PyTorch: the better of every core and one thread, per measure.");
console.log("\n" + profileLines(prof).join("\n"));
const tp = info!.profile!;
console.log(`\nPyTorch's MLP step, 1 thread (torch.profiler, self CPU ms per step; Σ ${f(tp.stepSelfMs, 3)} ms):`);
console.log("\n| op | calls per step | self CPU ms |\n|---|---|---|");
for (const o of tp.ops) console.log(`| ${o.op} | ${o.calls} | ${f(o.ms, 3)} |`);
device.destroy();
