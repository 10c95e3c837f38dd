/**
 * Our engine as a contender, through its public API only: `matmul` for W1, and for W2 the
 * MNIST MLP of src/zoo/models.ts (Flatten → Linear(784,256) → ReLU → Linear(256,10)) with
 * `crossEntropy` and `Adam`, one submit per step (`device.endStep()`), as
 * examples/mnist_mlp.ts trains it.
 *
 * NOTE: our Linear stores W as [out, in] (PyTorch's layout); the shared initial weights are
 * [in, out], so they are transposed on upload. The math is the same workload.
 */
import process from "node:process";
import { Adam, crossEntropy, Device, fromArray, type Module, type Tensor, Variable } from "../src/index.ts";
import { ops } from "../src/engine.ts";
import { mlp } from "../src/zoo/mod.ts";
import {
  checkMatmul,
  timeMatmul,
  w1Data,
  type W1Result,
  W2,
  w2Data,
  type W2Mode,
  type W2Result,
  w2Result,
} from "./workloads.ts";

/** Our device for the whole sitting (the first device requested becomes `Device.default`). */
export async function setupOurs(): Promise<{ device: Device; adapter: string; tiling: string }> {
  const device = await Device.request({ label: "bench" });
  Device.setDefault(device);
  const i = device.info;
  return { device, adapter: `${i.vendor}|${i.architecture}|${i.description}`, tiling: JSON.stringify(device.matmul) };
}

/** W1: C = matmul(A, B), completion = await C.toArray() (full readback). */
export async function oursMatmul(device: Device, n: number): Promise<W1Result> {
  const d = w1Data(n);
  const a = fromArray(d.a, [n, n], { device }).keep(), b = fromArray(d.b, [n, n], { device }).keep();
  let last: ArrayLike<number> = [];
  try {
    const t = await timeMatmul(n, async () => {
      const t0 = performance.now();
      const c = ops.matmul(a, b);
      last = await c.toArray();
      const ms = performance.now() - t0;
      device.endStep();
      return ms;
    });
    return { n, ...t, ...checkMatmul(n, d.a, d.b, last) };
  } finally {
    a.dispose();
    b.dispose();
  }
}

/** [rows, cols] row-major → its transpose. */
function transpose(x: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(x.length);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[j * rows + i] = x[i * cols + j];
  return out;
}

/** The W2 model, optimizer and batch in the shared initial state. */
export interface Mlp {
  model: Module;
  opt: Adam;
  x: Tensor;
  y: Tensor;
  /** Record one training step (nothing submitted); returns the loss tensor (step-scoped). */
  record(): Tensor;
  dispose(): void;
}

export function buildMlp(device: Device): Mlp {
  const { batch: B, inDim: D, hidden: H, classes: C } = W2;
  const d = w2Data();
  const model = mlp(device);
  const params = new Map(model.namedParameters());
  const set = (name: string, values: ArrayLike<number>) => {
    const p = params.get(name);
    if (!p) throw new Error(`bench: src/zoo/models.ts mlp has no parameter "${name}", it has ${[...params.keys()]}`);
    p.set(values);
  };
  set("1.weight", transpose(d.w1, D, H));
  set("1.bias", new Float32Array(H));
  set("3.weight", transpose(d.w2, H, C));
  set("3.bias", new Float32Array(C));
  const opt = new Adam(model.parameters(), { lr: W2.lr, betas: [W2.beta1, W2.beta2], eps: W2.eps, foreach: true });
  const x = fromArray(d.x, [B, D], { device }).keep();
  const y = fromArray(d.y, [B], { device }).keep();
  return {
    model,
    opt,
    x,
    y,
    record() {
      const loss = crossEntropy(model.forward(new Variable(x)), y);
      loss.backward();
      opt.step();
      opt.zeroGrad();
      return loss.data;
    },
    dispose() {
      opt.resetState();
      for (const p of model.parameters()) {
        p.zeroGrad();
        p.data.dispose();
      }
      x.dispose();
      y.dispose();
    },
  };
}

/** W2 in one mode, a fresh training from the shared initial state. */
export async function oursMlp(device: Device, mode: W2Mode): Promise<W2Result> {
  const m = buildMlp(device);
  try {
    let firstLoss = NaN, firstStepMs = NaN;
    for (let i = 0; i < W2.warmup; i++) {
      const t = performance.now();
      const read = m.record().toArray();
      device.endStep();
      const l = (await read)[0];
      if (i === 0) [firstLoss, firstStepMs] = [l, performance.now() - t];
    }
    let last = NaN;
    const t0 = performance.now();
    for (let i = 0; i < W2.steps; i++) {
      const loss = m.record();
      // toArray records the copy and submits before its first await, so endStep may follow at once.
      const read = mode === "loss-every-step" || i === W2.steps - 1 ? loss.toArray() : undefined;
      device.endStep();
      if (read) last = (await read)[0];
    }
    const ms = performance.now() - t0;
    return w2Result(mode, ms, firstLoss, last, firstStepMs);
  } finally {
    m.dispose();
    device.endStep();
  }
}

/**
 * W2's samples/s over `steps` timed steps (after W2.warmup), with the loss of step k awaited
 * once step k + lag is submitted: lag 0 awaits it before the next step, lag -1 reads only the
 * last step's loss, lag 2 or 3 keeps that many steps in flight (bench/loss_lag.ts). Returns
 * the last loss too, so callers can check every mode trained the same, and samples per
 * CPU-second of this process.
 */
export async function oursMlpLagged(
  device: Device,
  steps: number,
  lag: number,
): Promise<{ sps: number; last: number; spCpuS: number }> {
  const m = buildMlp(device);
  try {
    for (let i = 0; i < W2.warmup; i++) {
      const r = m.record().toArray();
      device.endStep();
      await r;
    }
    const pending: Promise<ArrayLike<number>>[] = [];
    let last = NaN;
    const u0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < steps; i++) {
      const loss = m.record();
      if (lag >= 0 || i === steps - 1) pending.push(loss.toArray());
      device.endStep();
      while (pending.length > Math.max(lag, 0) || (i === steps - 1 && pending.length > 0)) {
        last = (await pending.shift()!)[0];
      }
    }
    const ms = performance.now() - t0;
    const u = process.cpuUsage(u0);
    // Samples per CPU-second of this process (every lavapipe thread too): robust to other load.
    return { sps: (steps * W2.batch * 1000) / ms, last, spCpuS: (steps * W2.batch * 1e6) / (u.user + u.system) };
  } finally {
    m.dispose();
    device.endStep();
  }
}
