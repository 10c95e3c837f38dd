/**
 * One cold start in this (fresh) process: time from launch to the first training step of a
 * ddp-bench model, split into the program's imports and data, the device, the pipeline
 * compiles (count and ms each, solo) and the step itself. Ends the process as soon as every
 * rank reported its first step. bench/cold_start.ts starts one per model and rank count.
 *
 *   deno run -A --no-check bench/cold_start_one.ts <model> <ranks> <result.json>
 */
import { Device, observe, setProgramArgs } from "../src/index.ts";
import { exitNow } from "../examples/exit.ts";
import { MODELS, type ModelName } from "../src/zoo/mod.ts";

/** What one cold start measured; every time is ms since the process started. */
export interface ColdStart {
  model: ModelName;
  ranks: number;
  /** The program's module and its data loaded. */
  programMs: number;
  /** Solo: the device requested (the run builds its model on it). */
  deviceMs?: number;
  /** Each rank's first step reported (its batch event). */
  firstStepMs: number[];
  /** Each rank's first step as it measured it (recording + GPU, compiles included). */
  firstStepComputeMs: number[];
  /** Solo: the pipelines the run compiled before its first step ended, ms each. */
  compiles?: { key: string; ms: number }[];
}

const [model, ranksArg, out] = Deno.args;
if (!MODELS.includes(model as ModelName)) throw new RangeError(`cold_start_one.ts: model must be one of ${MODELS.join(", ")}, got ${JSON.stringify(model)}`);
const ranks = Number(ranksArg);
if (!Number.isInteger(ranks) || ranks < 1) throw new RangeError(`cold_start_one.ts: ranks must be an integer >= 1, got ${JSON.stringify(ranksArg)}`);
if (!out) throw new RangeError("cold_start_one.ts: expects <model> <ranks> <result.json>");

const batch = 64;
// Two batches per rank: the first step is all this measures; the eval set is the smallest.
setProgramArgs({ model, subset: 2 * batch * ranks, testSubset: 32, epochs: 1, batch });
const { builder } = await import("./ddp-bench/program.ts");
const programMs = performance.now();
let device: Device | undefined, deviceMs: number | undefined;
if (ranks === 1) {
  device = await Device.request({ label: "cold-start" });
  Device.setDefault(device);
  deviceMs = performance.now();
}
const firstStepMs: number[] = Array(ranks).fill(NaN), firstStepComputeMs: number[] = Array(ranks).fill(NaN);
let left = ranks;
const done = Promise.withResolvers<void>();
builder.batchSize(batch).numEpochs(1).cluster({ ranks: Array.from({ length: ranks }, () => ({})) });
observe(builder.state, {
  batch: (e) => {
    if (!Number.isNaN(firstStepMs[e.rank])) return;
    firstStepMs[e.rank] = performance.now();
    firstStepComputeMs[e.rank] = e.computeMs;
    if (--left === 0) done.resolve();
  },
});
const handle = await builder.run();
handle.join().catch((e) => done.reject(e));
await done.promise;
const result: ColdStart = {
  model: model as ModelName,
  ranks,
  programMs,
  deviceMs,
  firstStepMs,
  firstStepComputeMs,
  compiles: device?.compiles.slice(),
};
await Deno.writeTextFile(out, JSON.stringify(result) + "\n");
exitNow(0); // measured: the rest of the run and its teardown are not
