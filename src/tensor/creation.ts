import { Device, type Kernel, kernel, launch, type Layout, layout } from "../gpu/mod.ts";
import { checkShape, numel, type Shape } from "./shape.ts";
import { type DType, Tensor, type TensorOptions, toTyped } from "./tensor.ts";

/** Mirrors `struct Params` in shaders/fill.wgsl. */
export const FILL_PARAMS: Layout<{
  n: "u32"; value: "f32"; start: "f32"; step: "f32"; seed: "u32"; lo: "f32"; hi: "f32";
}> = layout("fill", "Params", {
  n: "u32",
  value: "f32",
  start: "f32",
  step: "f32",
  seed: "u32",
  lo: "f32",
  hi: "f32",
});

/** Storage bindings of shaders/fill.wgsl: f32 out, i32 or f32 in (casts), i32 out. */
export const FILL: Kernel<typeof FILL_PARAMS, {
  y: [number, "read_write"]; xi: [number, "read"]; xf: [number, "read"]; yi: [number, "read_write"];
}> = kernel(FILL_PARAMS, {
  y: [1, "read_write"],
  xi: [2, "read"],
  xf: [3, "read"],
  yi: [4, "read_write"],
}, { value: 0, start: 0, step: 0, seed: 0, lo: 0, hi: 0 });

type FillValues = Partial<Record<keyof typeof FILL_PARAMS.fields, number>>;

function fillKernel(entry: string, shape: Shape, options: TensorOptions, values: FillValues): Tensor {
  const t = Tensor.empty(shape, { ...options, dtype: "f32" }, entry.replace("_forward", ""));
  launch(t.device, FILL, { entry, params: { ...values, n: t.numel }, io: { y: t }, groups: Device.grid(t.numel) });
  return t;
}

/** A tensor of zeros (any dtype). */
export function zeros(shape: Shape, options: TensorOptions = {}): Tensor {
  const t = Tensor.empty(shape, options, "zeros");
  if (t.numel > 0) t.device.clear(t.buffer, 0, t.buffer.size);
  return t;
}

/** A tensor filled with `value` (f32; integer dtypes are filled on the host). */
export function full(shape: Shape, value: number, options: TensorOptions = {}): Tensor {
  checkShape(shape, "full");
  const dtype = options.dtype ?? "f32";
  if (dtype !== "f32") return fromArray(new Array(numel(shape)).fill(value), shape, options);
  return fillKernel("fill_forward", shape, options, { value });
}

/** A tensor of ones. */
export function ones(shape: Shape, options: TensorOptions = {}): Tensor {
  return full(shape, 1, options);
}

/** `[start, start+step, ...)` below `end`, as PyTorch's `arange` (f32). */
export function arange(start: number, end?: number, step = 1, options: TensorOptions = {}): Tensor {
  if (end === undefined) [start, end] = [0, start];
  if (!(step !== 0 && Number.isFinite(step))) {
    throw new RangeError(`arange: step must be finite and non-zero, got ${step}`);
  }
  const n = Math.max(0, Math.ceil((end - start) / step));
  if ((options.dtype ?? "f32") !== "f32") {
    return fromArray(Array.from({ length: n }, (_, i) => start + i * step), [n], options);
  }
  return fillKernel("arange_forward", [n], options, { start, step });
}

/**
 * A tensor holding host values. The dtype follows the array (Int32Array -> i32,
 * Uint32Array -> u32, otherwise f32) unless given.
 * @throws {RangeError} When the value count does not match the shape.
 */
export function fromArray(data: ArrayLike<number>, shape?: Shape, options: TensorOptions = {}): Tensor {
  const dtype: DType = options.dtype ??
    (data instanceof Int32Array ? "i32" : data instanceof Uint32Array ? "u32" : "f32");
  const s = shape ?? [data.length];
  checkShape(s, "fromArray");
  if (numel(s) !== data.length) {
    throw new RangeError(`fromArray: ${data.length} values do not fill shape [${s.join(",")}] (${numel(s)} elements)`);
  }
  const t = Tensor.empty(s, { ...options, dtype }, "fromArray");
  if (t.numel > 0) t.device.upload(t.buffer, 0, toTyped(data, dtype));
  return t;
}

const SEED_KEY = Symbol.for("flodl-webgpu.seed");
const seedState = globalThis as { [k: symbol]: number | undefined };

/** Seed the generator used by `rand`/`randn`/`dropout` calls that pass no seed (like `torch.manual_seed`). */
export function manualSeed(seed: number): void {
  if (!Number.isInteger(seed) || seed < 0) {
    throw new RangeError(`manualSeed: seed must be a non-negative integer, got ${seed}`);
  }
  seedState[SEED_KEY] = seed >>> 0;
}

/** The next seed of the global stream (advances it). */
export function nextSeed(): number {
  const s = seedState[SEED_KEY] ?? 0x2545f491;
  // splitmix32-style step: each call gets a fresh, well-mixed 32-bit seed.
  const next = (Math.imul(s ^ (s >>> 16), 0x7feb352d) + 0x9e3779b9) >>> 0;
  seedState[SEED_KEY] = next;
  return next;
}

/** Options of seeded random tensors. */
export interface RandomOptions extends TensorOptions {
  /** Seed; default: the next seed of the global stream ({@link manualSeed}). */
  seed?: number;
}

/** Uniform random values in `[lo, hi)` (default [0, 1)), counter-based: a seed gives the same tensor everywhere. */
export function rand(shape: Shape, options: RandomOptions & { lo?: number; hi?: number } = {}): Tensor {
  const seed = options.seed ?? nextSeed();
  return fillKernel("uniform_forward", shape, options, { seed: seed >>> 0, lo: options.lo ?? 0, hi: options.hi ?? 1 });
}

/** Normal random values with `mean` (default 0) and `std` (default 1), Box-Muller over the same counter stream. */
export function randn(shape: Shape, options: RandomOptions & { mean?: number; std?: number } = {}): Tensor {
  const seed = options.seed ?? nextSeed();
  return fillKernel("normal_forward", shape, options, {
    seed: seed >>> 0,
    lo: options.mean ?? 0,
    hi: options.std ?? 1,
  });
}

/** Convert between f32 and i32 (truncating toward zero); same dtype returns a copy. */
export function cast(x: Tensor, dtype: DType): Tensor {
  const y = Tensor.empty(x.shape, { device: x.device, dtype }, "cast");
  if (x.dtype === dtype || (x.dtype !== "f32" && dtype !== "f32")) {
    x.device.copy(x.buffer, x.byteOffset, y.buffer, 0, x.numel * 4);
    return y;
  }
  const toF32 = dtype === "f32";
  launch(x.device, FILL, {
    entry: toF32 ? "i32_to_f32_forward" : "f32_to_i32_forward",
    params: { n: x.numel },
    io: toF32 ? { y, xi: x } : { xf: x, yi: y },
    groups: Device.grid(x.numel),
  });
  return y;
}

/**
 * Add `by` to every element of an i32 tensor, in place on the GPU (a recorded dispatch, no
 * wait): how BatchNorm counts `num_batches_tracked`.
 * @throws {TypeError} When `t` is not i32. @throws {RangeError} When `by` is not an integer.
 */
export function incrementInPlace(t: Tensor, by = 1): void {
  if (t.dtype !== "i32") throw new TypeError(`incrementInPlace: tensor must be i32, got ${t.dtype}`);
  if (!Number.isInteger(by) || Math.abs(by) > 2 ** 24) {
    throw new RangeError(`incrementInPlace: by must be an integer within ±2^24, got ${by}`);
  }
  launch(t.device, FILL, {
    entry: "increment_i32_forward",
    params: { value: by, n: t.numel },
    io: { yi: t },
    groups: Device.grid(t.numel),
  });
}

/** A contiguous copy. */
export function clone(x: Tensor): Tensor {
  const y = Tensor.empty(x.shape, { device: x.device, dtype: x.dtype }, "clone");
  x.device.copy(x.buffer, x.byteOffset, y.buffer, 0, x.numel * 4);
  return y;
}
