/**
 * `npm start`: data-parallel MNIST training in Deno, several ranks (Web Workers, each its
 * own WebGPU device), progress on the terminal, and at the end a dashboard, the record
 * log, the timeline and the model under runs/<name>/. `npm start -- --help` lists flags.
 *
 * This module is also every rank's entry: ranks re-run its top level (same Deno.args),
 * so the builder is created here, at top level; console output is coordinator-only.
 */
import {
  Adam,
  crossEntropy,
  type Device,
  ElCheConfig,
  encodeSafetensors,
  EvalCadence,
  isRank,
  loadMnist,
  observe,
  Timeline,
  Trainer,
  Variable,
} from "../src/index.ts";
import { HELP, parseTrainArgs, type TrainArgs } from "./args.ts";
import { exitNow } from "./exit.ts";
import { accuracy, buildModel } from "./models.ts";
import { Progress } from "./progress.ts";

function parse(): TrainArgs {
  try {
    return parseTrainArgs(Deno.args);
  } catch (e) {
    if (!isRank()) {
      console.error(`npm start: ${(e as Error).message}`);
      Deno.exit(2);
    }
    throw e;
  }
}

const args = parse();
if (args.help && !isRank()) {
  console.log(HELP);
  Deno.exit(0);
}

const train = await loadMnist({ split: "train", limit: args.subset || undefined, normalize: args.normalize });
const test = await loadMnist({ split: "test", limit: args.testSubset || undefined, normalize: args.normalize });

// Named after the model and the metric: the saved dashboard's title and eval chart read these names.
const model = Object.defineProperty((device: Device) => buildModel(args.model, device), "name", { value: args.model });

export const builder = Trainer.builder(
  model,
  (params) => new Adam(params, { lr: args.lr }),
  (model, [x, y]) => crossEntropy(model.forward(new Variable(x)), y),
)
  .dataset(train)
  .evalDataset(test)
  .evalFn(accuracy)
  .evalEvery(EvalCadence.epochs(1));

if (!isRank()) {
  await main(args);
  exitNow(0); // every file is written: skip a teardown that can crash (examples/exit.ts)
}

/** The bf16 wire is a cpu-* plane knob: nccl-* ranks reduce f32 in shared memory, with nothing on a wire. */
function bf16Wire(a: TrainArgs): boolean {
  return a.bf16 && a.ranks > 1 && !a.mode.startsWith("nccl");
}

async function main(a: TrainArgs): Promise<void> {
  const dir = `${a.out}/${a.name}`;
  await Deno.mkdir(dir, { recursive: true });
  const timeline = new Timeline();
  builder
    .batchSize(a.batch)
    .numEpochs(a.epochs)
    .elche(ElCheConfig.defaultFor(a.mode))
    .bf16Wire(bf16Wire(a))
    .cluster({ ranks: Array.from({ length: a.ranks }, (_, r) => ({ slowdown: r === a.slowRank ? a.slowdownFactor : 1 })) })
    .timeline(timeline)
    .recordLog(`${dir}/log`, a.logBytes)
    .saveDashboard(`${dir}/dashboard.html`)
    .reportsPerEpoch(4);
  if (a.maxAnchor) builder.maxAnchor(a.maxAnchor);

  const progress = new Progress({
    epochs: a.epochs,
    samplesPerEpoch: Math.floor(train.len() / a.batch) * a.batch,
    tty: Deno.stdout.isTerminal(),
  });
  observe(builder.state, { batch: (e) => progress.batch(e), reduce: (e) => progress.reduce(e) });
  builder.evalResultFn((epoch, acc) => progress.eval(epoch, acc));

  console.log(
    `flodl-webgpu: ${a.model} on MNIST (${train.len()} train / ${test.len()} test), ${a.ranks} rank(s), ${a.mode}, ` +
      `bf16 wire ${bf16Wire(a) ? "on" : "off"}, ${a.epochs} epoch(s), batch ${a.batch}` +
      (a.normalize ? "" : ", pixels not standardized") +
      (a.slowRank >= 0 ? `, rank ${a.slowRank} ${a.slowdownFactor}× slower` : ""),
  );
  const dropped = train.len() % a.batch;
  if (dropped > 0) {
    console.log(
      `${train.len()} samples: ${Math.floor(train.len() / a.batch)} batches of ${a.batch} per epoch, ` +
        `the last ${dropped} samples are dropped (drop-last)`,
    );
  }
  const t0 = performance.now();
  const handle = await builder.run();
  console.log(`ranks: ${handle.devices().map((d, r) => `${r}: ${d}`).join(", ")}`);
  for await (const m of handle) progress.epoch(m);
  const state = await handle.join();
  const secs = (performance.now() - t0) / 1000;
  progress.done();

  const tensors: Parameters<typeof encodeSafetensors>[0] = {};
  for (const [name, t] of [...state.params, ...state.buffers]) tensors[name] = { dtype: "F32", shape: t.shape, data: t.data };
  await Deno.writeFile(`${dir}/model.safetensors`, encodeSafetensors(tensors, {
    model: a.model,
    format: "pt",
    input: a.normalize ? `(x/255 - ${train.normalization.mean}) / ${train.normalization.std}` : "x/255",
  }));
  await Deno.writeTextFile(`${dir}/timeline.json`, JSON.stringify(timeline));
  await Deno.writeTextFile(`${dir}/timeline.csv`, timeline.toCSV());

  const final = handle.evals.filter((e) => e.value !== undefined).at(-1);
  console.log(
    `\nfinal test accuracy ${final ? (final.value! * 100).toFixed(2) + "%" : "n/a"} after ${a.epochs} epoch(s) in ${secs.toFixed(1)} s`,
  );
  console.log(`dashboard:  ${dir}/dashboard.html`);
  console.log(`record log: ${dir}/log/ (root.log, root/<host>/rank<k>.log)`);
  console.log(`timeline:   ${dir}/timeline.json, ${dir}/timeline.csv`);
  console.log(`model:      ${dir}/model.safetensors`);
}
