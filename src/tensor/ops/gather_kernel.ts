/**
 * The layout of shaders/gather.wgsl, the kernel family of the index ops (gather.ts,
 * embedding_bag.ts): its uniform struct and its storage bindings, each declared once.
 */
import { type Kernel, kernel, type Layout, layout } from "../../gpu/mod.ts";

// deno-fmt-ignore
/** Mirrors `struct Params` in shaders/gather.wgsl (one row per WGSL line). */
export const GATHER_PARAMS: Layout<{
  n: "u32"; size: "u32"; k: "u32"; inner: "u32"; pad: "i32"; dim: "u32"; block: "u32"; stride: "u32";
  x0: "u32"; x1: "u32"; x2: "u32"; x3: "u32"; x4: "u32"; x5: "u32"; i0: "u32"; i1: "u32"; i2: "u32";
  i3: "u32"; i4: "u32"; i5: "u32"; mode: "u32"; bags: "u32";
}> = layout("gather", "Params", {
  n: "u32", size: "u32", k: "u32", inner: "u32", pad: "i32", dim: "u32", block: "u32", stride: "u32",
  x0: "u32", x1: "u32", x2: "u32", x3: "u32", x4: "u32", x5: "u32",
  i0: "u32", i1: "u32", i2: "u32", i3: "u32", i4: "u32", i5: "u32",
  mode: "u32", bags: "u32",
});

// deno-fmt-ignore
/** Storage bindings of shaders/gather.wgsl (x and y are raw 32-bit words: any dtype). */
export const GATHER: Kernel<typeof GATHER_PARAMS, {
  x: [number, "read"]; y: [number, "read_write"]; idx: [number, "read"]; dy: [number, "read"];
  dx: [number, "read_write"]; keys: [number, "read_write"]; pos: [number, "read_write"];
  bounds: [number, "read_write"]; offs: [number, "read"]; arg: [number, "read_write"];
}> = kernel(GATHER_PARAMS, {
  x: [1, "read"], y: [2, "read_write"], idx: [3, "read"], dy: [4, "read"], dx: [5, "read_write"],
  keys: [6, "read_write"], pos: [7, "read_write"], bounds: [8, "read_write"],
  offs: [9, "read"], arg: [10, "read_write"],
}, {
  n: 0, size: 0, k: 0, inner: 0, pad: -1, dim: 0, block: 0, stride: 0,
  x0: 1, x1: 1, x2: 1, x3: 1, x4: 1, x5: 1, i0: 1, i1: 1, i2: 1, i3: 1, i4: 1, i5: 1,
  mode: 0, bags: 0,
});
