import { Device, type Kernel, kernel, launch, type Layout, layout } from "../../gpu/mod.ts";
import { bf16Words } from "../bf16.ts";
import { checkShape, fmt, numel, type Shape } from "../shape.ts";
import { fromArray } from "../creation.ts";
import { Tensor } from "../tensor.ts";

/** Mirrors `struct Params` in shaders/bf16.wgsl. */
export const BF16_PARAMS: Layout<{
  n: "u32"; words: "u32"; scaled: "u32"; scale: "f32"; segs: "u32";
}> = layout("bf16", "Params", { n: "u32", words: "u32", scaled: "u32", scale: "f32", segs: "u32" });
/** Storage bindings of shaders/bf16.wgsl: f32 bits in, packed words out, and back. */
export const BF16: Kernel<typeof BF16_PARAMS, {
  x_bits: [number, "read"]; packed: [number, "read_write"]; packed_in: [number, "read"];
  y_bits: [number, "read_write"]; segments: [number, "read"];
}> = kernel(BF16_PARAMS, {
  x_bits: [1, "read"],
  packed: [2, "read_write"],
  packed_in: [3, "read"],
  y_bits: [4, "read_write"],
  segments: [5, "read"],
}, { n: 0, words: 0, scaled: 0, scale: 1, segs: 0 });

/**
 * Pack an f32 tensor as bf16 on the GPU: a u32 tensor of ceil(n / 2) words, element 2i in
 * the low 16 bits, 2i+1 in the high ones (an odd count pads a zero). Rounds to nearest, ties
 * to even; NaN stays NaN, ±Inf stay ±Inf; bit-identical with `packBf16` of src/tensor/bf16.ts.
 * Recorded, not waited for: read the words with `await words.toArray()`.
 * @param scale Multiplies each value in f32 before rounding (1: none, bits pass untouched).
 *   With a scale, results in the subnormal range may be flushed to zero by the GPU.
 * @throws {TypeError} When `x` is not f32.
 * @throws {RangeError} When `scale` is not a finite f32.
 * @example
 * ```ts
 * import { Device, fromArray } from "../../index.ts";
 * import { ops } from "../../engine.ts";
 * const { packBf16Tensor } = ops;
 * await Device.request();
 * const words = packBf16Tensor(fromArray(Float32Array.of(1, -2, 0.5)));
 * console.log(await words.toArray()); // Uint32Array [0xc0003f80, 0x3f00]
 * ```
 */
export function packBf16Tensor(x: Tensor, scale = 1): Tensor {
  if (x.dtype !== "f32") throw new TypeError(`packBf16Tensor: expects an f32 tensor, got ${x.dtype}`);
  if (!Number.isFinite(Math.fround(scale))) {
    throw new RangeError(`packBf16Tensor: scale must be a finite f32, got ${scale}`);
  }
  const words = bf16Words(x.numel);
  const y = Tensor.empty([words], { device: x.device, dtype: "u32" }, "packBf16");
  if (words === 0) return y;
  launch(x.device, BF16, {
    entry: "pack_forward",
    params: { n: x.numel, words, scaled: Math.fround(scale) !== 1 ? 1 : 0, scale },
    io: { x_bits: x, packed: y },
    groups: Device.grid(words),
  });
  return y;
}

/**
 * Pack the concatenation of `tensors` (in order) as bf16, as {@link packBf16Tensor} of their
 * flattened copy would, in one dispatch that reads them in place: they must all be views of
 * one buffer, as a `foreach` optimizer group's parameters are (`Tensor.view` into its arena).
 * How a rank packs a whole bf16 wire frame without a flattening copy per parameter.
 * @throws {TypeError} When a tensor is not f32.
 * @throws {RangeError} When the tensors do not all live in one buffer (the first other one named).
 */
export function packBf16Tensors(tensors: readonly Tensor[]): Tensor {
  tensors.forEach((t, k) => {
    if (t.dtype !== "f32") throw new TypeError(`packBf16Tensors: tensor ${k} is ${t.dtype}, expects f32`);
  });
  const n = tensors.reduce((a, t) => a + t.numel, 0);
  const words = bf16Words(n);
  const device = tensors[0]?.device;
  const y = Tensor.empty([words], { device, dtype: "u32" }, "packBf16");
  if (words === 0) return y;
  const buffer = tensors[0].buffer;
  const rows: number[] = [];
  let at = 0;
  tensors.forEach((t, k) => {
    if (t.buffer !== buffer) {
      throw new RangeError(
        `packBf16Tensors: tensor ${k} (${t.origin} ${fmt(t.shape)}) is not in tensor 0's buffer; pack views of one buffer (a foreach group's)`,
      );
    }
    if (t.numel > 0) rows.push(at, t.byteOffset / 4);
    at += t.numel;
  });
  const segments = fromArray(Uint32Array.from(rows), [rows.length], { device, dtype: "u32" });
  try {
    launch(device, BF16, {
      entry: "pack_gather_forward",
      params: { n, words, segs: rows.length / 2 },
      io: { x_bits: buffer, packed: y, segments },
      groups: Device.grid(words),
    });
  } finally {
    segments.dispose(); // a freed buffer is reused only after the next submit
  }
  return y;
}

/**
 * Unpack bf16 words (a u32 tensor from {@link packBf16Tensor} or a received frame) into an
 * f32 tensor of `shape`: each bf16 becomes the high half of an f32, exactly.
 * @throws {TypeError} When `words` is not u32 or `shape` is not a shape.
 * @throws {RangeError} When `words` does not hold ceil(numel(shape) / 2) words (both named).
 * @example
 * ```ts
 * import { Device, fromArray } from "../../index.ts";
 * import { ops } from "../../engine.ts";
 * const { unpackBf16Tensor } = ops;
 * await Device.request();
 * const y = unpackBf16Tensor(fromArray(Uint32Array.of(0xc0003f80)), [2]);
 * console.log(await y.toArray()); // Float32Array [1, -2]
 * ```
 */
export function unpackBf16Tensor(words: Tensor, shape: Shape): Tensor {
  if (words.dtype !== "u32") throw new TypeError(`unpackBf16Tensor: expects a u32 tensor of words, got ${words.dtype}`);
  checkShape(shape, "unpackBf16Tensor");
  const n = numel(shape);
  if (words.numel !== bf16Words(n)) {
    throw new RangeError(
      `unpackBf16Tensor: shape ${fmt(shape)} (${n} values) needs ${bf16Words(n)} words, got ${words.numel} (${
        fmt(words.shape)
      })`,
    );
  }
  const y = Tensor.empty(shape, { device: words.device }, "unpackBf16");
  if (n === 0) return y;
  launch(words.device, BF16, {
    entry: "unpack_forward",
    params: { n, words: words.numel },
    io: { packed_in: words, y_bits: y },
    groups: Device.grid(n),
  });
  return y;
}
