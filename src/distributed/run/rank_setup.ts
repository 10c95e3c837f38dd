/**
 * What a rank is told at init (`RankSetup`), from the builder and the resolved config:
 * shared by the worker launch and the single-device path.
 */
import type { Module } from "../../nn/mod.ts";
import { lrScaleFactor } from "../coordinator/control/config.ts";
import type { ResolvedRunConfig } from "../coordinator/control/config.ts";
import type { RankSetup } from "../protocol/messages.ts";
import { rankCallbacks } from "../rank/rank_runtime.ts";
import type { BuilderState } from "./builder_state.ts";

/** Bytes in a GB as the `diskStage(GB)` knob counts them (GiB, as flodl's sizes). */
const GB = 2 ** 30;

/**
 * The setup a rank is told at init.
 * @param stageDir The run's disk-stage folder (run/disk_stage.ts), when `diskStage` is on
 *   (none for a remote rank: the folder is on the coordinator's machine).
 * @param localRanks Ranks sharing this rank's host memory (the RAM budget is split among them).
 */
export function setupFor<M extends Module>(
  state: BuilderState<M>,
  cfg: ResolvedRunConfig,
  rank: number,
  world: number,
  stageDir?: string,
  localRanks = world,
): RankSetup {
  const r = state.cluster?.ranks[rank] ?? {};
  return {
    rank,
    world,
    batchSize: cfg.batchSize,
    seed: cfg.seed,
    augment: cfg.augment,
    maxGradNorm: cfg.maxGradNorm,
    lrFactor: lrScaleFactor(world, cfg.lrScaleRatio),
    slowdown: r.slowdown ?? 1,
    pipelined: !(state.cluster?.ranks.some((x) => (x.slowdown ?? 1) > 1) ?? false),
    powerPreference: r.powerPreference,
    callbacks: rankCallbacks(state.spec as never),
    datasetLen: state.spec.dataset!.len(),
    hasScheduler: state.spec.scheduler !== undefined,
    data: {
      vramPool: cfg.vramPool,
      vramMaxUsage: cfg.vramMaxUsage,
      vramBytes: r.vramBytes,
      ramMaxUsage: cfg.ramMaxUsage,
      ramBytes: r.ramBytes,
      sampleCache: cfg.sampleCache,
      diskStageBytes: Math.floor(cfg.diskStageGb * GB),
      stageDir,
      localRanks,
    },
  };
}
