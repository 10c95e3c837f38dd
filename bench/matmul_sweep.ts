/**
 * Matmul tiling sweep: GFLOP/s of `matmul` for several register/shared tilings on n×n
 * products (n = 256, 512, 1024) and the MNIST-MLP shapes, to choose MATMUL_CPU in
 * src/gpu/tuning.ts. One run = dispatch + `await device.sync()`; median of 7 runs after 2
 * warm-ups (the first warm-up compiles the pipeline; its time is printed as "first ms").
 * n×n also prints the peers' W1 figure, which includes reading C back (`toArray`).
 *
 *   XDG_RUNTIME_DIR=/tmp/xdg npx deno run -A bench/matmul_sweep.ts [--quick]
 *   deno run -A --no-check bench/matmul_sweep.ts --classes [--rounds 5]
 *
 * --classes instead sweeps a tiling per product class (skinny m ≤ 64, the weight gradient
 * Aᵀ·B; tuning.ts `MatmulClass`) on the MLP and LeNet products, kernel time without the
 * submit floor, and prints the MATMUL_CLASS_TILINGS row for this adapter (see sweepClasses).
 *
 * --quick runs only the default tiling. Expect ±10–30% between runs on a shared machine;
 * compare tilings within one run. "GFLOP/CPU-s" divides by the CPU time of this process
 * (every lavapipe thread): on a CPU adapter it measures the kernel's efficiency even when
 * other processes take cores; wall GFLOP/s is at most cores × that.
 *
 * Deno + lavapipe (LLVM 15, 2 shared cores, load average 2–4), GFLOP/s at 256 / 512 / 1024,
 * dispatch + sync (incl. readback) [GFLOP/CPU-s]:
 *   32×32 (MATMUL_CPU)   1.52 (1.66) / 3.03 (3.11) / 3.31 (3.27)   [3.0 / 3.5 / 3.5]
 *   16×32                1.46 (1.53) / 2.21 (2.32) / 2.53 (2.53)   [2.5 / 2.6 / 2.6]
 *   16×16                1.22 (1.43) / 1.99 (1.91) / 1.92 (1.84)   [2.0 / 2.2 / 2.0]
 *   8×8                  0.78 (0.76) / 0.96 (0.91) / 0.96 (0.95)   [1.0 / 1.0 / 1.0]
 *   8×4, wg 8×8          0.55 (0.42) / 0.72 (0.67) / 0.47 (0.45)   [0.7 / 0.7 / 0.7]
 *   shared 4×4 (GPU)     0.27 (0.27) / 0.29 (0.29) / —             [0.3 / 0.3 / —]
 * MLP shapes with 32×32: x·w1ᵀ 64×784×256 1.08, dyᵀ·x 256×64×784 1.26 (GFLOP/CPU-s 3.0, 2.8;
 * a 25 MFLOP op is mostly the ~10 ms submit-and-wait, which a training step pays once).
 * Peers, same machine, incl. readback: jax-js 0.76 / 1.02 / 1.09, TF.js 0.67 / 0.85 / 0.87.
 * Cold compile (MESA_SHADER_CACHE_DISABLE=true) of one 32×32 vec4 pipeline is about 6 s,
 * 16×16 about 1 s; Mesa's disk cache makes later runs fast ("first ms" above is warm).
 */
import process from "node:process";
import { Device } from "../src/gpu/mod.ts";
import { type MatmulClass, MATMUL_CPU, MATMUL_GPU, type MatmulTiling } from "../src/gpu/tuning.ts";
import type { Tensor } from "../src/tensor/tensor.ts";
import { rand } from "../src/tensor/creation.ts";
import { matmul } from "../src/tensor/ops/matmul.ts";

interface Shape {
  name: string;
  /** Operand shapes and transposes; flops = 2·m·k·n. */
  a: number[];
  b: number[];
  transA?: boolean;
  transB?: boolean;
  flops: number;
  /** Also time with the readback the peers' W1 includes. */
  readback?: boolean;
}

const square = (n: number): Shape => ({
  name: `${n}×${n}×${n}`,
  a: [n, n],
  b: [n, n],
  flops: 2 * n ** 3,
  readback: true,
});
const SHAPES: Shape[] = [
  square(256),
  square(512),
  square(1024),
  // MLP 784-256-10, batch 64, nn.Linear layout (w [out, in]).
  { name: "mlp fwd x·w1ᵀ 64×784×256", a: [64, 784], b: [256, 784], transB: true, flops: 2 * 64 * 784 * 256 },
  { name: "mlp dW1 dyᵀ·x 256×64×784", a: [64, 256], b: [64, 784], transA: true, flops: 2 * 256 * 64 * 784 },
  { name: "[64,784]ᵀ·[64,256] 784×64×256", a: [64, 784], b: [64, 256], transA: true, flops: 2 * 784 * 64 * 256 },
  { name: "mlp dX2 dy·w2 64×10×256", a: [64, 10], b: [10, 256], flops: 2 * 64 * 10 * 256 },
];

const TILINGS: Record<string, MatmulTiling> = {
  "32×32 (MATMUL_CPU)": MATMUL_CPU,
  "16×32": { tm: 16, tn: 32, wgx: 8, wgy: 1, bk: 0 },
  "16×16": { tm: 16, tn: 16, wgx: 8, wgy: 1, bk: 0 },
  "8×8": { tm: 8, tn: 8, wgx: 8, wgy: 1, bk: 0 },
  "8×4 wg 8×8": { tm: 8, tn: 4, wgx: 8, wgy: 8, bk: 0 },
  "shared 4×4 (MATMUL_GPU)": MATMUL_GPU,
};

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1];

/** GFLOP/s of the median run, GFLOP per CPU-second of this process (all threads: robust to other load), first run's ms. */
async function timeShape(
  device: Device,
  s: Shape,
  readback: boolean,
): Promise<{ gflops: number; perCpu: number; firstMs: number }> {
  const a = rand(s.a, { device, lo: -0.5, hi: 0.5, seed: 1 }).keep();
  const b = rand(s.b, { device, lo: -0.5, hi: 0.5, seed: 2 }).keep();
  await device.sync();
  const cpu: number[] = [];
  const once = async () => {
    const u0 = process.cpuUsage();
    const t0 = performance.now();
    const c = matmul(a, b, { transA: s.transA, transB: s.transB });
    if (readback) await c.toArray();
    else await device.sync();
    const ms = performance.now() - t0;
    const u = process.cpuUsage(u0);
    cpu.push((u.user + u.system) / 1000);
    device.endStep();
    return ms;
  };
  const firstMs = await once();
  await once();
  cpu.length = 0;
  const runs: number[] = [];
  for (let i = 0; i < 7; i++) runs.push(await once());
  a.dispose();
  b.dispose();
  return { gflops: s.flops / median(runs) / 1e6, perCpu: s.flops / median(cpu) / 1e6, firstMs };
}

// ---- --classes: a tiling per product class (tuning.ts MatmulClass) -------------------------

/** The products of the MLP (784-256-10) and LeNet (256-120-84-10) steps, batch 64, by class. */
const CLASS_SHAPES: Record<MatmulClass, Shape[]> = {
  skinny: [
    { name: "mlp fwd x·w1ᵀ 64×784×256", a: [64, 784], b: [256, 784], transB: true, flops: 2 * 64 * 784 * 256 },
    { name: "mlp dX2 dy·w2 64×10×256", a: [64, 10], b: [10, 256], flops: 2 * 64 * 10 * 256 },
    { name: "lenet fwd 64×256×120", a: [64, 256], b: [120, 256], transB: true, flops: 2 * 64 * 256 * 120 },
    { name: "lenet dX 64×120×256", a: [64, 120], b: [120, 256], flops: 2 * 64 * 120 * 256 },
  ],
  wgrad: [
    { name: "mlp dW1 dyᵀ·x 256×64×784", a: [64, 256], b: [64, 784], transA: true, flops: 2 * 256 * 64 * 784 },
    { name: "mlp dW2 10×64×256", a: [64, 10], b: [64, 256], transA: true, flops: 2 * 10 * 64 * 256 },
    { name: "lenet dW 120×64×256", a: [64, 120], b: [64, 256], transA: true, flops: 2 * 120 * 64 * 256 },
  ],
};

/** Register tilings worth trying on CPU adapters, shared-memory ones on GPUs. */
const CLASS_CANDIDATES: Record<"cpu" | "gpu", Record<string, MatmulTiling>> = {
  cpu: {
    "32×32 wg 8×1": MATMUL_CPU,
    "32×16 wg 8×1": { tm: 32, tn: 16, wgx: 8, wgy: 1, bk: 0 },
    "16×32 wg 8×1": { tm: 16, tn: 32, wgx: 8, wgy: 1, bk: 0 },
    "32×32 wg 16×1": { tm: 32, tn: 32, wgx: 16, wgy: 1, bk: 0 },
    "16×16 wg 8×1": { tm: 16, tn: 16, wgx: 8, wgy: 1, bk: 0 },
  },
  gpu: {
    "shared 4×4 wg 16×16 bk 16": MATMUL_GPU,
    "shared 4×4 wg 16×4 bk 16": { tm: 4, tn: 4, wgx: 16, wgy: 4, bk: 16 },
    "shared 4×4 wg 8×8 bk 32": { tm: 4, tn: 4, wgx: 8, wgy: 8, bk: 32 },
    "shared 8×8 wg 16×16 bk 8": { tm: 8, tn: 8, wgx: 16, wgy: 16, bk: 8 },
    "shared 4×8 wg 16×8 bk 16": { tm: 4, tn: 8, wgx: 16, wgy: 8, bk: 16 },
    "register 8×8 wg 8×8": { tm: 8, tn: 8, wgx: 8, wgy: 8, bk: 0 },
  },
};

/**
 * Kernel ms of one product, without the submit floor: `reps` dispatches in one submit minus
 * one dispatch in one submit, over reps − 1 (both awaited with `device.sync()`); in wall ms
 * and in CPU ms of this process (every lavapipe thread: on a CPU adapter the kernel's cost
 * even while other processes take the cores, so the ranking survives a loaded machine).
 */
async function kernelMs(device: Device, s: Shape, reps: number, a: Tensor, b: Tensor): Promise<{ wall: number; cpu: number }> {
  const run = async (k: number) => {
    const u0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < k; i++) matmul(a, b, { transA: s.transA, transB: s.transB });
    await device.sync();
    device.endStep();
    const u = process.cpuUsage(u0);
    return { wall: performance.now() - t0, cpu: (u.user + u.system) / 1000 };
  };
  const one = await run(1);
  const many = await run(reps);
  return { wall: (many.wall - one.wall) / (reps - 1), cpu: (many.cpu - one.cpu) / (reps - 1) };
}

/**
 * Every candidate on every class shape, candidates interleaved within each round (so load
 * moves them alike); per class the candidate with the least median Σ kernel ms over the
 * class's shapes wins (CPU ms on CPU adapters, wall ms on GPUs). Prints the table and the MATMUL_CLASS_TILINGS row for this adapter.
 */
async function sweepClasses(rounds: number): Promise<void> {
  const probe = await Device.request({ label: "sweep probe" });
  const kind = probe.adapterKind;
  probe.destroy();
  const cands = CLASS_CANDIDATES[kind === "gpu" ? "gpu" : "cpu"];
  const reps = kind === "gpu" ? 50 : 16;
  const devices = new Map<string, Device>();
  for (const [name, t] of Object.entries(cands)) devices.set(name, await Device.request({ label: `sweep ${name}`, matmul: t }));
  const shapes = Object.entries(CLASS_SHAPES).flatMap(([cls, ss]) => ss.map((s) => ({ cls: cls as MatmulClass, s })));
  const ms = new Map<string, number[]>(); // `${candidate}|${shape}` → per-round kernel ms (the ranking metric)
  const wall = new Map<string, number[]>();
  // CPU adapters rank by CPU ms (robust to other load); GPUs by wall ms.
  const metric = kind === "gpu" ? "wall" : "cpu";
  const operands = new Map<string, [Tensor, Tensor]>();
  for (const [name, device] of devices) {
    for (const { s } of shapes) {
      const a = rand(s.a, { device, lo: -0.5, hi: 0.5, seed: 1 }).keep(), b = rand(s.b, { device, lo: -0.5, hi: 0.5, seed: 2 }).keep();
      operands.set(`${name}|${s.name}`, [a, b]);
      const t0 = performance.now();
      await kernelMs(device, s, 2, a, b); // compiles the variant
      console.log(`compiled ${name} | ${s.name}: ${(performance.now() - t0).toFixed(0)} ms`);
    }
  }
  for (let r = 0; r < rounds; r++) {
    for (const { s } of shapes) {
      for (const [name, device] of devices) {
        const [a, b] = operands.get(`${name}|${s.name}`)!;
        const key = `${name}|${s.name}`;
        const t = await kernelMs(device, s, reps, a, b);
        ms.set(key, [...(ms.get(key) ?? []), t[metric]]);
        wall.set(key, [...(wall.get(key) ?? []), t.wall]);
      }
    }
    console.log(`round ${r + 1}/${rounds} done, load ${Deno.loadavg()[0].toFixed(1)}`);
  }
  const rows: string[][] = [];
  const winners: Partial<Record<MatmulClass, MatmulTiling>> = {};
  const defaultName = Object.keys(cands)[0];
  for (const cls of Object.keys(CLASS_SHAPES) as MatmulClass[]) {
    const total = (name: string) => CLASS_SHAPES[cls].reduce((acc, s) => acc + median(ms.get(`${name}|${s.name}`)!), 0);
    for (const s of CLASS_SHAPES[cls]) {
      for (const name of devices.keys()) {
        const m = median(ms.get(`${name}|${s.name}`)!), w = median(wall.get(`${name}|${s.name}`)!);
        rows.push([cls, s.name, name, m.toFixed(3), (s.flops / m / 1e6).toFixed(1), w.toFixed(3)]);
      }
    }
    const best = [...devices.keys()].reduce((x, y) => total(y) < total(x) ? y : x);
    for (const name of devices.keys()) rows.push([cls, "Σ class", name, total(name).toFixed(3), name === best ? "← best" : "", ""]);
    if (best !== defaultName) winners[cls] = cands[best];
  }
  for (const device of devices.values()) device.destroy();
  const header = ["class", "shape (m×k×n)", "tiling", `kernel ${metric} ms (median)`, `GFLOP/${metric === "cpu" ? "CPU-" : ""}s`, "wall ms"];
  const width = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(width[i])).join(" | ")} |`;
  console.log(`\nadapter kind ${kind}, ${rounds} rounds interleaved, ${reps} dispatches per submit, load ${Deno.loadavg()[0].toFixed(1)}`);
  console.log(`${line(header)}\n|${width.map((w) => "-".repeat(w + 2)).join("|")}|\n${rows.map(line).join("\n")}`);
  console.log(`\nMATMUL_CLASS_TILINGS.${kind} = ${JSON.stringify(winners)}  (src/gpu/tuning.ts; {} = the default tiling won)`);
}

if (Deno.args.includes("--classes")) {
  await sweepClasses(Number(Deno.args[Deno.args.indexOf("--rounds") + 1]) || 5);
  Deno.exit(0);
}

const quick = Deno.args.includes("--quick");
const names = quick ? [Object.keys(TILINGS)[0]] : Object.keys(TILINGS);
const rows: string[][] = [];
for (const name of names) {
  const device = await Device.request({ label: `sweep ${name}`, matmul: TILINGS[name] });
  for (const s of SHAPES) {
    // The shared-memory kernel is for hardware GPUs; on a CPU adapter only the small shapes are worth the wait.
    if (TILINGS[name].bk > 0 && device.isFallback && s.flops > 2 * 512 ** 3) continue;
    const r = await timeShape(device, s, false);
    const rb = s.readback ? (await timeShape(device, s, true)).gflops.toFixed(2) : "";
    rows.push([name, s.name, r.gflops.toFixed(2), rb, r.perCpu.toFixed(2), r.firstMs.toFixed(0)]);
    console.log(rows[rows.length - 1].join(" | "));
  }
  device.destroy();
}

const header = ["tiling", "shape (m×k×n)", "GFLOP/s", "incl. readback", "GFLOP/CPU-s", "first ms"];
const width = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(width[i])).join(" | ")} |`;
console.log(`\n${line(header)}\n|${width.map((w) => "-".repeat(w + 2)).join("|")}|\n${rows.map(line).join("\n")}`);

