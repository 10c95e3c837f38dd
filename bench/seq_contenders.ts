/**
 * W3 (char-rnn) and W4 (gpt-nano) training steps, ours against TensorFlow.js 4.22 (webgpu
 * backend) and, for gpt-nano, jax-js 0.1.25 written with its array API (`numpy`, `nn`,
 * `valueAndGrad`, `jit`). No Deno or DOM API here: bench/seq_peers.ts runs these in Deno,
 * bench/seq_page.ts in Chromium (bench/seq.spec.ts), the same code on the same adapter.
 *
 * char-rnn: Embedding(85, 128) → LSTM(128, 256) → LSTM(256, 256) → Dropout(0.2) → Linear(256, 85),
 * RMSprop 2e-3. Ours vs `tf.layers.lstm` (recurrent activation sigmoid, as
 * PyTorch's), both from our weights seeded with CHAR_RNN_SEED (TF.js loads them: Keras'
 * orthogonal init took minutes in Chromium), so their first losses agree up to dropout.
 *
 * gpt-nano: ddp-bench's model (src/zoo/gpt_nano.ts): token + learned position embedding,
 * 4 pre-norm blocks (LayerNorm, 4-head causal self-attention d = 128, LayerNorm, 128-512-128
 * feed-forward with exact GELU), final LayerNorm, linear head to 85; Adam 3e-4 (β 0.9/0.999,
 * eps 1e-8). Differences from the recipe, the same for every contender: dropout 0 (jax-js
 * would need a PRNG key threaded through the step; a dropout mask is not what is compared),
 * a constant learning rate (the recipe's warmup + cosine is a host-side scalar per step), and
 * the position table has T rows (T = the benchmark's sequence length, 128 at spec scale).
 *   - ours: `GptNano` (MultiheadAttention with the fused SDPA kernel, shaders/attention.wgsl).
 *   - jax-js: the same graph with `nn.standardize`, `np.matmul`,
 *     `nn.dotProductAttention(…, { isCausal: true })`, `nn.gelu(…, { approximate: false })`,
 *     `nn.logSoftmax`; the embedding is one-hot ids @ table (`np.take`'s gradient is a scatter
 *     with f32 atomics, which lavapipe does not compile); the whole step (forward, `valueAndGrad`, Adam) is one `jit` function,
 *     as bench/peers/jax.ts does for W2.
 *   - TF.js: the same graph with tf ops (`tf.gather`, `tf.moments`, `tf.matMul`, an additive
 *     causal mask and `tf.softmax`, GELU as x·Φ(x) with `tf.erf`), `tf.train.adam` minimize.
 *     (tfjs-layers 4.22 has no MultiHeadAttention layer.)
 * Weights: ours its PyTorch-default init; TF.js and jax-js the same seeded N(0, 0.02) weights,
 * zero biases, LayerNorm 1/0. Each contender's loss must fall over the steps.
 *
 * Batch: B sequences of T characters, seeded repeating patterns (something to learn in a few
 * steps); targets are the inputs shifted by one. One step = forward, backward, optimizer.
 */
import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-webgpu";
import { defaultDevice, init, jit, nn, numpy as np, tree, valueAndGrad } from "@jax-js/jax";
import { Adam, type Device, fromArray, manualSeed, type Module, RMSprop, Variable } from "../src/index.ts";
import { charRnn } from "../src/zoo/mod.ts";
import { GptNano } from "../src/zoo/mod.ts";
import { nextCharLoss } from "../src/zoo/mod.ts";

export const SEQ_MODELS = ["char-rnn", "gpt-nano"] as const;
export type SeqModel = (typeof SEQ_MODELS)[number];
export type SeqContender = "ours" | "tf" | "jax";
export type SeqMode = "loss-at-end" | "loss-every-step";

/** The contenders each model is compared with (tfjs-layers' LSTM for char-rnn; jax-js has no LSTM layer). */
export const CONTENDERS: Record<SeqModel, SeqContender[]> = { "char-rnn": ["ours", "tf"], "gpt-nano": ["ours", "tf", "jax"] };

export interface SeqShape {
  model: SeqModel;
  /** Sequences per batch. */
  batch: number;
  /** Characters per sequence. */
  seq: number;
  /** Timed steps (after WARMUP). */
  steps: number;
}

export const V = 85;
export const WARMUP = 2;
/** gpt-nano's sizes. */
export const GPT = { d: 128, heads: 4, layers: 4, dFF: 512 } as const;

export interface SeqResult {
  model: SeqModel;
  contender: SeqContender;
  mode: SeqMode;
  round: number;
  msPerStep: number;
  firstLoss: number;
  lastLoss: number;
}

function mulberry(seed: number): () => number {
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
async function timeSteps<L>(
  s: SeqShape,
  mode: SeqMode,
  step: () => L,
  read: (l: L) => Promise<number>,
  drop: (l: L) => void,
  endStep: () => void = () => {},
): Promise<{ msPerStep: number; firstLoss: number; lastLoss: number }> {
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

// ---------------------------------------------------------------- ours

/**
 * char-rnn's weights (and ours' dropout masks) come from the global stream seeded with this:
 * ours builds its model after `manualSeed(CHAR_RNN_SEED)`, and TF.js loads the same values
 * ({@link charRnnKerasWeights}), so both start every run from the same weights.
 */
export const CHAR_RNN_SEED = 11;

/**
 * Our model and optimizer for `s` (fresh weights; char-rnn's seeded with CHAR_RNN_SEED). The
 * optimizer is `foreach` (one launch for every parameter), as src/zoo/recipes.ts builds it.
 */
export function oursModel(device: Device, s: SeqShape): { model: Module; opt: Adam | RMSprop } {
  if (s.model === "char-rnn") {
    manualSeed(CHAR_RNN_SEED);
    const model = charRnn(device, V);
    return { model, opt: new RMSprop(model.parameters(), { lr: 2e-3, foreach: true }) };
  }
  const model = new GptNano(V, device, { dModel: GPT.d, heads: GPT.heads, layers: GPT.layers, dFF: GPT.dFF, maxLen: s.seq, dropout: 0 });
  return { model, opt: new Adam(model.parameters(), { lr: 3e-4, foreach: true }) };
}

/** One training step of ours on the fixed batch; returns the loss (not read). */
export function oursStep(device: Device, s: SeqShape, m: { model: Module; opt: Adam | RMSprop }, x: Int32Array<ArrayBuffer>, y: Int32Array<ArrayBuffer>): Variable {
  const ids = fromArray(x, [s.batch, s.seq], { device, dtype: "i32" }), target = fromArray(y, [s.batch, s.seq], { device, dtype: "i32" });
  const loss = nextCharLoss(m.model, [ids, target]);
  loss.backward();
  m.opt.step();
  m.opt.zeroGrad();
  return loss;
}

async function ours(device: Device, s: SeqShape, mode: SeqMode) {
  const { x, y } = batchIds(s.batch, s.seq);
  const m = oursModel(device, s);
  return await timeSteps(s, mode, () => oursStep(device, s, m, x, y), (l) => l.data.item(), () => {}, () => device.endStep());
}

// ---------------------------------------------------------------- shared seeded init (TF.js, jax-js)

interface GptInit {
  /** Name → [shape, values]; weights stored [in, out] (x @ W). */
  params: Map<string, [number[], Float32Array<ArrayBuffer>]>;
}

function gptInit(T: number): GptInit {
  const rand = mulberry(11);
  const normal = (n: number) => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i += 2) {
      const u = Math.max(rand(), 1e-12), v = rand(), r = Math.sqrt(-2 * Math.log(u));
      a[i] = 0.02 * r * Math.cos(2 * Math.PI * v);
      if (i + 1 < n) a[i + 1] = 0.02 * r * Math.sin(2 * Math.PI * v);
    }
    return a;
  };
  const { d, layers, dFF } = GPT;
  const params = new Map<string, [number[], Float32Array<ArrayBuffer>]>();
  const w = (name: string, shape: number[]) => params.set(name, [shape, normal(shape.reduce((a, b) => a * b, 1))]);
  const fill = (name: string, n: number, v: number) => params.set(name, [[n], new Float32Array(n).fill(v)]);
  w("tok", [V, d]);
  w("pos", [T, d]);
  for (let l = 0; l < layers; l++) {
    fill(`${l}.ln1.g`, d, 1), fill(`${l}.ln1.b`, d, 0);
    w(`${l}.in.w`, [d, 3 * d]), fill(`${l}.in.b`, 3 * d, 0);
    w(`${l}.out.w`, [d, d]), fill(`${l}.out.b`, d, 0);
    fill(`${l}.ln2.g`, d, 1), fill(`${l}.ln2.b`, d, 0);
    w(`${l}.up.w`, [d, dFF]), fill(`${l}.up.b`, dFF, 0);
    w(`${l}.down.w`, [dFF, d]), fill(`${l}.down.b`, d, 0);
  }
  fill("lnf.g", d, 1), fill("lnf.b", d, 0);
  w("head.w", [d, V]), fill("head.b", V, 0);
  return { params };
}

// ---------------------------------------------------------------- TF.js

async function tfBackend(): Promise<void> {
  const ok = await tf.setBackend("webgpu");
  await tf.ready();
  if (!ok || tf.getBackend() !== "webgpu") throw new Error(`tfjs: the webgpu backend is not available (backend ${tf.getBackend()})`);
}

/** `rows × cols` row-major → its transpose (`cols × rows`). */
function transpose(a: ArrayLike<number>, rows: number, cols: number): Float32Array<ArrayBuffer> {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = a[r * cols + c];
  return out;
}

/**
 * The weights of our char-rnn seeded with CHAR_RNN_SEED, in the order and layout of the
 * TF.js model's `setWeights`: embedding [V, 128]; per LSTM layer kernel [in, 4H] (W_ihᵀ),
 * recurrent kernel [H, 4H] (W_hhᵀ), bias [4H] (b_ih + b_hh; Keras has one bias); dense
 * kernel [256, V] (Wᵀ), bias [V]. PyTorch's gate order i, f, g, o is Keras' i, f, c, o.
 */
export async function charRnnKerasWeights(device: Device): Promise<{ shape: number[]; values: Float32Array<ArrayBuffer> }[]> {
  manualSeed(CHAR_RNN_SEED);
  const model = charRnn(device, V);
  const p = new Map<string, { shape: number[]; values: Float32Array<ArrayBuffer> }>();
  for (const [name, param] of model.namedParameters()) {
    p.set(name, { shape: [...param.data.shape], values: Float32Array.from(await param.data.toArray()) });
    param.data.dispose();
  }
  const get = (name: string) => {
    const w = p.get(name);
    if (!w) throw new Error(`charRnnKerasWeights: our char-rnn has no parameter ${name} (has ${[...p.keys()].join(", ")})`);
    return w;
  };
  const t = (name: string) => {
    const { shape: [r, c], values } = get(name);
    return { shape: [c, r], values: transpose(values, r, c) };
  };
  const out = [get("0.weight")];
  for (const l of [0, 1]) {
    const bih = get(`1.bias_ih_l${l}`).values, bhh = get(`1.bias_hh_l${l}`).values;
    out.push(t(`1.weight_ih_l${l}`), t(`1.weight_hh_l${l}`), { shape: [bih.length], values: bih.map((v, i) => v + bhh[i]) });
  }
  out.push(t("3.weight"), get("3.bias"));
  return out;
}

async function tfCharRnn(device: Device, s: SeqShape, mode: SeqMode) {
  const B = s.batch, T = s.seq;
  const { x, y } = batchIds(B, T);
  // Zero initializers, then our seeded weights: Keras' default orthogonal init of the
  // [256, 1024] recurrent kernels (a QR decomposition in tf ops) took minutes in Chromium.
  // recurrentActivation sigmoid as PyTorch's (tfjs-layers' default is hardSigmoid).
  const lstm = () => tf.layers.lstm({ units: 256, returnSequences: true, recurrentActivation: "sigmoid", kernelInitializer: "zeros", recurrentInitializer: "zeros" });
  const model = tf.sequential({
    layers: [
      tf.layers.embedding({ inputDim: V, outputDim: 128, inputLength: T, inputShape: [T], embeddingsInitializer: "zeros" }),
      lstm(),
      lstm(),
      tf.layers.dropout({ rate: 0.2 }),
      tf.layers.dense({ units: V, kernelInitializer: "zeros" }),
    ],
  });
  const init = (await charRnnKerasWeights(device)).map((w) => tf.tensor(w.values, w.shape));
  model.setWeights(init);
  tf.dispose(init);
  const xs = tf.tensor2d(x, [B, T], "int32");
  const onehot = tf.oneHot(tf.tensor1d(y, "int32"), V).toFloat();
  // PyTorch's RMSprop (ours): alpha 0.99, eps 1e-8 added to √v. TF.js adds its ε inside the
  // root (default 1e-7, which swamps v for small gradients) and decays by 0.9: 1e-16 inside ≈ 1e-8 outside.
  const opt = tf.train.rmsprop(2e-3, 0.99, 0, 1e-16);
  const vars = model.trainableWeights.map((w) => (w as unknown as { val: tf.Variable }).val);
  const lossFn = () => {
    const logits = (model.apply(xs, { training: true }) as tf.Tensor).reshape([B * T, V]);
    return tf.losses.softmaxCrossEntropy(onehot, logits) as tf.Scalar;
  };
  try {
    return await timeSteps(s, mode, () => opt.minimize(lossFn, true, vars)!, async (l) => {
      const v = (await l.data())[0];
      l.dispose();
      return v;
    }, (l) => l.dispose());
  } finally {
    opt.dispose();
    tf.dispose([xs, onehot]);
    model.dispose();
  }
}

async function tfGpt(s: SeqShape, mode: SeqMode) {
  const B = s.batch, T = s.seq, { d, heads: H, layers } = GPT, hd = d / H;
  const { x, y } = batchIds(B, T);
  const init = gptInit(T);
  const p: Record<string, tf.Variable> = {};
  for (const [name, [shape, values]] of init.params) p[name] = tf.variable(tf.tensor(values, shape), true, `gpt.${name}.${Math.random()}`);
  const ids = tf.tensor2d(x, [B, T], "int32");
  const onehot = tf.oneHot(tf.tensor1d(y, "int32"), V).toFloat();
  // Additive causal mask [T, T]: -1e9 where key j > query i.
  const maskData = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) maskData[i * T + j] = -1e9;
  const mask = tf.tensor2d(maskData, [T, T]);
  const ln = (h: tf.Tensor, g: tf.Tensor, b: tf.Tensor) => {
    const { mean, variance } = tf.moments(h, -1, true);
    return h.sub(mean).mul(tf.rsqrt(variance.add(1e-5))).mul(g).add(b);
  };
  const dense = (h: tf.Tensor, w: tf.Tensor, b: tf.Tensor) => tf.matMul(h.reshape([-1, w.shape[0]!]), w).add(b).reshape([B, T, w.shape[1]!]);
  const heads = (h: tf.Tensor) => h.reshape([B, T, H, hd]).transpose([0, 2, 1, 3]);
  const lossFn = () => {
    let h = tf.gather(p.tok, ids).add(p.pos) as tf.Tensor;
    for (let l = 0; l < layers; l++) {
      const n1 = ln(h, p[`${l}.ln1.g`], p[`${l}.ln1.b`]);
      const [q, k, v] = tf.split(dense(n1, p[`${l}.in.w`], p[`${l}.in.b`]), 3, -1);
      const att = tf.softmax(tf.matMul(heads(q), heads(k), false, true).mul(1 / Math.sqrt(hd)).add(mask));
      const a = tf.matMul(att, heads(v)).transpose([0, 2, 1, 3]).reshape([B, T, d]);
      h = h.add(dense(a, p[`${l}.out.w`], p[`${l}.out.b`]));
      const u = dense(ln(h, p[`${l}.ln2.g`], p[`${l}.ln2.b`]), p[`${l}.up.w`], p[`${l}.up.b`]);
      const gelu = u.mul(tf.erf(u.mul(Math.SQRT1_2)).add(1)).mul(0.5);
      h = h.add(dense(gelu, p[`${l}.down.w`], p[`${l}.down.b`]));
    }
    const logits = dense(ln(h, p["lnf.g"], p["lnf.b"]), p["head.w"], p["head.b"]).reshape([B * T, V]);
    return tf.losses.softmaxCrossEntropy(onehot, logits) as tf.Scalar;
  };
  const opt = tf.train.adam(3e-4, 0.9, 0.999, 1e-8);
  const vars = Object.values(p);
  try {
    return await timeSteps(s, mode, () => opt.minimize(lossFn, true, vars)!, async (l) => {
      const v = (await l.data())[0];
      l.dispose();
      return v;
    }, (l) => l.dispose());
  } finally {
    opt.dispose();
    tf.dispose([ids, onehot, mask, ...vars]);
  }
}

// ---------------------------------------------------------------- jax-js

let jaxReady: Promise<void> | undefined;
function jaxBackend(): Promise<void> {
  return jaxReady ??= (async () => {
    const devices = await init("webgpu");
    if (!devices.includes("webgpu")) throw new Error(`jax-js: webgpu backend unavailable, init() returned ${JSON.stringify(devices)}`);
    defaultDevice("webgpu");
  })();
}

type JP = Record<string, np.Array>;

function jaxLn(h: np.Array, g: np.Array, b: np.Array): np.Array {
  return nn.standardize(h, -1, { epsilon: 1e-5 }).mul(g).add(b);
}

/** Mean next-character cross entropy of the jax-js gpt-nano; every argument is consumed once. */
function jaxGptLoss(p: JP, idsHot: np.Array, onehot: np.Array): np.Array {
  const [B, T] = idsHot.shape, { d, heads: H, layers } = GPT, hd = d / H;
  // The embedding as one-hot ids @ table: np.take's gradient is a scatter with f32 atomics,
  // whose shader lavapipe (Deno) refuses to compile.
  let h = np.matmul(idsHot, p.tok).add(p.pos);
  for (let l = 0; l < layers; l++) {
    const n1 = jaxLn(h.ref, p[`${l}.ln1.g`], p[`${l}.ln1.b`]);
    const [q, k, v] = np.split(np.matmul(n1, p[`${l}.in.w`]).add(p[`${l}.in.b`]), 3, -1);
    const a = nn.dotProductAttention(q.reshape([B, T, H, hd]), k.reshape([B, T, H, hd]), v.reshape([B, T, H, hd]), { isCausal: true });
    h = h.add(np.matmul(a.reshape([B, T, d]), p[`${l}.out.w`]).add(p[`${l}.out.b`]));
    const u = np.matmul(jaxLn(h.ref, p[`${l}.ln2.g`], p[`${l}.ln2.b`]), p[`${l}.up.w`]).add(p[`${l}.up.b`]);
    h = h.add(np.matmul(nn.gelu(u, { approximate: false }), p[`${l}.down.w`]).add(p[`${l}.down.b`]));
  }
  const logits = np.matmul(jaxLn(h, p["lnf.g"], p["lnf.b"]), p["head.w"]).add(p["head.b"]);
  return np.sum(nn.logSoftmax(logits, -1).mul(onehot)).mul(-1 / (B * T));
}

const ADAM = { lr: 3e-4, beta1: 0.9, beta2: 0.999, eps: 1e-8 };

// One jitted step: forward, backward, bias-corrected Adam (as bench/peers/jax.ts's W2 step).
const jaxGptStep = jit((p: JP, m: JP, v: JP, t: np.Array, ids: np.Array, onehot: np.Array) => {
  const [loss, g] = valueAndGrad(jaxGptLoss)(tree.ref(p), ids, onehot) as [np.Array, JP];
  const t1 = t.add(1);
  const bc1 = np.exp(t1.ref.mul(Math.log(ADAM.beta1))).neg().add(1);
  const bc2 = np.exp(t1.ref.mul(Math.log(ADAM.beta2))).neg().add(1);
  const np_: JP = {}, nm: JP = {}, nv: JP = {};
  for (const k of Object.keys(p)) {
    const gk = g[k];
    const mk = m[k].mul(ADAM.beta1).add(gk.ref.mul(1 - ADAM.beta1));
    const vk = v[k].mul(ADAM.beta2).add(gk.ref.mul(gk).mul(1 - ADAM.beta2));
    np_[k] = p[k].sub(mk.ref.div(bc1.ref).mul(ADAM.lr).div(np.sqrt(vk.ref.div(bc2.ref)).add(ADAM.eps)));
    nm[k] = mk;
    nv[k] = vk;
  }
  bc1.dispose();
  bc2.dispose();
  return [np_, nm, nv, t1, loss] as [JP, JP, JP, np.Array, np.Array];
});

async function jaxGpt(s: SeqShape, mode: SeqMode) {
  const B = s.batch, T = s.seq;
  const { x, y } = batchIds(B, T);
  const init = gptInit(T);
  let p: JP = {}, m: JP = {}, v: JP = {};
  for (const [name, [shape, values]] of init.params) {
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
    const out = jaxGptStep(p, m, v, t, ids.ref, onehot.ref);
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

// ---------------------------------------------------------------- the sitting

/** One contender, one mode, a fresh model. */
export async function runOne(device: Device, s: SeqShape, contender: SeqContender, mode: SeqMode, round: number): Promise<SeqResult> {
  let r: { msPerStep: number; firstLoss: number; lastLoss: number };
  if (contender === "ours") r = await ours(device, s, mode);
  else if (contender === "tf") {
    await tfBackend();
    r = s.model === "char-rnn" ? await tfCharRnn(device, s, mode) : await tfGpt(s, mode);
  } else {
    if (s.model !== "gpt-nano") throw new RangeError(`seq bench: jax-js runs gpt-nano only, got ${s.model}`);
    await jaxBackend();
    r = await jaxGpt(s, mode);
  }
  return { model: s.model, contender, mode, round, ...r };
}

export interface SittingOptions {
  shape: SeqShape;
  contenders?: SeqContender[];
  modes?: SeqMode[];
  rounds?: number;
  log?: (line: string) => void;
}

/**
 * The sitting: `rounds` rounds; in each, every mode, and in each mode every contender in
 * turn (the order rotates by round, so no contender always runs right after another's
 * pipeline compiles). Everything interleaved, so machine load hits all alike.
 */
export async function runSitting(device: Device, o: SittingOptions): Promise<SeqResult[]> {
  const contenders = o.contenders ?? CONTENDERS[o.shape.model];
  for (const c of contenders) {
    if (!CONTENDERS[o.shape.model].includes(c)) throw new RangeError(`seq bench: ${o.shape.model} runs ${CONTENDERS[o.shape.model].join(",")}, got contender ${c}`);
  }
  const modes = o.modes ?? ["loss-at-end", "loss-every-step"];
  const results: SeqResult[] = [];
  for (let round = 1; round <= (o.rounds ?? 3); round++) {
    for (const mode of modes) {
      for (let i = 0; i < contenders.length; i++) {
        const c = contenders[(i + round - 1) % contenders.length];
        o.log?.(`round ${round} ${mode} ${c}: start`);
        const r = await runOne(device, o.shape, c, mode, round);
        o.log?.(`round ${round} ${mode} ${c}: ${r.msPerStep.toFixed(0)} ms/step, loss ${r.firstLoss.toFixed(4)} → ${r.lastLoss.toFixed(4)}`);
        results.push(r);
      }
    }
  }
  return results;
}

const median = (xs: number[]) => {
  const a = [...xs].sort((p, q) => p - q), n = a.length;
  return n % 2 ? a[(n - 1) / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
};

/** Markdown table of a sitting: median ms/step per contender and mode, every run, ratios vs ours. */
export function sittingTable(s: SeqShape, results: SeqResult[]): string[] {
  const lines = [
    `${s.model}, B=${s.batch} T=${s.seq}, ${s.steps} timed steps after ${WARMUP}, median over rounds`,
    "| loss read | contender | ms / step (median) | sequences/s | ours × faster | runs, ms / step | loss first → last (each run) |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const mode of ["loss-at-end", "loss-every-step"] as const) {
    const byC = new Map<SeqContender, SeqResult[]>();
    for (const r of results.filter((r) => r.mode === mode)) byC.set(r.contender, [...(byC.get(r.contender) ?? []), r]);
    const oursMs = byC.has("ours") ? median(byC.get("ours")!.map((r) => r.msPerStep)) : NaN;
    for (const [c, rs] of byC) {
      const ms = median(rs.map((r) => r.msPerStep));
      lines.push(`| ${mode} | ${c} | ${ms.toFixed(0)} | ${((s.batch * 1000) / ms).toFixed(2)} | ${c === "ours" ? "—" : `${(ms / oursMs).toFixed(2)}×`} | ${
        rs.map((r) => r.msPerStep.toFixed(0)).join(", ")
      } | ${rs.map((r) => `${r.firstLoss.toFixed(3)} → ${r.lastLoss.toFixed(3)}`).join("; ")} |`);
    }
  }
  return lines;
}

/** Runs whose loss did not fall (first warm-up step's loss → the last timed step's). */
export function notFalling(results: SeqResult[]): SeqResult[] {
  return results.filter((r) => !(r.lastLoss < r.firstLoss));
}
