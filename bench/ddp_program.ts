/**
 * The trainer bench's program (bench/ddp.ts in Deno, bench/ddp_page.ts in Chromium): the
 * MNIST MLP 784-256-10, Adam 1e-3, cross-entropy, on the first `subset` training images.
 * Ranks re-import this module and see the same
 * `programArgs()`: { subset, baseUrl? }.
 */
import { Adam, crossEntropy, loadMnist, programArgs, type Tensor, Trainer, Variable } from "../src/index.ts";
import { mlp } from "../src/zoo/mod.ts";

const args = programArgs() as { subset?: number; baseUrl?: string };
const train = await loadMnist({ split: "train", limit: args.subset, baseUrl: args.baseUrl });

export const builder = Trainer.builder(
  (device) => mlp(device),
  (params) => new Adam(params, { lr: 1e-3 }),
  (model, [x, y]: Tensor[]) => crossEntropy(model.forward(new Variable(x)), y),
).dataset(train);
