/**
 * jax-js 0.1.25 contender, adapted from the peers' harness (jax_bench.ts) (same code
 * paths: eager np.matmul for W1, one jitted step with a hand-written Adam for W2). Added:
 * the sampled check of C and the reference check of the losses.
 */
import { defaultDevice, init, jit, nn, numpy as np, tree, valueAndGrad } from "@jax-js/jax";
import { checkMatmul, timeMatmul, W2, w1Data, w2Data, type W1Result, type W2Mode, type W2Result, w2Result } from "../workloads.ts";

/** Start jax-js on WebGPU; returns the adapter it sees (jax-js asks for "high-performance"). */
export async function setupJax(): Promise<{ adapter: string }> {
  const devices = await init("webgpu");
  if (!devices.includes("webgpu")) throw new Error(`jax-js: webgpu backend unavailable, init() returned ${JSON.stringify(devices)}`);
  defaultDevice("webgpu");
  const a = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  const i = a?.info;
  return { adapter: i ? `${i.vendor}|${i.architecture}|${i.description}` : "?" };
}

const upload = (data: Float32Array<ArrayBuffer> | Int32Array<ArrayBuffer>, shape: number[]) => np.array(data).reshape(shape);

/** W1: C = np.matmul(A, B), completion = await C.data() (full readback; data() consumes C). */
export async function jaxMatmul(n: number): Promise<W1Result> {
  const d = w1Data(n);
  const a = upload(d.a, [n, n]), b = upload(d.b, [n, n]);
  await a.blockUntilReady();
  await b.blockUntilReady();
  let last: ArrayLike<number> = [];
  const t = await timeMatmul(n, async () => {
    const t0 = performance.now();
    const c = np.matmul(a.ref, b.ref);
    last = (await c.data()) as ArrayLike<number>;
    return performance.now() - t0;
  });
  a.dispose();
  b.dispose();
  return { n, ...t, ...checkMatmul(n, d.a, d.b, last) };
}

type Params = { w1: np.Array; b1: np.Array; w2: np.Array; b2: np.Array };
const KEYS = ["w1", "b1", "w2", "b2"] as const;

function lossFn(p: Params, x: np.Array, y: np.Array): np.Array {
  const h = nn.relu(np.matmul(x, p.w1).add(p.b1));
  const logits = np.matmul(h, p.w2).add(p.b2);
  const logp = nn.logSoftmax(logits, -1);
  const onehot = nn.oneHot(y, W2.classes);
  return np.sum(logp.mul(onehot)).mul(-1 / W2.batch);
}

// One jitted training step: forward, backward, Adam update (bias-corrected), all on device.
// Ownership: every argument is consumed; arrays used twice take .ref.
const trainStep = jit((p: Params, m: Params, v: Params, t: np.Array, x: np.Array, y: np.Array) => {
  const [loss, g] = valueAndGrad(lossFn)(tree.ref(p), x, y) as [np.Array, Params];
  const t1 = t.add(1);
  const bc1 = np.exp(t1.ref.mul(Math.log(W2.beta1))).neg().add(1);
  const bc2 = np.exp(t1.ref.mul(Math.log(W2.beta2))).neg().add(1);
  const np_: Record<string, np.Array> = {}, nm: Record<string, np.Array> = {}, nv: Record<string, np.Array> = {};
  for (const k of KEYS) {
    const gk = g[k];
    const mk = m[k].mul(W2.beta1).add(gk.ref.mul(1 - W2.beta1));
    const vk = v[k].mul(W2.beta2).add(gk.ref.mul(gk).mul(1 - W2.beta2));
    const mhat = mk.ref.div(bc1.ref);
    const vhat = vk.ref.div(bc2.ref);
    np_[k] = p[k].sub(mhat.mul(W2.lr).div(np.sqrt(vhat).add(W2.eps)));
    nm[k] = mk;
    nv[k] = vk;
  }
  bc1.dispose();
  bc2.dispose();
  return [np_ as Params, nm as Params, nv as Params, t1, loss] as [Params, Params, Params, np.Array, np.Array];
});

/** W2 in one mode, a fresh training from the shared initial state. */
export async function jaxMlp(mode: W2Mode): Promise<W2Result> {
  const { batch: B, inDim: D, hidden: H, classes: C } = W2;
  const d = w2Data();
  const x = upload(d.x, [B, D]);
  const y = upload(d.y, [B]);
  let p: Params = { w1: upload(d.w1, [D, H]), b1: np.zeros([H]), w2: upload(d.w2, [H, C]), b2: np.zeros([C]) };
  await x.blockUntilReady();
  await y.blockUntilReady();
  const zeros = (): Params => ({ w1: np.zeros([D, H]), b1: np.zeros([H]), w2: np.zeros([H, C]), b2: np.zeros([C]) });
  let m = zeros(), v = zeros();
  let t = np.zeros([]);
  const step = () => {
    const out = trainStep(p, m, v, t, x.ref, y.ref);
    [p, m, v, t] = out;
    return out[4];
  };
  let firstLoss = NaN, firstStepMs = NaN;
  for (let i = 0; i < W2.warmup; i++) {
    const t = performance.now();
    const l = (await step().data())[0];
    if (i === 0) [firstLoss, firstStepMs] = [l, performance.now() - t];
  }
  let last = NaN;
  const t0 = performance.now();
  for (let i = 0; i < W2.steps; i++) {
    const l = step();
    if (mode === "loss-every-step" || i === W2.steps - 1) last = (await l.data())[0];
    else l.dispose();
  }
  const ms = performance.now() - t0;
  for (const tr of [p, m, v]) for (const k of KEYS) tr[k].dispose();
  t.dispose();
  x.dispose();
  y.dispose();
  return w2Result(mode, ms, firstLoss, last, firstStepMs);
}
