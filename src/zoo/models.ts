/**
 * Seven models of flodl's ddp-bench, shared by `npm start`, the demo
 * page, bench/ddp-bench, the examples and the tests: on MNIST logistic regression, the
 * 784-256-10 MLP, LeNet, the convolutional autoencoder and ResNet-20 (resnet.ts); on
 * characters (the Brown Corpus) char-rnn (LSTM) and gpt-nano (causal transformer,
 * gpt_nano.ts). One builder function per model; what each trains on, its loss, eval and
 * optimizer are in recipes.ts.
 */
import {
  BatchNorm2d,
  Conv2d,
  ConvTranspose2d,
  crossEntropy,
  type Device,
  Flatten,
  Embedding,
  Linear,
  LSTM,
  MaxPool2d,
  type Module,
  noGrad,
  type Optimizer,
  ReLU,
  Sequential,
  Sigmoid,
  Variable,
  type BatchDataSet,
  toDevice,
  Dropout,
} from "../index.ts";
import { GptNano } from "./gpt_nano.ts";
import { ResNet20 } from "./resnet.ts";

/** Model names the CLI and the demo accept. */
export const MODELS = ["logistic", "mlp", "lenet", "conv-ae", "char-rnn", "gpt-nano", "resnet20"] as const;
/** One of {@link MODELS}. */
export type ModelName = (typeof MODELS)[number];

/** The models that read characters (ids i32 [B, T]) rather than MNIST images. */
export const CHAR_MODELS: readonly ModelName[] = ["char-rnn", "gpt-nano"];

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

/**
 * Conv(1,16,3,s2,p1)-ReLU-Conv(16,32,3,s2,p1)-ReLU → ConvT(32,16,3,s2,p1,op1)-ReLU-
 * ConvT(16,1,3,s2,p1,op1)-Sigmoid: [n,1,28,28] → [n,16,14,14] → [n,32,7,7] → back to
 * [n,1,28,28] in [0, 1], trained with MSE against its input (pixels in [0, 1], not standardized).
 */
export function convAe(device: Device): Module {
  const down = { stride: 2, padding: 1, device };
  const up = { stride: 2, padding: 1, outputPadding: 1, device };
  return new Sequential(
    new Conv2d(1, 16, 3, down),
    new ReLU(),
    new Conv2d(16, 32, 3, down),
    new ReLU(),
    new ConvTranspose2d(32, 16, 3, up),
    new ReLU(),
    new ConvTranspose2d(16, 1, 3, up),
    new Sigmoid(),
  );
}

/**
 * Karpathy's char-rnn as flodl's: Embedding(V,128) → LSTM(128,256, 2 layers, batch-first) →
 * Dropout 0.2 → Linear(256,V). Ids i32 [B, T] → logits [B, T, V].
 */
export function charRnn(device: Device, vocabSize: number): Module {
  return new Sequential(
    new Embedding(vocabSize, 128, { device }),
    new LSTM(128, 256, { numLayers: 2, batchFirst: true, device }),
    new Dropout(0.2),
    new Linear(256, vocabSize, { device }),
  );
}

/** gpt-nano (gpt_nano.ts) over `vocabSize` characters, sequences up to 128. */
export function gptNano(device: Device, vocabSize: number): Module {
  return new GptNano(vocabSize, device);
}

/**
 * ResNet-20 (resnet.ts) on MNIST: one input channel, and a stem padding of 3 so the 28×28
 * images meet the stages on the 32×32 grid of the CIFAR-10 network (the same as padding each
 * image to 32×32 with zeros). [n, 1, 28, 28] → logits [n, 10].
 */
export function resnet20(device: Device): Module {
  return new ResNet20({ inChannels: 1, stemPadding: 3, device });
}

/**
 * Build a model by name. `vocabSize` (characters) is used by char-rnn and gpt-nano only.
 * @throws {RangeError} When a character model gets no vocabSize.
 */
export function buildModel(name: ModelName, device: Device, vocabSize?: number): Module {
  const chars = () => {
    if (!Number.isInteger(vocabSize) || vocabSize! < 1) {
      throw new RangeError(`buildModel: ${name} needs vocabSize, an integer >= 1, got ${vocabSize}`);
    }
    return vocabSize!;
  };
  switch (name) {
    case "logistic":
      return logistic(device);
    case "mlp":
      return mlp(device);
    case "lenet":
      return lenet(device);
    case "conv-ae":
      return convAe(device);
    case "char-rnn":
      return charRnn(device, chars());
    case "gpt-nano":
      return gptNano(device, chars());
    case "resnet20":
      return resnet20(device);
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
