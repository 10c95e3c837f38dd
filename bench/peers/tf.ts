/**
 * TensorFlow.js 4.22 contender (webgpu backend), adapted from
 * the peers' harness (tf_bench.ts) (same code paths: tf.matMul for W1, tf.variable +
 * tf.train.adam(...).minimize for W2). Added: the sampled check of C and the reference
 * check of the losses.
 */
import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-webgpu";
import { checkMatmul, timeMatmul, W2, w1Data, w2Data, type W1Result, type W2Mode, type W2Result, w2Result } from "../workloads.ts";

/** Select the webgpu backend; returns the adapter it sees. */
export async function setupTf(): Promise<{ adapter: string; version: string }> {
  const ok = await tf.setBackend("webgpu");
  await tf.ready();
  if (!ok || tf.getBackend() !== "webgpu") throw new Error(`tfjs: setBackend("webgpu") gave ${ok}, backend ${tf.getBackend()}`);
  const a = await navigator.gpu.requestAdapter();
  const i = a?.info;
  return { adapter: i ? `${i.vendor}|${i.architecture}|${i.description}` : "?", version: tf.version.tfjs };
}

/** W1: C = tf.matMul(A, B), completion = await C.data() (full readback). */
export async function tfMatmul(n: number): Promise<W1Result> {
  const d = w1Data(n);
  const a = tf.tensor2d(d.a, [n, n]), b = tf.tensor2d(d.b, [n, n]);
  let last: ArrayLike<number> = [];
  const t = await timeMatmul(n, async () => {
    const t0 = performance.now();
    const c = tf.matMul(a, b);
    last = await c.data();
    const ms = performance.now() - t0;
    c.dispose();
    return ms;
  });
  a.dispose();
  b.dispose();
  return { n, ...t, ...checkMatmul(n, d.a, d.b, last) };
}

/** W2 in one mode, a fresh training from the shared initial state. */
export async function tfMlp(mode: W2Mode): Promise<W2Result> {
  const { batch: B, inDim: D, hidden: H, classes: C } = W2;
  const d = w2Data();
  const x = tf.tensor2d(d.x, [B, D]);
  const y = tf.tensor1d(d.y, "int32");
  const mkVar = (t: tf.Tensor) => {
    const v = tf.variable(t);
    t.dispose(); // tf.variable() does not consume t
    return v;
  };
  const w1 = mkVar(tf.tensor2d(d.w1, [D, H])), b1 = mkVar(tf.zeros([H]));
  const w2 = mkVar(tf.tensor2d(d.w2, [H, C])), b2 = mkVar(tf.zeros([C]));
  const vars = [w1, b1, w2, b2];
  const opt = tf.train.adam(W2.lr, W2.beta1, W2.beta2, W2.eps); // NOTE: the default ε is 1e-7, pass 1e-8
  const lossFn = () => {
    const h = tf.relu(tf.add(tf.matMul(x, w1), b1));
    const logits = tf.add(tf.matMul(h, w2), b2);
    const onehot = tf.oneHot(y, C).toFloat();
    return tf.losses.softmaxCrossEntropy(onehot, logits) as tf.Scalar;
  };
  const step = () => opt.minimize(lossFn, true, vars)!;
  let firstLoss = NaN, firstStepMs = NaN;
  for (let i = 0; i < W2.warmup; i++) {
    const t = performance.now();
    const l = step();
    const v = (await l.data())[0];
    l.dispose();
    if (i === 0) [firstLoss, firstStepMs] = [v, performance.now() - t];
  }
  let last = NaN;
  const t0 = performance.now();
  for (let i = 0; i < W2.steps; i++) {
    const l = step();
    if (mode === "loss-every-step" || i === W2.steps - 1) last = (await l.data())[0];
    l.dispose();
  }
  const ms = performance.now() - t0;
  opt.dispose();
  tf.dispose([x, y, ...vars]);
  return w2Result(mode, ms, firstLoss, last, firstStepMs);
}
