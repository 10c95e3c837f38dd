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
 * bilstm (2-layer bidirectional LSTM, ours vs TF.js) and encoder (2 post-norm
 * TransformerEncoderLayers, ours vs TF.js vs jax-js): bench/seq_bilstm.ts, bench/seq_encoder.ts.
 * What all four share (the batch, the timer, the peers' backends, jax-js' Adam):
 * bench/seq_common.ts, re-exported here.
 *
 * Batch: B sequences of T characters, seeded repeating patterns (something to learn in a few
 * steps); targets are the inputs shifted by one. One step = forward, backward, optimizer.
 */
import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-webgpu";
import { jit, nn, numpy as np, tree, valueAndGrad } from "@jax-js/jax";
import { Adam, type Device, fromArray, manualSeed, type Module, RMSprop, Variable } from "../src/index.ts";
import { charRnn } from "../src/zoo/mod.ts";
import { GptNano } from "../src/zoo/mod.ts";
import { nextCharLoss } from "../src/zoo/mod.ts";
import {
  ABSENT,
  batchIds,
  CONTENDERS,
  type HostWeight,
  hostWeights,
  jaxAdam,
  jaxBackend,
  jaxCe,
  jaxLn,
  jaxTimeSteps,
  type JP,
  kerasLstm,
  mulberry,
  type SeqContender,
  type SeqMode,
  type SeqResult,
  type SeqShape,
  type StepTiming,
  tfBackend,
  tfTimeSteps,
  tfTransformerSteps,
  timeSteps,
  V,
  WARMUP,
} from "./seq_common.ts";
import { bilstmOurs, tfBilstm } from "./seq_bilstm.ts";
import { encoderOurs, jaxEncoder, tfEncoder } from "./seq_encoder.ts";

export * from "./seq_common.ts";

/** gpt-nano's sizes. */
export const GPT = { d: 128, heads: 4, layers: 4, dFF: 512 } as const;

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
  if (s.model === "bilstm") return bilstmOurs(device);
  if (s.model === "encoder") return encoderOurs(device, s);
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

async function ours(device: Device, s: SeqShape, mode: SeqMode): Promise<StepTiming> {
  const { x, y } = batchIds(s.batch, s.seq);
  const m = oursModel(device, s);
  return await timeSteps(s, mode, () => oursStep(device, s, m, x, y), (l) => l.data.item(), () => {}, () => device.endStep());
}

// ---------------------------------------------------------------- shared seeded init (TF.js, jax-js)

/** gpt-nano's seeded weights for TF.js and jax-js by name, stored [in, out] (x @ W). */
function gptInit(T: number): Map<string, HostWeight> {
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
  const params = new Map<string, HostWeight>();
  const w = (name: string, shape: number[]) => params.set(name, { shape, values: normal(shape.reduce((a, b) => a * b, 1)) });
  const fill = (name: string, n: number, v: number) => params.set(name, { shape: [n], values: new Float32Array(n).fill(v) });
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
  return params;
}

// ---------------------------------------------------------------- TF.js

/**
 * The weights of our char-rnn seeded with CHAR_RNN_SEED, in the order and layout of the
 * TF.js model's `setWeights`: embedding [V, 128]; per LSTM layer kernel [in, 4H] (W_ihᵀ),
 * recurrent kernel [H, 4H] (W_hhᵀ), bias [4H] (b_ih + b_hh; Keras has one bias); dense
 * kernel [256, V] (Wᵀ), bias [V]. PyTorch's gate order i, f, g, o is Keras' i, f, c, o.
 */
export async function charRnnKerasWeights(device: Device): Promise<HostWeight[]> {
  manualSeed(CHAR_RNN_SEED);
  const w = await hostWeights(charRnn(device, V), "charRnnKerasWeights");
  return [w.get("0.weight"), ...kerasLstm(w, "1.", "_l0"), ...kerasLstm(w, "1.", "_l1"), w.t("3.weight"), w.get("3.bias")];
}

async function tfCharRnn(device: Device, s: SeqShape, mode: SeqMode): Promise<StepTiming> {
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
    return await tfTimeSteps(s, mode, opt, lossFn, vars);
  } finally {
    opt.dispose();
    tf.dispose([xs, onehot]);
    model.dispose();
  }
}

function tfGpt(s: SeqShape, mode: SeqMode): Promise<StepTiming> {
  return tfTransformerSteps(s, mode, gptInit(s.seq), 3e-4, GPT, (p, { ln, dense, causalAttention }, ids) => {
    let h = tf.gather(p.tok, ids).add(p.pos) as tf.Tensor;
    for (let l = 0; l < GPT.layers; l++) {
      const a = causalAttention(dense(ln(h, p[`${l}.ln1.g`], p[`${l}.ln1.b`]), p[`${l}.in.w`], p[`${l}.in.b`]));
      h = h.add(dense(a, p[`${l}.out.w`], p[`${l}.out.b`]));
      const u = dense(ln(h, p[`${l}.ln2.g`], p[`${l}.ln2.b`]), p[`${l}.up.w`], p[`${l}.up.b`]);
      const gelu = u.mul(tf.erf(u.mul(Math.SQRT1_2)).add(1)).mul(0.5);
      h = h.add(dense(gelu, p[`${l}.down.w`], p[`${l}.down.b`]));
    }
    return dense(ln(h, p["lnf.g"], p["lnf.b"]), p["head.w"], p["head.b"]);
  });
}

// ---------------------------------------------------------------- jax-js

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
  return jaxCe(logits, onehot);
}

const ADAM = { lr: 3e-4, beta1: 0.9, beta2: 0.999, eps: 1e-8 };

// One jitted step: forward, backward, bias-corrected Adam (as bench/peers/jax.ts's W2 step).
const jaxGptStep = jit((p: JP, m: JP, v: JP, t: np.Array, ids: np.Array, onehot: np.Array) => {
  const [loss, g] = valueAndGrad(jaxGptLoss)(tree.ref(p), ids, onehot) as [np.Array, JP];
  return [...jaxAdam(ADAM, p, m, v, t, g), loss] as [JP, JP, JP, np.Array, np.Array];
});

// ---------------------------------------------------------------- the sitting

/** One contender, one mode, a fresh model. */
export async function runOne(device: Device, s: SeqShape, contender: SeqContender, mode: SeqMode, round: number): Promise<SeqResult> {
  if (!CONTENDERS[s.model].includes(contender)) throw new RangeError(`seq bench: ${s.model} runs ${CONTENDERS[s.model].join(",")}, got contender ${contender}`);
  let r: StepTiming;
  if (contender === "ours") r = await ours(device, s, mode);
  else if (contender === "tf") {
    await tfBackend();
    const run = { "char-rnn": () => tfCharRnn(device, s, mode), "gpt-nano": () => tfGpt(s, mode), bilstm: () => tfBilstm(device, s, mode), encoder: () => tfEncoder(device, s, mode) };
    r = await run[s.model]();
  } else {
    await jaxBackend();
    r = s.model === "encoder" ? await jaxEncoder(device, s, mode) : await jaxTimeSteps(s, mode, gptInit(s.seq), jaxGptStep);
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

/** Markdown table of a sitting: median ms/step per contender and mode, every run, ratios vs ours; a row for each peer without the layer ({@link ABSENT}). */
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
    if (byC.size) for (const c of ABSENT[s.model] ?? []) lines.push(`| ${mode} | ${c} | no such layer | | | | |`);
  }
  return lines;
}

/** Runs whose loss did not fall (first warm-up step's loss → the last timed step's). */
export function notFalling(results: SeqResult[]): SeqResult[] {
  return results.filter((r) => !(r.lastLoss < r.firstLoss));
}
