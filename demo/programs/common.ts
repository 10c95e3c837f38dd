/**
 * What the demo's three program modules share: the MNIST subsets named by the page's
 * program arguments, and the rank-side pieces every program attaches (datasets, eval).
 *
 * Runs in the page and in every rank worker (the program modules are re-entered there):
 * no DOM access here.
 */
import {
  Adam,
  type BatchDataSet,
  type CharVocab,
  crossEntropy,
  type DdpBuilder,
  EvalCadence,
  loadMnist,
  type MnistDataSet,
  type Module,
  type Optimizer,
  type Parameter,
  programArgs,
  type Tensor,
  Variable,
} from "../../src/index.ts";
import { accuracy } from "../../src/zoo/mod.ts";
import { DEFAULT_SIZES } from "../settings.ts";

/** Where the page's server puts the MNIST IDX files (vite.config.ts serves and builds them). */
export const MNIST_BASE_URL = "/mnist/";

/** The data an MNIST program trains and evaluates on. */
export interface MnistData {
  kind: "mnist";
  train: MnistDataSet;
  test: MnistDataSet;
}

/** The data a character-level program trains and evaluates on (sequences of the Brown Corpus). */
export interface TextData {
  kind: "text";
  train: BatchDataSet;
  test: BatchDataSet;
  vocab: CharVocab;
}

/** The data a program trains and evaluates on. */
export type ProgramData = MnistData | TextData;

/** The sizes in the program arguments (`{ subset, test }`), validated against MNIST's splits. */
export function subsetSizes(args: Record<string, unknown> = programArgs()): { subset: number; test: number } {
  const pick = (key: string, fallback: number, max: number) => {
    const v = args[key] ?? fallback;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > max) {
      throw new RangeError(`demo program: "${key}" must be an integer in [1, ${max}], got ${JSON.stringify(v)}`);
    }
    return v;
  };
  return { subset: pick("subset", DEFAULT_SIZES.subset, 60_000), test: pick("test", DEFAULT_SIZES.test, 10_000) };
}

/** Load the train and test subsets the program arguments ask for. */
export async function loadData(): Promise<MnistData> {
  const { subset, test } = subsetSizes();
  const [train, held] = await Promise.all([
    loadMnist({ split: "train", limit: subset, baseUrl: MNIST_BASE_URL }),
    loadMnist({ split: "test", limit: test, baseUrl: MNIST_BASE_URL }),
  ]);
  return { kind: "mnist", train, test: held };
}

/** Adam, lr 1e-3 (scaled by the trainer's lrScaleRatio with the world size). */
export function adam(params: Parameter[]): Optimizer {
  return new Adam(params, { lr: 1e-3 });
}

/** Cross-entropy of the model's logits against the labels. */
export function classify(model: Module, [x, y]: Tensor[]): Variable {
  return crossEntropy(model.forward(new Variable(x)), y);
}

/**
 * The rank-side pieces every demo program attaches to its builder: the training set,
 * the held-out set and accuracy as the eval, once per epoch; coordinator defaults the
 * page overrides (batch size, epochs).
 */
export function attach<M extends Module>(builder: DdpBuilder<M>, data: MnistData): DdpBuilder<M> {
  return builder
    .dataset(data.train)
    .evalDataset(data.test)
    .evalFn((model, held) => accuracy(model, held, 500))
    .evalEvery(EvalCadence.epochs(1))
    .batchSize(32)
    .numEpochs(1);
}
