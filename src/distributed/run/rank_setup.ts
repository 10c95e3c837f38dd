/**
 * What a rank is told at init (`RankSetup`), from the builder and the resolved config:
 * shared by the worker launch and the single-device path.
 */
import type { Module } from "../../nn/mod.ts";
import { lrScaleFactor } from "../coordinator/config.ts";
import type { ResolvedRunConfig } from "../coordinator/config.ts";
import type { RankSetup } from "../protocol/messages.ts";
import { rankCallbacks } from "../rank/rank_runtime.ts";
import type { BuilderState } from "./builder_state.ts";

/** The setup a rank is told at init. */
export function setupFor<M extends Module>(state: BuilderState<M>, cfg: ResolvedRunConfig, rank: number, world: number): RankSetup {
  const r = state.cluster?.ranks[rank] ?? {};
  return {
    rank,
    world,
    batchSize: cfg.batchSize,
    seed: cfg.seed,
    augment: cfg.augment,
    maxGradNorm: cfg.maxGradNorm,
    lrFactor: lrScaleFactor(world, cfg.lrScaleRatio),
    bf16Wire: cfg.elche.bf16Wire,
    slowdown: r.slowdown ?? 1,
    pipelined: !(state.cluster?.ranks.some((x) => (x.slowdown ?? 1) > 1) ?? false),
    powerPreference: r.powerPreference,
    callbacks: rankCallbacks(state.spec as never),
    datasetLen: state.spec.dataset!.len(),
    hasScheduler: state.spec.scheduler !== undefined,
  };
}
