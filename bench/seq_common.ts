/**
 * What every model of the sequence-model bench shares (bench/seq_contenders.ts: char-rnn and
 * gpt-nano; bench/seq_bilstm.ts; bench/seq_encoder.ts): the names and shapes (re-exported
 * from bench/seq_shapes.ts), the seeded batch, the step timer, the peers' backends, our weights read back for a peer to load, and
 * jax-js' Adam update. No Deno or DOM API: the same code runs in Deno and in Chromium.
 */
import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-webgpu";
import { defaultDevice, init, nn, numpy as np } from "@jax-js/jax";
import type { Module } from "../src/index.ts";
import { type SeqMode, type SeqShape, type StepTiming, V, WARMUP } from "./seq_shapes.ts";

export * from "./seq_shapes.ts";

/** A seeded uniform [0, 1) stream (mulberry32). */
export function mulberry(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Seeded ids in [0, V) for [B, T]: repeating short patterns; y is x shifted by one. */
export function batchIds(B: number, T: number): { x: Int32Array<ArrayBuffer>; y: Int32Array<ArrayBuffer> } {
  const rand = mulberry(7);
  const x = new Int32Array(B * T), y = new Int32Array(B * T);
  for (let b = 0; b < B; b++) {
    const period = 3 + Math.floor(rand() * 5), base = Math.floor(rand() * V);
    for (let t = 0; t < T; t++) {
      x[b * T + t] = (base + (t % period)) % V;
      y[b * T + t] = (base + ((t + 1) % period)) % V;
    }
  }
  return { x, y };
}

/** Time WARMUP + steps of `step` (returns something whose loss `read` resolves), reading the loss as `mode` says. */
export async function timeSteps<L>(
  s: SeqShape,
  mode: SeqMode,
  step: () => L,
  read: (l: L) => Promise<number>,
  drop: (l: L) => void,
  endStep: () => void = () => {},
): Promise<StepTiming> {
  let firstLoss = NaN;
  for (let i = 0; i < WARMUP; i++) {
    const v = await read(step());
    endStep();
    if (i === 0) firstLoss = v;
  }
  let lastLoss = NaN;
  const t0 = performance.now();
  for (let i = 0; i < s.steps; i++) {
    const l = step();
    if (mode === "loss-every-step" || i === s.steps - 1) lastLoss = await read(l);
    else drop(l);
    endStep();
  }
  return { msPerStep: (performance.now() - t0) / s.steps, firstLoss, lastLoss };
}

/** `rows × cols` row-major → its transpose (`cols × rows`). */
export function transpose(a: ArrayLike<number>, rows: number, cols: number): Float32Array<ArrayBuffer> {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = a[r * cols + c];
  return out;
}

/** A weight read back from the GPU: its shape and values. */
export interface HostWeight {
  shape: number[];
  values: Float32Array<ArrayBuffer>;
}

/**
 * Every parameter of `model` read back by name (and its GPU copy freed: the model is built
 * only to be read), with `get(name)` and `t(name)` (a [r, c] weight transposed to [c, r], the
 * x @ W layout of the peers) that name the missing parameter and the ones there are.
 */
export async function hostWeights(
  model: Module,
  who: string,
): Promise<{ get(name: string): HostWeight; t(name: string): HostWeight }> {
  const p = new Map<string, HostWeight>();
  for (const [name, param] of model.namedParameters()) {
    p.set(name, { shape: [...param.data.shape], values: Float32Array.from(await param.data.toArray()) });
    param.data.dispose();
  }
  const get = (name: string) => {
    const w = p.get(name);
    if (!w) throw new Error(`${who}: our model has no parameter ${name} (has ${[...p.keys()].join(", ")})`);
    return w;
  };
  const t = (name: string) => {
    const { shape: [r, c], values } = get(name);
    return { shape: [c, r], values: transpose(values, r, c) };
  };
  return { get, t };
}

/**
 * One of our LSTM directions (`suffix`: `_l{k}` or `_l{k}_reverse` under `prefix`) in Keras'
 * layout: kernel [in, 4H] (W_ihᵀ), recurrent kernel [H, 4H] (W_hhᵀ), bias [4H] (b_ih + b_hh;
 * Keras has one bias). PyTorch's gate order i, f, g, o is Keras' i, f, c, o.
 */
export function kerasLstm(
  w: { get(name: string): HostWeight; t(name: string): HostWeight },
  prefix: string,
  suffix: string,
): HostWeight[] {
  const bih = w.get(`${prefix}bias_ih${suffix}`).values, bhh = w.get(`${prefix}bias_hh${suffix}`).values;
  return [w.t(`${prefix}weight_ih${suffix}`), w.t(`${prefix}weight_hh${suffix}`), {
    shape: [bih.length],
    values: bih.map((v, i) => v + bhh[i]),
  }];
}

// ---------------------------------------------------------------- the peers' backends

/** TF.js on its webgpu backend. */
export async function tfBackend(): Promise<void> {
  const ok = await tf.setBackend("webgpu");
  await tf.ready();
  if (!ok || tf.getBackend() !== "webgpu") {
    throw new Error(`tfjs: the webgpu backend is not available (backend ${tf.getBackend()})`);
  }
}

/** Time `opt.minimize(lossFn)` over `vars` as a TF.js run (each loss read, then disposed). */
export async function tfTimeSteps(
  s: SeqShape,
  mode: SeqMode,
  opt: tf.Optimizer,
  lossFn: () => tf.Scalar,
  vars: tf.Variable[],
): Promise<StepTiming> {
  return await timeSteps(s, mode, () => opt.minimize(lossFn, true, vars)!, async (l) => {
    const v = (await l.data())[0];
    l.dispose();
    return v;
  }, (l) => l.dispose());
}

/**
 * The tf-op pieces of a transformer block at batch B, length T, width d, H heads: LayerNorm
 * over the last axis (eps 1e-5), a dense layer on [B, T, in] (x @ W + b), and causal
 * multi-head self-attention of a fused q|k|v projection [B, T, 3d] (an additive −1e9 mask
 * above the diagonal, softmax, [B, T, d] out). `dispose` frees the mask.
 */
export function tfBlockOps(B: number, T: number, d: number, H: number): {
  ln(h: tf.Tensor, g: tf.Tensor, b: tf.Tensor): tf.Tensor;
  dense(h: tf.Tensor, w: tf.Tensor, b: tf.Tensor): tf.Tensor;
  causalAttention(qkv: tf.Tensor): tf.Tensor;
  dispose(): void;
} {
  const hd = d / H;
  const maskData = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) maskData[i * T + j] = -1e9;
  const mask = tf.tensor2d(maskData, [T, T]);
  const heads = (h: tf.Tensor) => h.reshape([B, T, H, hd]).transpose([0, 2, 1, 3]);
  return {
    ln(h, g, b) {
      const { mean, variance } = tf.moments(h, -1, true);
      return h.sub(mean).mul(tf.rsqrt(variance.add(1e-5))).mul(g).add(b);
    },
    dense: (h, w, b) => tf.matMul(h.reshape([-1, w.shape[0]!]), w).add(b).reshape([B, T, w.shape[1]!]),
    causalAttention(qkv) {
      const [q, k, v] = tf.split(qkv, 3, -1);
      const att = tf.softmax(tf.matMul(heads(q), heads(k), false, true).mul(1 / Math.sqrt(hd)).add(mask));
      return tf.matMul(att, heads(v)).transpose([0, 2, 1, 3]).reshape([B, T, d]);
    },
    dispose: () => mask.dispose(),
  };
}

/** The tf ops of {@link tfBlockOps}. */
export type TfBlockOps = ReturnType<typeof tfBlockOps>;

/**
 * Time a transformer written in tf ops: variables from `init` (x @ W layout), `logitsOf(p,
 * ops, ids)` → logits [B, T, V] with the ids [B, T] i32, next-character softmax cross entropy,
 * `tf.train.adam(lr, 0.9, 0.999, 1e-8)` minimize.
 */
export async function tfTransformerSteps(
  s: SeqShape,
  mode: SeqMode,
  init: Map<string, HostWeight>,
  lr: number,
  size: { d: number; heads: number },
  logitsOf: (p: Record<string, tf.Variable>, ops: TfBlockOps, ids: tf.Tensor) => tf.Tensor,
): Promise<StepTiming> {
  const B = s.batch, T = s.seq;
  const { x, y } = batchIds(B, T);
  const p: Record<string, tf.Variable> = {};
  for (const [name, { shape, values }] of init) {
    p[name] = tf.variable(tf.tensor(values, shape), true, `${s.model}.${name}.${Math.random()}`);
  }
  const ids = tf.tensor2d(x, [B, T], "int32");
  const onehot = tf.oneHot(tf.tensor1d(y, "int32"), V).toFloat();
  const ops = tfBlockOps(B, T, size.d, size.heads);
  const lossFn = () => tf.losses.softmaxCrossEntropy(onehot, logitsOf(p, ops, ids).reshape([B * T, V])) as tf.Scalar;
  const opt = tf.train.adam(lr, 0.9, 0.999, 1e-8);
  const vars = Object.values(p);
  try {
    return await tfTimeSteps(s, mode, opt, lossFn, vars);
  } finally {
    opt.dispose();
    ops.dispose();
    tf.dispose([ids, onehot, ...vars]);
  }
}

let jaxReady: Promise<void> | undefined;
/** jax-js on its webgpu backend (initialised once). */
export function jaxBackend(): Promise<void> {
  return jaxReady ??= (async () => {
    const devices = await init("webgpu");
    if (!devices.includes("webgpu")) {
      throw new Error(`jax-js: webgpu backend unavailable, init() returned ${JSON.stringify(devices)}`);
    }
    defaultDevice("webgpu");
  })();
}

/** jax-js parameters (or moments, or gradients) by name. */
export type JP = Record<string, np.Array>;

/** LayerNorm over the last axis in jax-js (eps 1e-5, PyTorch's); consumes its arguments. */
export function jaxLn(h: np.Array, g: np.Array, b: np.Array): np.Array {
  return nn.standardize(h, -1, { epsilon: 1e-5 }).mul(g).add(b);
}

/** Mean cross entropy of logits [B, T, V] against one-hot targets [B, T, V] in jax-js; consumes both. */
export function jaxCe(logits: np.Array, onehot: np.Array): np.Array {
  const [B, T] = logits.shape;
  return np.sum(nn.logSoftmax(logits, -1).mul(onehot)).mul(-1 / (B * T));
}

/** Adam's constants: PyTorch's defaults but the learning rate. */
export interface AdamConfig {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
}

/**
 * One bias-corrected Adam update in jax-js (PyTorch's: eps added to √v̂), inside a `jit`: takes
 * (consumes) the parameters p, moments m and v, step count t and gradients g; returns the new
 * p, m, v and t.
 */
export function jaxAdam(c: AdamConfig, p: JP, m: JP, v: JP, t: np.Array, g: JP): [JP, JP, JP, np.Array] {
  const t1 = t.add(1);
  const bc1 = np.exp(t1.ref.mul(Math.log(c.beta1))).neg().add(1);
  const bc2 = np.exp(t1.ref.mul(Math.log(c.beta2))).neg().add(1);
  const np_: JP = {}, nm: JP = {}, nv: JP = {};
  for (const k of Object.keys(p)) {
    const gk = g[k];
    const mk = m[k].mul(c.beta1).add(gk.ref.mul(1 - c.beta1));
    const vk = v[k].mul(c.beta2).add(gk.ref.mul(gk).mul(1 - c.beta2));
    np_[k] = p[k].sub(mk.ref.div(bc1.ref).mul(c.lr).div(np.sqrt(vk.ref.div(bc2.ref)).add(c.eps)));
    nm[k] = mk;
    nv[k] = vk;
  }
  bc1.dispose();
  bc2.dispose();
  return [np_, nm, nv, t1];
}

/**
 * Time a jitted jax-js step `(p, m, v, t, ids, onehot) → [p, m, v, t, loss]` from the weights
 * `init` (x @ W layout), Adam moments at zero; ids and targets one-hot [B, T, V] (the
 * embedding as one-hot ids @ table: `np.take`'s gradient is a scatter with f32 atomics, whose
 * shader lavapipe refuses to compile).
 */
export async function jaxTimeSteps(
  s: SeqShape,
  mode: SeqMode,
  init: Map<string, HostWeight>,
  jitted: (p: JP, m: JP, v: JP, t: np.Array, ids: np.Array, onehot: np.Array) => [JP, JP, JP, np.Array, np.Array],
): Promise<StepTiming> {
  const B = s.batch, T = s.seq;
  const { x, y } = batchIds(B, T);
  let p: JP = {}, m: JP = {}, v: JP = {};
  for (const [name, { shape, values }] of init) {
    p[name] = np.array(values).reshape(shape);
    m[name] = np.zeros(shape);
    v[name] = np.zeros(shape);
  }
  const ids = nn.oneHot(np.array(x).reshape([B, T]), V);
  const onehot = nn.oneHot(np.array(y).reshape([B, T]), V);
  await ids.blockUntilReady();
  await onehot.blockUntilReady();
  let t = np.zeros([]);
  const step = () => {
    const out = jitted(p, m, v, t, ids.ref, onehot.ref);
    [p, m, v, t] = out;
    return out[4];
  };
  try {
    return await timeSteps(s, mode, step, async (l) => (await l.data())[0], (l) => l.dispose());
  } finally {
    for (const tr of [p, m, v]) for (const a of Object.values(tr)) a.dispose();
    t.dispose();
    ids.dispose();
    onehot.dispose();
  }
}
