/**
 * The model zoo (`flodl-webgpu/zoo`): the six models of flodl's data-parallel benchmark
 * (ddp-bench) with everything that trains them the benchmark's way.
 *
 * - On MNIST: `logistic` (logistic regression), `mlp` (784-256-10), `lenet` (LeNet-5 with
 *   batch norm and dropout) and `convAe` (a convolutional autoencoder).
 * - On the Brown Corpus as characters: `charRnn` (an LSTM) and `gptNano` (a causal
 *   transformer, `GptNano`).
 * - `ResNet20` (basic blocks, BatchNorm, 16/32/64 channels) for 32×32 images, PyTorch's
 *   member names; not yet one of the benchmark's models (`MODELS`).
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
export { accuracy, buildModel, CHAR_MODELS, charRnn, convAe, gptNano, lenet, logistic, mlp, MODELS, trainEpoch } from "./models.ts";
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
