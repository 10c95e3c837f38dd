/**
 * The program one ddp-bench run trains (bench/ddp-bench/one.ts sets its arguments, then
 * imports it; rank workers re-import it with the same `programArgs()`): a model of flodl's
 * ddp-bench with its recipe (src/zoo/recipes.ts), its data subset, a per-epoch eval and, for
 * gpt-nano, the warmup + cosine schedule over the run's steps.
 */
import { type Device, EvalCadence, programArgs, Trainer } from "../../src/index.ts";
import { buildModel, MODELS, type ModelName } from "../../src/zoo/mod.ts";
import { loadTaskData, RECIPES } from "../../src/zoo/mod.ts";

/** What one.ts passes (JSON through `setProgramArgs`). */
export interface ProgramArgs {
  model: ModelName;
  /** Training samples (images or sequences; spread over the split for characters). */
  subset: number;
  /** Held-out samples. */
  testSubset: number;
  epochs: number;
  batch: number;
  /** In a browser: the URL base the data files are fetched from (bench/cold_start_page.ts). */
  baseUrl?: string;
}

/** Seconds a rank may stay silent (flodl's heartbeat_timeout_secs) before it counts as lost. */
export const HEARTBEAT_SECS = 600;

const args = programArgs() as unknown as ProgramArgs;
if (!MODELS.includes(args.model)) {
  throw new RangeError(`bench/ddp-bench/program.ts: programArgs().model must be one of ${MODELS.join(", ")}, got ${JSON.stringify(args.model)}`);
}
const recipe = RECIPES[args.model];
// MNIST classifiers standardized as npm start does; conv-ae reads pixels in [0, 1].
const data = await loadTaskData(args.model, { subset: args.subset, testSubset: args.testSubset, baseUrl: args.baseUrl });
const vocabSize = data.vocab?.itos.length;

/** Training samples, held-out samples and vocabulary actually loaded (the coordinator reports them). */
export const loaded = { train: data.train.len(), test: data.test.len(), vocabSize };

export const builder = Trainer.builder(
  (device: Device) => buildModel(args.model, device, vocabSize),
  (params) => recipe.optimizer(params, recipe.lr),
  recipe.loss,
)
  .dataset(data.train)
  .evalDataset(data.test)
  .evalFn(recipe.evaluate)
  .evalEvery(EvalCadence.epochs(1))
  // On lavapipe one gpt-nano step of 64 sequences takes 20 s and more with two ranks on two
  // cores; a rank is silent while it computes, so the default 30 s would declare it lost.
  .heartbeatTimeoutSecs(HEARTBEAT_SECS);
// Global steps: every rank's batches count.
const schedule = recipe.scheduler;
if (schedule) builder.scheduler(() => schedule(recipe.lr, args.epochs * Math.floor(data.train.len() / args.batch)));
