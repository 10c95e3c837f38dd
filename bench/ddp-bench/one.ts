/**
 * One ddp-bench run in its own process (bench/ddp-bench/run.ts starts one per model × mode,
 * so a run's memory and devices go with it): train, time it on the coordinator, and write
 * the figures of flodl's report as JSON.
 *
 *   deno run -A --no-check bench/ddp-bench/one.ts '<RunConfig as JSON>' <result.json>
 */
import { ElCheConfig, observe, setProgramArgs } from "../../src/index.ts";
import { exitNow } from "../../examples/exit.ts";
import type { ProgramArgs } from "./program.ts";
import { type Mode, type RunResult, summarize } from "./result.ts";

/** One configuration: the program's arguments, the mode and the ranks. */
export interface RunConfig extends ProgramArgs {
  mode: Mode;
  /** Per-rank slowdown factors (1 = full speed); its length is the rank count. */
  slowdown: number[];
}

const [json, outPath] = Deno.args;
if (!json || !outPath) throw new RangeError(`bench/ddp-bench/one.ts: expects '<config json>' <result.json>, got ${JSON.stringify(Deno.args)}`);
const cfg = JSON.parse(json) as RunConfig;
const ranks = cfg.slowdown.length;
setProgramArgs({ model: cfg.model, subset: cfg.subset, testSubset: cfg.testSubset, epochs: cfg.epochs, batch: cfg.batch });
const { builder, loaded } = await import("./program.ts");

const batches: { rank: number; epoch: number; ms: number; computeMs: number }[] = [];
const reduces: { epoch: number; ms: number; averageMs: number }[] = [];
builder
  .batchSize(cfg.batch)
  .numEpochs(cfg.epochs)
  .cluster({ ranks: cfg.slowdown.map((slowdown) => ({ slowdown })) });
if (cfg.mode !== "solo") builder.elche(ElCheConfig.defaultFor(cfg.mode)).bf16Wire(true);
observe(builder, {
  batch: (e) => {
    batches.push({ rank: e.rank, epoch: e.epoch, ms: e.ms, computeMs: e.computeMs });
  },
  reduce: (e) => {
    reduces.push({ epoch: e.epoch, ms: e.ms, averageMs: e.averageMs });
  },
});
const t0 = performance.now();
const handle = await builder.run();
await handle.join();
const totalMs = performance.now() - t0;
const result: RunResult = summarize({
  cfg,
  ranks,
  loaded,
  totalMs,
  history: handle.history,
  evals: handle.evals,
  batches,
  reduces,
});
await Deno.writeTextFile(outPath, JSON.stringify(result, null, 1) + "\n");
exitNow(0); // every file is written: skip a teardown that can crash (examples/exit.ts)
