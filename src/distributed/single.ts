/**
 * The single-device path (spec §1.1): one rank, in process, no workers, no averaging.
 * Plans are synthesized per epoch (the whole permutation's full batches).
 */
import { Device } from "../gpu/mod.ts";
import type { Module } from "../nn/mod.ts";
import type { BuilderState } from "./builder.ts";
import { EvalCadence } from "./config.ts";
import type { RunEpochMetrics, RunObserver } from "./coordinator.ts";
import { describeError } from "./errors.ts";
import { DdpHandle, type TrainedState } from "./handle.ts";
import { setupFor } from "./launch.ts";
import { EpochAggregator } from "./metrics.ts";
import type { LayoutTable } from "./protocol.ts";
import { frameToFlat } from "./frames.ts";
import type { RankRuntime } from "./rank_runtime.ts";
import type { ResolvedRunConfig } from "./validate_config.ts";
import { runMonitor, type RunEvents } from "./run_monitor.ts";

async function quietly(name: string, fn: () => unknown): Promise<void> {
  try {
    await fn();
  } catch (e) {
    console.warn(`${name} failed: ${describeError(e)} (training continues)`);
  }
}

/** Train on one device in this thread. */
export async function runSingle<M extends Module>(
  state: BuilderState<M>,
  cfg: ResolvedRunConfig,
  observer: RunObserver,
): Promise<DdpHandle> {
  const existing = (() => {
    try {
      return Device.default;
    } catch {
      return undefined;
    }
  })();
  const runtime = state.createRuntime(existing);
  let monitor: RunEvents | undefined;
  const hello = await runtime.init(setupFor(state, cfg, 0, 1), {
    batch: (e) => {
      observer.batch?.(e);
      monitor?.batch(e);
    },
    heartbeat: () => {},
  });
  monitor = runMonitor(state, cfg, 1, [hello.adapter]);
  let stop = false;
  let begin!: (h: DdpHandle) => void;
  const started = new Promise<DdpHandle>((r) => (begin = r));
  const result = (async () => {
    try {
      return await trainSingle(state, cfg, runtime, hello.layout, await started, () => stop, monitor);
    } finally {
      await runtime.stop();
      await monitor?.close();
    }
  })();
  const handle = new DdpHandle(1, [hello.adapter], result, () => (stop = true));
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
): Promise<TrainedState> {
  const P = state.spec.dataset!.len() * cfg.augment;
  const full = Math.floor(P / cfg.batchSize) * cfg.batchSize;
  let globalStep = 0;
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
  for (let epoch = 0; epoch < cfg.numEpochs && !stopped(); epoch++) {
    monitor?.epochStart(epoch);
    const report = await runtime.train({
      epoch,
      ranges: [[0, full]],
      globalStep,
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
        await runtime.checkpoint(k).catch((e) => console.warn(`checkpointFn failed at epoch ${k}: ${describeError(e)}`));
      }
    }
  }
  await evaluate(cfg.numEpochs);
  const frame = await runtime.finalState();
  const flat = frameToFlat(frame, layout);
  const params = new Map(layout.params.map((e) => [e.name, { shape: e.shape, data: flat.params.slice(e.offset, e.offset + e.numel) }]));
  const buffers = new Map(layout.buffers.map((e) => [e.name, { shape: e.shape, data: flat.buffers.slice(e.offset, e.offset + e.numel) }]));
  return { params, buffers };
}
