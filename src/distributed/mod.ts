export { DdpBuilder, Trainer } from "./builder.ts";
export type { BuilderState, ClusterSpec, RankSpecification } from "./builder.ts";
export {
  ApplyPolicy,
  AverageBackend,
  defaultRunConfig,
  ElCheConfig,
  ElCheMode,
  EpochCallbackPolicy,
  EvalCadence,
  lrScaleFactor,
  Reduction,
} from "./config.ts";
export type { DdpRunConfig, ElCheFields } from "./config.ts";
export { CoopWorker as Worker, CoopWorker } from "./coop.ts";
export type { StepOutcome } from "./coop.ts";
export type { ReduceEvent, RunObserver } from "./coordinator.ts";
export type { BatchEvent, ChunkPlan } from "./protocol.ts";
export type { RunEvents } from "./run_monitor.ts";
export { RankLostError } from "./errors.ts";
export { DdpHandle } from "./handle.ts";
export type { EvalRecord, TrainedState } from "./handle.ts";
export { DivergenceReport, MsfGuard, NoGuard, TrendGuard } from "./guards.ts";
export type { ConvergenceGuard, Verdict } from "./guards.ts";
export { observe } from "./launch.ts";
export { MaxFailureThreshold } from "./max_failure.ts";
export type { EpochMetrics, RunEpochMetrics } from "./metrics.ts";
export { DiLoCo, OuterAvg, SlowMo } from "./outer.ts";
export type { OuterOptimizer } from "./outer.ts";
export { permutation, PickKey } from "./permutation.ts";
export type { EvalFn, ModelFactory, OptimFactory, RankWorker, TrainFn, TransformFn } from "./rank_runtime.ts";
export { isRank, programArgs, setProgramArgs } from "./reentry.ts";
export { recordScalar } from "./scalars.ts";
export { archiveToBundle, bundlePaths, bundleToArchive, readBundle, readBundleMeta, readBundleModel, readBundleOptim, readBundleOuter, writeBundle } from "./bundle.ts";
export { BUNDLE_SCHEMA_VERSION, checkResumeCompatible, parseBundleMeta } from "./bundle_meta.ts";
export type { BundleMeta } from "./bundle_meta.ts";
