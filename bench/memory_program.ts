/**
 * The program of `bench/memory.ts trainer`, re-entered by every rank: what `npm start` trains
 * (examples/train.ts) — the MNIST MLP 784-256-10, Adam 1e-3, cross-entropy, accuracy on the
 * test set after every epoch — on the first
 * `subset` training images. Each rank records its own JS heap, bind groups created and collections as scalars, so
 * the coordinator sees every isolate's heap in the epoch metrics (`perRank`).
 */
import {
  Adam,
  crossEntropy,
  EvalCadence,
  loadMnist,
  programArgs,
  recordScalar,
  type Tensor,
  Trainer,
  Variable,
} from "../src/index.ts";
import { accuracy, mlp } from "../src/zoo/mod.ts";

const args = programArgs() as { subset?: number; testSubset?: number };
const train = await loadMnist({ split: "train", limit: args.subset, normalize: true });
const test = await loadMnist({ split: "test", limit: args.testSubset, normalize: true });

export const builder = Trainer.builder(
  (device) => mlp(device),
  (params) => new Adam(params, { lr: 1e-3 }),
  (model, [x, y]: Tensor[]) => {
    const m = model.device().memory();
    const usage = Deno.memoryUsage();
    recordScalar("heapMiB", usage.heapUsed / 2 ** 20);
    recordScalar("heapTotalMiB", usage.heapTotal / 2 ** 20);
    recordScalar("externalMiB", usage.external / 2 ** 20);
    recordScalar("bindGroups", m.bindGroupsCreated);
    recordScalar("collections", m.collections);
    return crossEntropy(model.forward(new Variable(x)), y);
  },
)
  .dataset(train)
  .evalDataset(test)
  .evalFn((model, data) => accuracy(model, data))
  .evalEvery(EvalCadence.epochs(1));
