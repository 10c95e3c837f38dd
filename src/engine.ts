/**
 * flodl-webgpu's low-level surface (`flodl-webgpu/engine`), for those who write kernels or
 * tooling: kernels and their launches, parameter layouts, the WGSL sources and their
 * includes, the per-adapter tunings, the tensor-level ops without the tape (`ops`, with the
 * `*Op` classes behind the tape's entries), optimizer and clip parameter layouts, data-plane
 * counters and the run's credentials. What a program that trains needs is the main entry,
 * `flodl-webgpu` (src/index.ts).
 * @module
 */
export * as ops from "./tensor/mod.ts";
export {
  expandIncludes,
  explainWgslLines,
  kernel,
  launch,
  layout,
  loadCollector,
  registeredKernels,
  registeredLayouts,
  shaderLine,
  shaderSource,
  shaderSources,
  sizeClass,
  tuning,
  writeParams,
} from "./gpu/mod.ts";
export type {
  Access,
  Bindable,
  Bindings,
  BufferRange,
  Dispatch,
  Expanded,
  Segment,
  Kernel,
  Launch,
  Layout,
  ParamValues,
  ScalarType,
} from "./gpu/mod.ts";
export { apply } from "./autograd/mod.ts";
export type { Operand, TapeNode, VariableNode } from "./autograd/mod.ts";
export type { OpContext, OpDef, OpResult } from "./tensor/mod.ts";
export { MAX_HEADER_BYTES, tensorEntry, toBf16Bits, toFloat32 } from "./nn/mod.ts";
export { AdamBase, CLIP_PARAMS, OPTIM_PARAMS } from "./optim/mod.ts";
export type { ClipParamFields, OptimParamFields, Segments, UpdateArgs } from "./optim/mod.ts";
export {
  checkIndices,
  counterDelta,
  DATA_COUNTERS,
  DATA_GAUGES,
  fieldBytes,
  foldCounters,
  IDX_IMAGES_MAGIC,
  IDX_LABELS_MAGIC,
  isAsyncSource,
  PACK_FIELDS_KEY,
  planeTotals,
  vramCapacity,
} from "./data/mod.ts";
export type { Source } from "./data/mod.ts";
