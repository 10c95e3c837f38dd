/**
 * flodl-webgpu: neural-network training on WebGPU, in browsers and in Deno.
 * @module
 */
export * from "./gpu/mod.ts";
export * from "./tensor/mod.ts";
export * from "./autograd/mod.ts";
