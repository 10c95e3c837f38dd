/**
 * The shared workload definitions, copied from the peers' harness (workloads.ts) so
 * every contender (ours, TF.js webgpu, jax-js) sees identical seeded numbers:
 *
 * - W1: C = A·B, f32, n×n, A ~ U[-0.5, 0.5) seed 1, B seed 2; one run = dispatch + read all of C.
 * - W2: MLP 784-256-10 (ReLU), mean softmax cross-entropy on int labels, Adam 1e-3 (β 0.9/0.999,
 *   ε 1e-8, bias-corrected), batch 64, one fixed batch; 5 warm-up steps then 50 timed.
 *
 * Differences from the peers' file: n = 2048 was added to W1 (the brief asks for it).
 */
export const W1 = {
  sizes: [256, 512, 1024, 2048],
  warmup: 2,
  runs: 7, // median reported
  range: [-0.5, 0.5] as const,
  seedA: 1,
  seedB: 2,
  /** Entries of C compared with a float64 dot product after the timed runs. */
  checkSamples: 64,
  /**
   * |got − want| ≤ tol · Σ_k |a_ik·b_kj|: the project's matmul tolerance (1e-3). f32
   * accumulation over k terms stays below k·2⁻²⁴ (1.2e-4 at k = 2048) even in the worst case.
   */
  checkTol: 1e-3,
};
export const W2 = {
  batch: 64,
  inDim: 784,
  hidden: 256,
  classes: 10,
  lr: 1e-3,
  beta1: 0.9,
  beta2: 0.999,
  eps: 1e-8,
  warmup: 5,
  steps: 50,
  seedX: 3,
  seedY: 4,
  seedW1: 5,
  seedW2: 6,
  /** Float64 reference (bench/reference.ts): loss at step 1 and at step 55. */
  refFirst: 2.6848,
  refLast: 0.0124,
  /** Allowed |loss − reference| at step 1 and at step 55 (the peers' summarize.ts tolerances). */
  tolFirst: 1e-3,
  tolLast: 2e-3,
};

export type W2Mode = "loss-at-end" | "loss-every-step";
export const W2_MODES: readonly W2Mode[] = ["loss-at-end", "loss-every-step"];

/** FLOPs of C = A·B (n×n): 2n³. */
export const matmulFlops = (n: number) => 2 * n ** 3;
export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
export const round = (x: number, d = 3) => +x.toFixed(d);
/** Glorot-uniform limit for a [fanIn, fanOut] weight. */
export const glorot = (fanIn: number, fanOut: number) => Math.sqrt(6 / (fanIn + fanOut));

export interface W1Result {
  n: number;
  medianMs: number;
  gflops: number;
  runsMs: number[];
  /** Worst |got − want| / Σ|a·b| over the sampled entries of C, and whether it is within W1.checkTol. */
  maxErr: number;
  ok: boolean;
}
export interface W2Result {
  mode: W2Mode;
  steps: number;
  batch: number;
  ms: number;
  stepsPerS: number;
  samplesPerS: number;
  /** Loss of warm-up step 1 and of the last timed step (step 55). */
  firstLoss: number;
  lastLoss: number;
  /** Both losses within tolerance of the float64 reference. */
  ok: boolean;
  /** Warm-up step 1 from its call to its loss read back: the first one compiles (bench/first_step.ts). */
  firstStepMs: number;
}

/** mulberry32 PRNG: uniform floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
export function uniformF32(seed: number, count: number, lo: number, hi: number): Float32Array<ArrayBuffer> {
  const r = mulberry32(seed), out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = lo + (hi - lo) * r();
  return out;
}
export function labelsI32(seed: number, count: number, k: number): Int32Array<ArrayBuffer> {
  const r = mulberry32(seed), out = new Int32Array(count);
  for (let i = 0; i < count; i++) out[i] = Math.floor(r() * k);
  return out;
}
/** W1 operands of size n. */
export function w1Data(n: number): { a: Float32Array<ArrayBuffer>; b: Float32Array<ArrayBuffer> } {
  return {
    a: uniformF32(W1.seedA, n * n, W1.range[0], W1.range[1]),
    b: uniformF32(W1.seedB, n * n, W1.range[0], W1.range[1]),
  };
}
/** W2 initial state: x [B,784] ~ U[0,1), y [B] ~ U{0..9}, w1 [784,256], w2 [256,10] Glorot-uniform (in×out), biases 0. */
export function w2Data() {
  const { batch: B, inDim: D, hidden: H, classes: C } = W2;
  const g1 = glorot(D, H), g2 = glorot(H, C);
  return {
    x: uniformF32(W2.seedX, B * D, 0, 1),
    y: labelsI32(W2.seedY, B, C),
    w1: uniformF32(W2.seedW1, D * H, -g1, g1),
    w2: uniformF32(W2.seedW2, H * C, -g2, g2),
  };
}

/**
 * Check C = A·B (n×n, row-major) on `W1.checkSamples` seeded entries against a float64 dot
 * product; the error is relative to Σ|a_ik·b_kj| (cancellation-proof).
 */
export function checkMatmul(n: number, a: Float32Array, b: Float32Array, c: ArrayLike<number>): { maxErr: number; ok: boolean } {
  const r = mulberry32(1000 + n);
  let maxErr = 0;
  for (let s = 0; s < W1.checkSamples; s++) {
    const i = Math.floor(r() * n), j = Math.floor(r() * n);
    let want = 0, mag = 0;
    for (let k = 0; k < n; k++) {
      const p = a[i * n + k] * b[k * n + j];
      want += p;
      mag += Math.abs(p);
    }
    const err = Math.abs(c[i * n + j] - want) / mag;
    if (!(err <= maxErr)) maxErr = Number.isNaN(err) ? NaN : err;
    if (Number.isNaN(maxErr)) break;
  }
  return { maxErr, ok: maxErr <= W1.checkTol };
}

/** Both W2 losses within tolerance of the float64 reference. */
export const lossOk = (first: number, last: number) =>
  Math.abs(first - W2.refFirst) <= W2.tolFirst && Math.abs(last - W2.refLast) <= W2.tolLast;

/** The W2 result record from a timed run. */
export function w2Result(mode: W2Mode, ms: number, firstLoss: number, lastLoss: number, firstStepMs: number): W2Result {
  return {
    mode,
    steps: W2.steps,
    batch: W2.batch,
    ms: round(ms, 1),
    stepsPerS: round(W2.steps / (ms / 1e3), 2),
    samplesPerS: round((W2.steps * W2.batch) / (ms / 1e3), 1),
    firstLoss: round(firstLoss, 4),
    lastLoss: round(lastLoss, 4),
    ok: lossOk(firstLoss, lastLoss),
    firstStepMs: round(firstStepMs, 1),
  };
}

/** Time `once` W1.warmup + W1.runs times and summarize (the median of the timed runs). */
export async function timeMatmul(n: number, once: () => Promise<number>): Promise<{ medianMs: number; gflops: number; runsMs: number[] }> {
  for (let i = 0; i < W1.warmup; i++) await once();
  const xs: number[] = [];
  for (let i = 0; i < W1.runs; i++) xs.push(await once());
  const ms = median(xs);
  return { medianMs: round(ms, 2), gflops: round(matmulFlops(n) / ms / 1e6), runsMs: xs.map((x) => round(x, 1)) };
}
