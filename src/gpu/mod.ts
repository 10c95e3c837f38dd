export { collectGarbage, loadCollector } from "./collect.ts";
export type { DeviceOptions } from "./adapter.ts";
export { Device } from "./device.ts";
export type { MemoryStats, StepScoped } from "./device.ts";
export type { BufferRange, Dispatch } from "./dispatch.ts";
export { DeviceLostError, GpuError } from "./errors.ts";
export { kernel, launch, registeredKernels } from "./kernel.ts";
export type { Access, Bindable, Bindings, Kernel, Launch } from "./kernel.ts";
export { layout, registeredLayouts, writeParams } from "./params.ts";
export type { Layout, ParamValues, ScalarType } from "./params.ts";
export { sizeClass } from "./pool.ts";
export type { PoolStats } from "./pool.ts";
export { expandIncludes, explainWgslLines, shaderLine, shaderSource, shaderSources } from "./shaders.ts";
export type { Expanded, Segment } from "./shaders.ts";
export type { AdapterKind, MatmulClass, MatmulClassTilings, MatmulTiling } from "./tuning.ts";
/** Every tunable number of the GPU layer (workgroup sizes, matmul tilings), with its unit and reason. */
export * as tuning from "./tuning.ts";
