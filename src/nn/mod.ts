export { Module } from "./module.ts";
export type { LoadOptions, LoadResult } from "./module.ts";
export { Flow, FlowBuilder, Sequential } from "./container.ts";
export * as init from "./init.ts";
export { decodeSafetensors, encodeSafetensors, MAX_HEADER_BYTES, toBf16Bits, toFloat32 } from "./safetensors.ts";
export type { DecodedSafetensors, SafetensorsDType, SafeTensor } from "./safetensors.ts";
export { checkStateDict, keyedState, loadSafetensors, saveSafetensors, tensorEntry } from "./state.ts";
export type { CheckOptions, KeyStyle, LoadFileOptions, SaveOptions, StateEntry } from "./state.ts";
