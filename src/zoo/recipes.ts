/**
 * How each ddp-bench model trains: its data, loss, eval metric, optimizer and
 * schedule, with flodl's defaults. `npm start` (examples/train.ts) and bench/ddp-bench use
 * these, so a model trains the same way from both.
 */
import {
  Adam,
  type BatchDataSet,
  type CharVocab,
  CosineScheduler,
  crossEntropy,
  loadBrown,
  loadMnist,
  type Module,
  mseLoss,
  MultiStepLR,
  noGrad,
  type Optimizer,
  type Parameter,
  RMSprop,
  type Scheduler,
  SGD,
  type Tensor,
  toDevice,
  Variable,
  WarmupScheduler,
} from "../index.ts";
import { accuracy, CHAR_MODELS, type ModelName } from "./models.ts";

/** What the eval reports: test accuracy (higher is better), reconstruction MSE or validation CE (lower is better). */
export type Metric = "accuracy" | "mse" | "ce";

/** One model's training recipe. */
export interface Recipe {
  /** MNIST images or Brown Corpus characters. */
  data: "mnist" | "brown";
  /** What `evaluate` returns. */
  metric: Metric;
  /** Epochs of flodl's benchmark run. */
  epochs: number;
  /** Per-rank batch size. */
  batch: number;
  /** Peak learning rate (the schedule's base, if any). */
  lr: number;
  /** The optimizer over a rank's parameters at learning rate `lr`. */
  optimizer: (params: Parameter[], lr: number) => Optimizer;
  /** Per-step schedule over `totalSteps` global steps (every rank's batches counted), if any. */
  scheduler?: (lr: number, totalSteps: number) => Scheduler;
  /** The training loss of one batch (fields as the dataset's). */
  loss: (model: Module, batch: Tensor[]) => Variable;
  /** The eval metric over a held-out dataset. */
  evaluate: (model: Module, data: BatchDataSet) => Promise<number>;
}

/** Cross-entropy of logits [N, C] against labels [N]. */
export function classifyLoss(model: Module, [x, y]: Tensor[]): Variable {
  return crossEntropy(model.forward(new Variable(x)), y);
}

/** MSE of the reconstruction against the input image itself (the label is ignored). */
export function reconstructLoss(model: Module, [x]: Tensor[]): Variable {
  return mseLoss(model.forward(new Variable(x)), x);
}

/** Next-character cross-entropy over every position: logits [B, T, V] against targets [B, T]. */
export function nextCharLoss(model: Module, [ids, target]: Tensor[]): Variable {
  const logits = model.forward(new Variable(ids));
  const v = logits.shape[logits.ndim - 1], rows = target.shape.reduce((a, b) => a * b, 1);
  return crossEntropy(logits.reshape([rows, v]), target.reshape([rows]));
}

/**
 * The mean of a per-batch mean loss over `data`, in eval mode, without the tape, batch by
 * batch (each weighted by its rows, so a partial last batch counts what it holds).
 */
export async function meanLoss(
  model: Module,
  data: BatchDataSet,
  loss: (model: Module, batch: Tensor[]) => Variable,
  batchSize: number,
): Promise<number> {
  const device = model.device();
  const n = data.len();
  const wasTraining = model.training;
  model.eval();
  let sum = 0;
  try {
    for (let start = 0; start < n; start += batchSize) {
      const idx = Array.from({ length: Math.min(batchSize, n - start) }, (_, i) => start + i);
      const batch = toDevice(data.getBatch(idx), device);
      const value = await noGrad(() => loss(model, batch)).data.toArray();
      sum += value[0] * idx.length;
      device.endStep();
    }
  } finally {
    model.train(wasTraining);
  }
  return sum / n;
}

// foreach: one dispatch updates every parameter, and a rank's bf16 wire frame packs them in
// place in one more (the per-tensor update's bits; test/gpu/optim/multi_tensor_test.ts).
const adam = (params: Parameter[], lr: number) => new Adam(params, { lr, foreach: true });
const mnist = (metric: Metric, loss: Recipe["loss"], evaluate: Recipe["evaluate"]): Recipe => ({
  data: "mnist",
  metric,
  epochs: 5,
  batch: 64,
  lr: 1e-3,
  optimizer: adam,
  loss,
  evaluate,
});
const validationCe = (model: Module, data: BatchDataSet) => meanLoss(model, data, nextCharLoss, 64);

/** The recipes by model name. */
export const RECIPES: Record<ModelName, Recipe> = {
  logistic: mnist("accuracy", classifyLoss, (m, d) => accuracy(m, d)),
  mlp: mnist("accuracy", classifyLoss, (m, d) => accuracy(m, d)),
  lenet: mnist("accuracy", classifyLoss, (m, d) => accuracy(m, d)),
  "conv-ae": mnist("mse", reconstructLoss, (m, d) => meanLoss(m, d, reconstructLoss, 500)),
  // Karpathy's char-rnn: RMSprop 2e-3, no schedule.
  "char-rnn": {
    data: "brown",
    metric: "ce",
    epochs: 50,
    batch: 64,
    lr: 2e-3,
    optimizer: (params, lr) => new RMSprop(params, { lr, foreach: true }),
    loss: nextCharLoss,
    evaluate: validationCe,
  },
  // nanoGPT: Adam 3e-4, linear warmup over the first 20% of the steps, then cosine to 1e-5.
  "gpt-nano": {
    data: "brown",
    metric: "ce",
    epochs: 50,
    batch: 64,
    lr: 3e-4,
    optimizer: adam,
    scheduler: (lr, total) => {
      const warmup = Math.max(1, Math.floor(total / 5));
      return new WarmupScheduler(new CosineScheduler(lr, 1e-5, Math.max(1, total - warmup)), lr, warmup);
    },
    loss: nextCharLoss,
    evaluate: validationCe,
  },
  // He et al. (2016) for CIFAR-10, as flodl's ddp-bench: SGD with momentum 0.9 and weight
  // decay 1e-4 at 0.1, divided by 10 at half and at three quarters of the steps; on MNIST,
  // with the other image models' epochs and batch.
  resnet20: {
    ...mnist("accuracy", classifyLoss, (m, d) => accuracy(m, d, 500)),
    lr: 0.1,
    optimizer: (params, lr) => new SGD(params, { lr, momentum: 0.9, weightDecay: 1e-4, foreach: true }),
    scheduler: (lr, total) => new MultiStepLR(lr, [Math.floor(total / 2), Math.floor((total * 3) / 4)], 0.1),
  },
};

/** What a model trains and evaluates on. */
export interface TaskData {
  /** The training set: [image f32 [1, 28, 28], label i32] or [ids i32 [128], next ids i32 [128]] a sample. */
  train: BatchDataSet;
  /** The held-out set the eval reads (MNIST test, Brown validation). */
  test: BatchDataSet;
  /** Character models: the corpus's vocabulary. */
  vocab?: CharVocab;
}

/** Options of {@link loadTaskData}. */
export interface TaskDataOptions {
  /** Training samples (images or sequences of 128 characters); 0 or absent = all. */
  subset?: number;
  /** Held-out samples; 0 or absent = all. */
  testSubset?: number;
  /** MNIST models but conv-ae: standardize pixels (torchvision's Normalize). conv-ae refuses true. */
  normalize?: boolean;
  /** Browsers: where the files are served (see loadMnist and loadBrown). */
  baseUrl?: string;
}

/**
 * Every `len / n`-th sample of `data`, n of them: a fixed subset that spans the whole set
 * (the Brown texts are grouped by genre, so the first n sequences would all be news).
 * @throws {RangeError} When n is not an integer in [1, data.len()].
 */
export function spreadSubset(data: BatchDataSet, n: number, what: string): BatchDataSet {
  const len = data.len();
  if (!Number.isInteger(n) || n < 1 || n > len) {
    throw new RangeError(`${what} must be an integer in [1, ${len}], got ${n}`);
  }
  if (n === len) return data;
  const pick = Array.from({ length: n }, (_, i) => Math.floor((i * len) / n));
  return {
    fields: data.fields,
    len: () => n,
    getBatch: (indices) => data.getBatch(indices.map((i) => {
      if (!Number.isInteger(i) || i < 0 || i >= n) throw new RangeError(`${what}: index ${i} is out of range for ${n} samples`);
      return pick[i];
    })),
  };
}

/**
 * Load what `model` trains on: MNIST train/test (pixels in [0, 1] for conv-ae, which
 * reconstructs them through a sigmoid), or the Brown Corpus train/validation split cut into
 * sequences of 128, subsets spread over each split.
 * @throws {RangeError} For a subset larger than the data, or normalize with conv-ae.
 */
export async function loadTaskData(model: ModelName, options: TaskDataOptions = {}): Promise<TaskData> {
  if (CHAR_MODELS.includes(model)) {
    const corpus = await loadBrown({ baseUrl: options.baseUrl });
    return {
      train: options.subset ? spreadSubset(corpus.train, options.subset, "--subset (train sequences)") : corpus.train,
      test: options.testSubset
        ? spreadSubset(corpus.validation, options.testSubset, "--test-subset (validation sequences)")
        : corpus.validation,
      vocab: corpus.vocab,
    };
  }
  if (model === "conv-ae" && options.normalize) {
    throw new RangeError(`conv-ae reconstructs pixels in [0, 1] through a sigmoid: normalize must be off, got on`);
  }
  const normalize = model === "conv-ae" ? false : options.normalize ?? true;
  const [train, test] = await Promise.all([
    loadMnist({ split: "train", limit: options.subset || undefined, normalize, baseUrl: options.baseUrl }),
    loadMnist({ split: "test", limit: options.testSubset || undefined, normalize, baseUrl: options.baseUrl }),
  ]);
  return { train, test };
}
