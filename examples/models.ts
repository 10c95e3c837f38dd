/**
 * The MNIST models of flodl's ddp-bench (spec §11.1), shared by `npm start`, the demo
 * page, the examples and the tests: logistic regression, the 784-256-10 MLP, LeNet.
 */
import {
  BatchNorm2d,
  Conv2d,
  crossEntropy,
  type Device,
  Flatten,
  Linear,
  MaxPool2d,
  type Module,
  noGrad,
  type Optimizer,
  ReLU,
  Sequential,
  Variable,
  type BatchDataSet,
  toDevice,
} from "../src/index.ts";

/** Model names the CLI and the demo accept. */
export const MODELS = ["logistic", "mlp", "lenet"] as const;
export type ModelName = (typeof MODELS)[number];

/** Flatten → Linear(784, 10). */
export function logistic(device: Device): Module {
  return new Sequential(new Flatten(), new Linear(784, 10, { device }));
}

/** Flatten → Linear(784, 256) → ReLU → Linear(256, 10). */
export function mlp(device: Device): Module {
  return new Sequential(new Flatten(), new Linear(784, 256, { device }), new ReLU(), new Linear(256, 10, { device }));
}

/** Conv(1,6,5)-BN-ReLU-MaxPool2 → Conv(6,16,5)-BN-ReLU-MaxPool2 → 256-120-84-10. */
export function lenet(device: Device): Module {
  return new Sequential(
    new Conv2d(1, 6, 5, { device }),
    new BatchNorm2d(6, { device }),
    new ReLU(),
    new MaxPool2d(2),
    new Conv2d(6, 16, 5, { device }),
    new BatchNorm2d(16, { device }),
    new ReLU(),
    new MaxPool2d(2),
    new Flatten(),
    new Linear(256, 120, { device }),
    new ReLU(),
    new Linear(120, 84, { device }),
    new ReLU(),
    new Linear(84, 10, { device }),
  );
}

/** Build a model by name. */
export function buildModel(name: ModelName, device: Device): Module {
  switch (name) {
    case "logistic":
      return logistic(device);
    case "mlp":
      return mlp(device);
    case "lenet":
      return lenet(device);
  }
}

/**
 * Classification accuracy of `model` on `data` (fields [image, label]), in eval mode,
 * batch by batch; frees each batch's memory as it goes.
 */
export async function accuracy(model: Module, data: BatchDataSet, batchSize = 1000): Promise<number> {
  const device = model.device();
  let correct = 0;
  const n = data.len();
  const wasTraining = model.training;
  model.eval();
  try {
    for (let start = 0; start < n; start += batchSize) {
      const idx = Array.from({ length: Math.min(batchSize, n - start) }, (_, i) => start + i);
      const [x, y] = toDevice(data.getBatch(idx), device);
      const pred = noGrad(() => model.forward(new Variable(x))).argmax(1);
      const [p, t] = await Promise.all([pred.toArray(), y.toArray()]);
      for (let i = 0; i < p.length; i++) if (p[i] === t[i]) correct++;
      device.endStep();
    }
  } finally {
    model.train(wasTraining);
  }
  return correct / n;
}

/**
 * One epoch of the plain engine loop (no trainer): batches of `batchSize` in the order of
 * `perm` (a partial last batch is dropped), cross-entropy, backward, `opt.step()`. The loss
 * is read back one step behind, so the GPU always has a step queued. Resolves with the
 * number of steps and their mean loss.
 */
export async function trainEpoch(
  model: Module,
  opt: Optimizer,
  data: BatchDataSet,
  perm: Uint32Array,
  batchSize: number,
): Promise<{ steps: number; meanLoss: number }> {
  const device = model.device();
  const steps = Math.floor(perm.length / batchSize);
  let lossSum = 0;
  let pending: Promise<ArrayLike<number>> | undefined;
  for (let s = 0; s < steps; s++) {
    const [x, y] = toDevice(data.getBatch(Array.from(perm.subarray(s * batchSize, (s + 1) * batchSize))), device);
    const loss = crossEntropy(model.forward(new Variable(x)), y);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    const read = loss.data.toArray();
    device.endStep();
    if (pending) lossSum += (await pending)[0];
    pending = read;
  }
  if (pending) lossSum += (await pending)[0];
  return { steps, meanLoss: steps ? lossSum / steps : NaN };
}
