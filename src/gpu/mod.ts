export { collectGarbage, loadCollector } from "./collect.ts";
export { Device } from "./device.ts";
export type { DeviceOptions, Dispatch, MemoryStats, StepScoped } from "./device.ts";
export { DeviceLostError, GpuError } from "./errors.ts";
export { layout, registeredLayouts, writeParams } from "./params.ts";
export type { Layout, ParamValues, ScalarType } from "./params.ts";
export { sizeClass } from "./pool.ts";
export { shaderSource, shaderSources } from "./shaders.ts";
export * as tuning from "./tuning.ts";
