/**
 * The model zoo (`flodl-webgpu/zoo`): seven models of flodl's data-parallel benchmark
 * (ddp-bench) with everything that trains them the benchmark's way.
 *
 * - On MNIST: `logistic` (logistic regression), `mlp` (784-256-10), `lenet` (LeNet-5 with
 *   batch norm and dropout) and `convAe` (a convolutional autoencoder).
 * - On the Brown Corpus as characters: `charRnn` (an LSTM) and `gptNano` (a causal
 *   transformer, `GptNano`).
 * - `resnet20`: `ResNet20` (basic blocks, BatchNorm, 16/32/64 channels, PyTorch's member
 *   names), the benchmark's CIFAR-10 network, here on MNIST (its 28×28 images on the 32×32
 *   grid by a stem padding of 3).
 * - `RECIPES[name]`: each model's data, loss, eval metric, optimizer and schedule, with the
 *   benchmark's epochs, batch and learning rate; `loadTaskData(name)` loads its train and
 *   test sets; `buildModel(name, device)` builds it by name.
 * - Single-device helpers: `trainEpoch` and `accuracy`.
 *
 * @example
 * ```ts ignore
 * import { Trainer } from "flodl-webgpu";
 * import { buildModel, loadTaskData, RECIPES } from "flodl-webgpu/zoo";
 *
 * const recipe = RECIPES.lenet;
 * const { train, test } = await loadTaskData("lenet", { subset: 6000 });
 * await Trainer.builder((d) => buildModel("lenet", d), (p) => recipe.optimizer(p, recipe.lr), recipe.loss)
 *   .dataset(train).evalDataset(test).evalFn(recipe.evaluate).epochs(1).run();
 * ```
 * @module
 */
export { accuracy, buildModel, CHAR_MODELS, charRnn, convAe, gptNano, lenet, logistic, mlp, MODELS, resnet20, trainEpoch } from "./models.ts";
export type { ModelName } from "./models.ts";
export { GptBlock, GptNano } from "./gpt_nano.ts";
export { BasicBlock, ResNet20 } from "./resnet.ts";
export type { ResNet20Options } from "./resnet.ts";
export type { GptNanoOptions } from "./gpt_nano.ts";
export {
  classifyLoss,
  loadTaskData,
  meanLoss,
  nextCharLoss,
  RECIPES,
  reconstructLoss,
  spreadSubset,
} from "./recipes.ts";
export type { Metric, Recipe, TaskData, TaskDataOptions } from "./recipes.ts";
