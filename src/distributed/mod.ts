export { DdpBuilder, observe, Trainer } from "./run/builder.ts";
export type { ClusterSpec, RankSpecification } from "./run/builder.ts";
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
} from "./coordinator/control/config.ts";
export type { DdpRunConfig, ElCheFields } from "./coordinator/control/config.ts";
export { CoopWorker } from "./run/coop.ts";
export type { StepOutcome } from "./run/coop.ts";
export type { ReduceEvent, RunObserver } from "./coordinator/coordinator.ts";
export type { BatchEvent, ChunkPlan } from "./protocol/messages.ts";
export type { RunEvents } from "./run/run_monitor.ts";
export { RankLostError } from "./protocol/errors.ts";
export { DdpHandle } from "./run/handle.ts";
export type { EvalRecord, TrainedState } from "./run/handle.ts";
export { DivergenceReport, MsfGuard, NoGuard, TrendGuard } from "./coordinator/control/guards.ts";
export type { ConvergenceGuard, Verdict } from "./coordinator/control/guards.ts";
export { MaxFailureThreshold } from "./coordinator/control/max_failure.ts";
export type { EpochMetrics, RunEpochMetrics } from "./coordinator/report/metrics.ts";
export { DiLoCo, MomentumOuter, OuterAvg, SlowMo } from "./protocol/outer.ts";
export type { MomentumOptions, OuterOptimizer } from "./protocol/outer.ts";
export { permutation, PickKey } from "./rank/permutation.ts";
export type { EvalFn, ModelFactory, OptimFactory, RankWorker, TrainFn, TransformFn } from "./rank/rank_runtime.ts";
export { isRank, programArgs, setProgramArgs } from "./run/reentry.ts";
export { recordScalar } from "./rank/scalars.ts";
export { archiveToBundle, bundlePaths, bundleToArchive, readBundle, readBundleMeta, readBundleModel, readBundleOptim, readBundleOuter, writeBundle } from "./coordinator/persistence/bundle.ts";
export { BUNDLE_SCHEMA_VERSION, checkResumeCompatible, parseBundleMeta } from "./coordinator/persistence/bundle_meta.ts";
export type { BundleCoverage, BundleElCheState, BundleMeta, BundleMetaInput, ResumeRun } from "./coordinator/persistence/bundle_meta.ts";
export type { ElCheState, Phase } from "./coordinator/control/elche.ts";
export type { EpochCoverage } from "./coordinator/schedule/chunk_pool.ts";
export type { Bundle, BundleOuter, BundleParts, BundlePaths } from "./coordinator/persistence/bundle.ts";
export type { SaveReason } from "./coordinator/control/max_failure.ts";
export type { RankPlace, ReduceExtra, RunSink } from "./coordinator/report/observer.ts";
export type { CallSite } from "./run/reentry.ts";
export type { Rng } from "./rank/permutation.ts";
export type { PickRange } from "./protocol/messages.ts";
export type { LayoutDigest } from "./protocol/remote_hello.ts";
export { joinRun, joinTokenFor } from "./run/join.ts";
export type { JoinOptions, RemoteRank } from "./run/join.ts";
export { joinRelay } from "./run/relay.ts";
export { certificateDigests, packBytes, packDataset, readTlsFiles, selfSignedCertificate, serveWalkIn, startWalkIn, walkInData } from "./serve/mod.ts";
export type { CertificateDigests, TlsPair } from "./serve/mod.ts";
export type { WalkInDigests, WalkInFiles, WalkInServeOptions, WalkInServer } from "./serve/mod.ts";
export type { RelayOptions, RunningRelay } from "./run/relay.ts";
export type { RankEvent } from "./protocol/transport.ts";
export type { RemoteRanksSpec } from "./run/builder_state.ts";
export type { RemoteHello } from "./protocol/remote_hello.ts";
export { assignRelay, createRunCredentials, serverAuthorization } from "./nats/mod.ts";
export type { NatsUser, RankCredentials, RunCredentials } from "./nats/mod.ts";
