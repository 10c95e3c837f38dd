/**
 * The single-device path: one rank, in process, no workers, no averaging.
 * Plans are synthesized per epoch (the whole permutation's full batches).
 */
import { Device } from "../../gpu/mod.ts";
import type { Module } from "../../nn/mod.ts";
import type { BuilderState } from "./builder_state.ts";
import { EvalCadence } from "../coordinator/control/config.ts";
import type { RunObserver } from "../coordinator/coordinator.ts";
import { quietly } from "../coordinator/transport/callbacks.ts";
import { trainedState } from "../coordinator/report/observer.ts";
import { describeError } from "../protocol/errors.ts";
import { DdpHandle, type TrainedState } from "./handle.ts";
import { setupFor } from "./rank_setup.ts";
import { EpochAggregator, type RunEpochMetrics } from "../coordinator/report/metrics.ts";
import type { LayoutTable } from "../protocol/messages.ts";
import { frameToFlat } from "../protocol/frame_codec.ts";
import type { RankRuntime } from "../rank/rank_runtime.ts";
import type { ResolvedRunConfig } from "./validate_config.ts";
import type { Persistence } from "../coordinator/persistence/persistence.ts";
import type { SaveReason } from "../coordinator/control/max_failure.ts";
import { runMonitor, type RunEvents } from "./run_monitor.ts";
import type { DiskStage } from "./disk_stage.ts";


/** Train on one device in this thread. */
export async function runSingle<M extends Module>(
  state: BuilderState<M>,
  cfg: ResolvedRunConfig,
  observer: RunObserver,
  persistence: Persistence = {},
  stage?: DiskStage,
): Promise<DdpHandle> {
  const existing = (() => {
    try {
      return Device.default;
    } catch {
      return undefined;
    }
  })();
  const runtime = state.createRuntime(existing);
  const events: { monitor?: RunEvents } = {};
  const hello = await runtime.init(setupFor(state, cfg, 0, 1, stage?.dir), {
    batch: (e) => {
      observer.batch?.(e);
      events.monitor?.batch(e);
    },
    heartbeat: () => {},
    compiling: () => {},
  });
  const monitor = events.monitor = runMonitor(state, cfg, 1, [hello.adapter], [{ host: "", adapter: hello.adapter, transport: "local" }]);
  let stop = false;
  let begin!: (h: DdpHandle) => void;
  const started = new Promise<DdpHandle>((r) => (begin = r));
  const result = (async () => {
    try {
      return await trainSingle(state, cfg, runtime, hello.layout, await started, () => stop, monitor, persistence);
    } finally {
      await runtime.stop();
      await stage?.remove();
      await monitor?.close();
      await persistence.writer?.flush().catch(() => {});
    }
  })();
  const handle = new DdpHandle(1, [hello.adapter], result, () => (stop = true), async () => [await runtime.memory()]);
  begin(handle);
  return handle;
}

async function trainSingle<M extends Module>(
  state: BuilderState<M>,
  cfg: ResolvedRunConfig,
  runtime: RankRuntime<M>,
  layout: LayoutTable,
  handle: DdpHandle,
  stopped: () => boolean,
  monitor?: RunEvents,
  persistence: Persistence = {},
): Promise<TrainedState> {
  const P = state.spec.dataset!.len() * cfg.augment;
  const full = Math.floor(P / cfg.batchSize) * cfg.batchSize;
  const resume = persistence.resume;
  // One rank never averages, so every step it takes is a step since the last averaging:
  // the rank asks its scheduler for lr(startStep + steps so far), and each epoch's plan
  // carries the step the run started from (advancing it as well counted each
  // epoch's steps twice). `globalStep` is what a checkpoint records.
  const startStep = resume?.globalStep ?? 0;
  let globalStep = startStep;
  const save = async (epoch: number, reason: SaveReason) => {
    const writer = persistence.writer;
    if (!writer) return;
    await writer.save(async () => {
      const flat = frameToFlat(await runtime.finalState(), layout);
      const slice = (e: LayoutTable["params"][number], a: Float32Array) => ({ name: e.name, shape: e.shape, data: a.slice(e.offset, e.offset + e.numel) });
      return {
        model: { params: layout.params.map((e) => slice(e, flat.params)), buffers: layout.buffers.map((e) => slice(e, flat.buffers)) },
        optim: await runtime.optimizerState(),
        meta: {
          epoch,
          global_step: globalStep,
          sync_round: 0,
          world_size_at_save: 1,
          save_reason: reason,
          coverage: { seed: cfg.seed, epoch_splits: cfg.epochSplits, batch_size: cfg.batchSize, per_epoch: [] },
          seed: cfg.seed,
          batch_size: cfg.batchSize,
        },
      };
    });
  };
  const evaluate = async (epoch: number) => {
    if (!state.spec.evalFn || !state.spec.evalDataset) return;
    const out = await runtime.evaluate(epoch);
    handle.evaluated({ ...out, rank: 0 });
    if (out.error !== undefined) console.warn(`evalFn failed at epoch ${epoch}: ${out.error}`);
    else {
      monitor?.evaluated(epoch, out.value!);
      await quietly("evalResultFn", () => state.evalResultFn?.(epoch, out.value!));
    }
  };
  let epoch = resume?.startEpoch ?? 0;
  for (; epoch < cfg.numEpochs && !stopped(); epoch++) {
    monitor?.epochStart(epoch);
    // A resumed epoch runs only what its checkpoint left uncovered.
    const cov = resume?.coverage.get(epoch);
    const ranges: [number, number][] = cov ? cov.uncovered_ranges.map(([o, n]) => [o, n]) : [[0, full]];
    const report = await runtime.train({
      epoch,
      ranges,
      globalStep: startStep,
      version: 0,
      epochFn: state.spec.epochFn !== undefined,
    });
    globalStep += report.batches;
    const agg = new EpochAggregator(epoch, 1);
    agg.add(report);
    const m: RunEpochMetrics = {
      ...agg.finish(),
      reduces: 0,
      wireBytesPerReduce: 0,
      reduceMs: 0,
      anchor: 0,
      batchCounts: [report.batches],
    };
    handle.metrics(m);
    monitor?.epochEnd(m);
    await quietly("metricsFn", () => state.metricsFn?.(m));
    const k = epoch + 1;
    if (k < cfg.numEpochs) {
      if (EvalCadence.due(cfg.evalEvery, k)) await evaluate(k);
      if (cfg.checkpointEvery && k % cfg.checkpointEvery === 0) {
        if (state.spec.checkpointFn) {
          await runtime.checkpoint(k).catch((e) => console.warn(`checkpointFn failed at epoch ${k}: ${describeError(e)}`));
        }
        await save(k, "checkpoint");
      }
    }
  }
  await save(epoch, stopped() ? "graceful_shutdown" : "checkpoint");
  await evaluate(cfg.numEpochs);
  const flat = frameToFlat(await runtime.finalState(), layout);
  return trainedState(layout, flat.params, flat.buffers);
}
