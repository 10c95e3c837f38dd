/**
 * W3, a char-rnn training step (spec §11.1's model at a smaller sequence length): ours
 * against TensorFlow.js 4.22 (webgpu backend, `tf.layers.lstm`) in ONE Deno process on the
 * same adapter, ratios side by side.
 *
 * Model: Embedding(85, 128) → LSTM(128, 256) → LSTM(256, 256) → Dropout(0.2) → Linear(256, 85),
 * next-character cross-entropy over every position, RMSprop 2e-3; batch B of T characters
 * (seeded random ids; the targets are the ids shifted by one). One step = forward, backward,
 * optimizer; the loss is read at the end of the timed steps ("loss-at-end") or every step.
 * Weights are each library's own init (the layouts differ: Keras' one LSTM bias and gate
 * order i,f,c,o vs PyTorch's two biases and i,f,g,o); the check is that each one's loss falls.
 *
 *   deno run -A --no-check bench/seq_peers.ts [--batch 32] [--seq 64] [--steps 5] [--only ours,tf]
 */
import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-webgpu";
import { Device, fromArray, RMSprop, Variable } from "../src/index.ts";
import { charRnn } from "../examples/models.ts";
import { nextCharLoss } from "../examples/recipes.ts";

function flag(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(Deno.args[i + 1]);
  if (!Number.isInteger(v) || v <= 0) throw new RangeError(`--${name} must be a positive integer, got ${Deno.args[i + 1]}`);
  return v;
}
const onlyAt = Deno.args.indexOf("--only");
const only = onlyAt >= 0 ? Deno.args[onlyAt + 1].split(",") : ["ours", "tf"];
const B = flag("batch", 32), T = flag("seq", 64), STEPS = flag("steps", 5), WARMUP = 2, V = 85;

/** Seeded ids in [0, V) (mulberry32) for [B, T + 1]: inputs are the first T, targets the last T. */
function batchIds(): { x: Int32Array<ArrayBuffer>; y: Int32Array<ArrayBuffer> } {
  let s = 7 >>> 0;
  const rand = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  // Repeating short patterns, so there is something to learn in a few steps.
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

interface Result {
  contender: string;
  mode: "loss-at-end" | "loss-every-step";
  msPerStep: number;
  firstLoss: number;
  lastLoss: number;
}

async function ours(device: Device, mode: Result["mode"]): Promise<Result> {
  const { x, y } = batchIds();
  const model = charRnn(device, V);
  const opt = new RMSprop(model.parameters(), { lr: 2e-3 });
  const step = (): Variable => {
    const ids = fromArray(x, [B, T], { device, dtype: "i32" }), target = fromArray(y, [B, T], { device, dtype: "i32" });
    const loss = nextCharLoss(model, [ids, target]);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss;
  };
  let firstLoss = NaN;
  for (let i = 0; i < WARMUP; i++) {
    const l = step();
    const v = await l.data.item();
    device.endStep();
    if (i === 0) firstLoss = v;
  }
  let last = NaN;
  const t0 = performance.now();
  for (let i = 0; i < STEPS; i++) {
    const l = step();
    if (mode === "loss-every-step" || i === STEPS - 1) last = await l.data.item();
    device.endStep();
  }
  const ms = (performance.now() - t0) / STEPS;
  return { contender: "ours", mode, msPerStep: ms, firstLoss, lastLoss: last };
}

async function tfjs(mode: Result["mode"]): Promise<Result> {
  const { x, y } = batchIds();
  const model = tf.sequential({
    layers: [
      tf.layers.embedding({ inputDim: V, outputDim: 128, inputLength: T }),
      tf.layers.lstm({ units: 256, returnSequences: true }),
      tf.layers.lstm({ units: 256, returnSequences: true }),
      tf.layers.dropout({ rate: 0.2 }),
      tf.layers.dense({ units: V }),
    ],
  });
  const xs = tf.tensor2d(x, [B, T], "int32");
  const onehot = tf.oneHot(tf.tensor1d(y, "int32"), V).toFloat();
  const opt = tf.train.rmsprop(2e-3);
  const vars = model.trainableWeights.map((w) => (w as unknown as { val: tf.Variable }).val);
  const lossFn = () => {
    const logits = (model.apply(xs, { training: true }) as tf.Tensor).reshape([B * T, V]);
    return tf.losses.softmaxCrossEntropy(onehot, logits) as tf.Scalar;
  };
  const step = () => opt.minimize(lossFn, true, vars)!;
  let firstLoss = NaN;
  for (let i = 0; i < WARMUP; i++) {
    const l = step();
    const v = (await l.data())[0];
    l.dispose();
    if (i === 0) firstLoss = v;
  }
  let last = NaN;
  const t0 = performance.now();
  for (let i = 0; i < STEPS; i++) {
    const l = step();
    if (mode === "loss-every-step" || i === STEPS - 1) last = (await l.data())[0];
    l.dispose();
  }
  const ms = (performance.now() - t0) / STEPS;
  opt.dispose();
  tf.dispose([xs, onehot]);
  model.dispose();
  return { contender: "tf", mode, msPerStep: ms, firstLoss, lastLoss: last };
}

const load = Deno.loadavg();
console.log(`bench/seq_peers: char-rnn step, B=${B} T=${T} V=${V}, ${STEPS} timed steps after ${WARMUP}; load ${load.map((v) => v.toFixed(2)).join(" ")}`);
const results: Result[] = [];
const device = await Device.request({ label: "bench" });
for (const mode of ["loss-at-end", "loss-every-step"] as const) {
  if (only.includes("ours")) results.push(await ours(device, mode));
  if (only.includes("tf")) {
    const ok = await tf.setBackend("webgpu");
    await tf.ready();
    if (!ok) throw new Error("tfjs: the webgpu backend is not available");
    results.push(await tfjs(mode));
  }
}
console.log("| contender | loss read | ms / step | samples/s | loss first → last |");
console.log("|---|---|---|---|---|");
for (const r of results) {
  console.log(`| ${r.contender} | ${r.mode} | ${r.msPerStep.toFixed(0)} | ${((B * 1000) / r.msPerStep).toFixed(1)} | ${r.firstLoss.toFixed(3)} → ${r.lastLoss.toFixed(3)} |`);
}
for (const mode of ["loss-at-end", "loss-every-step"]) {
  const o = results.find((r) => r.contender === "ours" && r.mode === mode), t = results.find((r) => r.contender === "tf" && r.mode === mode);
  if (o && t) console.log(`${mode}: ours ${(t.msPerStep / o.msPerStep).toFixed(2)}x TF.js`);
}
const bad = results.filter((r) => !(r.lastLoss < r.firstLoss));
if (bad.length) {
  console.error(`bench/seq_peers: the loss did not fall for ${bad.map((r) => `${r.contender} ${r.mode}`).join(", ")}`);
  Deno.exit(1);
}
console.log(`load after ${Deno.loadavg().map((v) => v.toFixed(2)).join(" ")}`);
