/**
 * flodl-webgpu: data-parallel neural-network training on WebGPU, in browsers and in Deno.
 *
 * - Engine: `Device`, `Tensor` (creation functions), the autograd `Variable`, `nn` layers
 *   and losses, optimizers and schedulers, datasets (MNIST; the Brown Corpus as characters).
 * - Data parallel: `Trainer.builder(...)` (flodl's DdpBuilder), ranks in Web Workers.
 * - Tensor-level ops without the tape live under the `ops` namespace.
 * @module
 */
export * from "./gpu/mod.ts";
export {
  arange,
  cast,
  clone,
  fromArray,
  full,
  manualSeed,
  nextSeed,
  ones,
  rand,
  randn,
  Tensor,
  zeros,
} from "./tensor/mod.ts";
export type { DType, Shape, TensorOptions } from "./tensor/mod.ts";
export { f32ToBf16, bf16ToF32, packBf16, unpackBf16 } from "./tensor/mod.ts";
export { setIndexChecks } from "./tensor/mod.ts";
export * as ops from "./tensor/mod.ts";
export * from "./autograd/mod.ts";
export * from "./nn/mod.ts";
export * from "./optim/mod.ts";
export * from "./data/mod.ts";
export * from "./distributed/mod.ts";
export { defaultStorage, downloadBytes, FsStorage, MemoryStorage, OpfsStorage, packTar, pickFile, unpackTar } from "./io/mod.ts";
export type { Storage } from "./io/mod.ts";
// A dataset larger than memory: `PackSource.open(await openRangedFile(path) | await openRangedUrl(url))`.
export { openRangedFile, openRangedUrl, rangedBytes } from "./io/mod.ts";
export type { RangedFile } from "./io/mod.ts";
export {
  DashboardRecorder,
  parseRecord,
  RecordLog,
  RecordTree,
  renderDashboardHtml,
  saveDashboard,
  Timeline,
} from "./monitor/mod.ts";
export type { DashboardData, MonitorRecord, TimelineEvent } from "./monitor/mod.ts";
