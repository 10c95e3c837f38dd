import { Device, type Kernel, kernel, launch, type Layout, layout, tuning } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { fmt, type Shape } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { nchwShape, type Size2d, size2d } from "./conv_shape.ts";

/** Mirrors `struct Params` in shaders/pool.wgsl. */
export const POOL_PARAMS: Layout<{
  nc: "u32"; hi: "u32"; wi: "u32"; ho: "u32"; wo: "u32"; kh: "u32"; kw: "u32"; stride_h: "i32";
  stride_w: "i32"; pad_h: "i32"; pad_w: "i32"; dil_h: "i32"; dil_w: "i32"; count_include_pad: "u32";
  total: "u32";
}> = layout("pool", "Params", {
  nc: "u32",
  hi: "u32",
  wi: "u32",
  ho: "u32",
  wo: "u32",
  kh: "u32",
  kw: "u32",
  stride_h: "i32",
  stride_w: "i32",
  pad_h: "i32",
  pad_w: "i32",
  dil_h: "i32",
  dil_w: "i32",
  count_include_pad: "u32",
  total: "u32",
});
/** Storage bindings of shaders/pool.wgsl (sel: the saved max indices the backward reads). */
export const POOL: Kernel<typeof POOL_PARAMS, {
  x: [number, "read"]; y: [number, "read_write"]; idx: [number, "read_write"]; dy: [number, "read"];
  dx: [number, "read_write"]; sel: [number, "read"];
}> = kernel(POOL_PARAMS, {
  x: [1, "read"],
  y: [2, "read_write"],
  idx: [3, "read_write"],
  dy: [4, "read"],
  dx: [5, "read_write"],
  sel: [6, "read"],
});

/** Options of {@link maxPool2d} (PyTorch's `F.max_pool2d` keywords). */
export interface MaxPool2dOptions {
  /** Window size, ≥ 1. */
  kernelSize: Size2d;
  /** Step between windows, ≥ 1. Default `kernelSize`. */
  stride?: Size2d;
  /** Implicit −∞ on each side, at most half the kernel size. Default 0. */
  padding?: Size2d;
  /** Spacing between window taps, ≥ 1. Default 1. */
  dilation?: Size2d;
  /** Round the output size up instead of down (a last, partial window). Default false. */
  ceilMode?: boolean;
}

/** Options of {@link avgPool2d} (PyTorch's `F.avg_pool2d` keywords; no divisor override). */
export interface AvgPool2dOptions {
  /** Window size, ≥ 1. */
  kernelSize: Size2d;
  /** Step between windows, ≥ 1. Default `kernelSize`. */
  stride?: Size2d;
  /** Implicit zeros on each side, at most half the kernel size. Default 0. */
  padding?: Size2d;
  /** Round the output size up instead of down (a last, partial window). Default false. */
  ceilMode?: boolean;
  /** Count padded zeros in the divisor. Default true. */
  countIncludePad?: boolean;
}

/** Options accepted by {@link pool2dShape}: those of max and average pooling together. */
export type Pool2dOptions = MaxPool2dOptions & { countIncludePad?: boolean };

/** Sizes of one pooling launch over [nc, hi, wi] planes. */
interface PoolGeometry {
  nc: number;
  hi: number;
  wi: number;
  ho: number;
  wo: number;
  kernel: [number, number];
  stride: [number, number];
  padding: [number, number];
  dilation: [number, number];
  countIncludePad: boolean;
  /** Output shape: the input's with the last two dims replaced. */
  outShape: number[];
}

function poolGeometry(x: Shape, options: Pool2dOptions, op: string): PoolGeometry {
  const { shape: [n, c, hi, wi] } = nchwShape(x, op);
  if (options === null || typeof options !== "object") {
    throw new TypeError(`${op}: options must be an object with kernelSize, got ${JSON.stringify(options)}`);
  }
  if (options.kernelSize === undefined) throw new TypeError(`${op}: kernelSize is required, got options without it`);
  const kernel = size2d(options.kernelSize, 1, op, "kernelSize", 1);
  const stride = options.stride === undefined ? kernel : size2d(options.stride, 1, op, "stride", 1);
  const padding = size2d(options.padding, 0, op, "padding", 0);
  const dilation = size2d(options.dilation, 1, op, "dilation", 1);
  if (padding[0] > Math.floor(kernel[0] / 2) || padding[1] > Math.floor(kernel[1] / 2)) {
    throw new RangeError(`${op}: padding ${fmt(padding)} must be at most half of kernelSize ${fmt(kernel)}`);
  }
  const ceil = options.ceilMode === true;
  const out = [hi, wi].map((size, d) => {
    const room = size + 2 * padding[d] - dilation[d] * (kernel[d] - 1) - 1;
    let o = Math.floor((room + (ceil ? stride[d] - 1 : 0)) / stride[d]) + 1;
    // PyTorch: the last ceil-mode window must start inside the input or its left padding.
    if (ceil && (o - 1) * stride[d] >= size + padding[d]) o--;
    return o;
  });
  if (out[0] < 1 || out[1] < 1) {
    throw new RangeError(
      `${op}: output size ${fmt(out)} is too small for input ${fmt(x)} with kernelSize ${fmt(kernel)}, ` +
        `stride ${fmt(stride)}, padding ${fmt(padding)}, dilation ${fmt(dilation)}`,
    );
  }
  return {
    nc: n * c,
    hi,
    wi,
    ho: out[0],
    wo: out[1],
    kernel,
    stride,
    padding,
    dilation,
    countIncludePad: options.countIncludePad ?? true,
    outShape: [...x.slice(0, -2), out[0], out[1]],
  };
}

/**
 * Output shape of max and average pooling: the input's with H, W replaced by
 * `⌊(H + 2·padding − dilation·(kernel − 1) − 1) / stride⌋ + 1` (rounded up with ceilMode,
 * PyTorch's rule). Pure; no GPU.
 * @param x Input shape [N, C, H, W] or [C, H, W].
 * @param options kernelSize, stride (default kernelSize), padding, dilation, ceilMode.
 * @param op Name used in error messages.
 * @throws {TypeError} On a wrong rank or a non-numeric option.
 * @throws {RangeError} When an option is out of range, padding exceeds half the kernel, or the
 *   output would be empty.
 * @example
 * ```ts
 * import { pool2dShape } from "./pool.ts";
 * pool2dShape([64, 6, 24, 24], { kernelSize: 2 }); // [64, 6, 12, 12]
 * ```
 */
export function pool2dShape(x: Shape, options: Pool2dOptions, op = "pool2d"): number[] {
  return poolGeometry(x, options, op).outShape;
}

function adaptiveGeometry(x: Shape, outputSize: Size2d, op: string): PoolGeometry {
  const { shape: [n, c, hi, wi] } = nchwShape(x, op);
  const [ho, wo] = size2d(outputSize, 1, op, "outputSize", 1);
  if (hi < 1 || wi < 1) throw new RangeError(`${op}: input ${fmt(x)} has an empty spatial dim`);
  const one: [number, number] = [1, 1];
  return {
    nc: n * c,
    hi,
    wi,
    ho,
    wo,
    kernel: one,
    stride: one,
    padding: [0, 0],
    dilation: one,
    countIncludePad: true,
    outShape: [...x.slice(0, -2), ho, wo],
  };
}

/**
 * Output shape of {@link adaptiveAvgPool2d}: the input's with H, W replaced by `outputSize`.
 * @throws {TypeError} On a wrong rank or a non-numeric size.
 * @throws {RangeError} When a size is not a positive integer or the input has an empty spatial dim.
 */
export function adaptiveAvgPool2dShape(x: Shape, outputSize: Size2d): number[] {
  return adaptiveGeometry(x, outputSize, "adaptiveAvgPool2d").outShape;
}

/** Entry, params and grid of a pooling launch: one thread per element of `total`. */
function windows(entry: string, g: PoolGeometry, total: number) {
  return {
    entry,
    overrides: { WG: tuning.ELEMENTWISE_WG },
    params: {
      nc: g.nc,
      hi: g.hi,
      wi: g.wi,
      ho: g.ho,
      wo: g.wo,
      kh: g.kernel[0],
      kw: g.kernel[1],
      stride_h: g.stride[0],
      stride_w: g.stride[1],
      pad_h: g.padding[0],
      pad_w: g.padding[1],
      dil_h: g.dilation[0],
      dil_w: g.dilation[1],
      count_include_pad: g.countIncludePad ? 1 : 0,
      total,
    },
    groups: Device.grid(total, tuning.ELEMENTWISE_WG),
  };
}

function checkF32(x: Tensor, op: string): void {
  if (x.dtype !== "f32") throw new TypeError(`${op}: expects an f32 tensor, got ${x.dtype} ${fmt(x.shape)}`);
}

/**
 * Max pooling as PyTorch's `F.max_pool2d`; saves the i32 index (iy·W + ix within its plane)
 * of the first maximum of each window, which the backward routes the gradient to.
 */
export const maxPool2dOp: OpDef<MaxPool2dOptions> = {
  name: "maxPool2d",
  forward([x], attrs) {
    checkF32(x, "maxPool2d");
    const g = poolGeometry(x.shape, attrs, "maxPool2d");
    const y = Tensor.empty(g.outShape, { device: x.device }, "maxPool2d");
    const idx = Tensor.empty(g.outShape, { device: x.device, dtype: "i32" }, "maxPool2d.indices");
    launch(x.device, POOL, { ...windows("max_pool2d_forward", g, y.numel), io: { x, y, idx } });
    return { output: y, saved: [idx] };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null];
    const g = poolGeometry(ctx.shapes[0], ctx.attrs, "maxPool2d");
    const dx = Tensor.empty(ctx.shapes[0], { device: dy.device }, "maxPool2d.backward");
    launch(dy.device, POOL, { ...windows("max_pool2d_backward", g, dx.numel), io: { dy, dx, sel: ctx.saved[0] } });
    return [dx];
  },
};

/** Average pooling as PyTorch's `F.avg_pool2d` (ceilMode and countIncludePad included). */
export const avgPool2dOp: OpDef<AvgPool2dOptions> = {
  name: "avgPool2d",
  forward([x], attrs) {
    checkF32(x, "avgPool2d");
    const g = poolGeometry(x.shape, attrs, "avgPool2d");
    const y = Tensor.empty(g.outShape, { device: x.device }, "avgPool2d");
    launch(x.device, POOL, { ...windows("avg_pool2d_forward", g, y.numel), io: { x, y } });
    return { output: y };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null];
    const g = poolGeometry(ctx.shapes[0], ctx.attrs, "avgPool2d");
    const dx = Tensor.empty(ctx.shapes[0], { device: dy.device }, "avgPool2d.backward");
    launch(dy.device, POOL, { ...windows("avg_pool2d_backward", g, dx.numel), io: { dy, dx } });
    return [dx];
  },
};

/** Attributes of {@link adaptiveAvgPool2dOp}. */
export interface AdaptiveAvgPool2dAttrs {
  /** Output H, W: one number for both or [h, w]. */
  outputSize: Size2d;
}

/** Adaptive average pooling as PyTorch's `F.adaptive_avg_pool2d`. */
export const adaptiveAvgPool2dOp: OpDef<AdaptiveAvgPool2dAttrs> = {
  name: "adaptiveAvgPool2d",
  forward([x], attrs) {
    checkF32(x, "adaptiveAvgPool2d");
    const g = adaptiveGeometry(x.shape, attrs.outputSize, "adaptiveAvgPool2d");
    const y = Tensor.empty(g.outShape, { device: x.device }, "adaptiveAvgPool2d");
    launch(x.device, POOL, { ...windows("adaptive_avg_pool2d_forward", g, y.numel), io: { x, y } });
    return { output: y };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null];
    const g = adaptiveGeometry(ctx.shapes[0], ctx.attrs.outputSize, "adaptiveAvgPool2d");
    const dx = Tensor.empty(ctx.shapes[0], { device: dy.device }, "adaptiveAvgPool2d.backward");
    launch(dy.device, POOL, { ...windows("adaptive_avg_pool2d_backward", g, dx.numel), io: { dy, dx } });
    return [dx];
  },
};

/**
 * 2-D max pooling (PyTorch's `F.max_pool2d`): padded positions count as −∞; the gradient
 * goes to the first maximum of each window.
 * @param x Input [N, C, H, W] or [C, H, W], f32.
 * @param options kernelSize, stride (default kernelSize), padding, dilation, ceilMode.
 * @returns The pooled tensor; its shape is {@link pool2dShape}'s.
 * @throws {TypeError} On a wrong rank or dtype; {@link pool2dShape} lists the rest.
 * @example
 * ```ts
 * import { Device } from "../../gpu/mod.ts";
 * import { randn } from "../creation.ts";
 * import { maxPool2d } from "./pool.ts";
 * await Device.request();
 * console.log(maxPool2d(randn([64, 6, 24, 24]), { kernelSize: 2 }).shape); // [64, 6, 12, 12]
 * ```
 */
export function maxPool2d(x: Tensor, options: MaxPool2dOptions): Tensor {
  return maxPool2dOp.forward([x], options).output;
}

/**
 * {@link maxPool2d} that also returns the i32 indices (iy·W + ix within each plane), as
 * PyTorch's `return_indices=True`.
 */
export function maxPool2dWithIndices(x: Tensor, options: MaxPool2dOptions): { output: Tensor; indices: Tensor } {
  const res = maxPool2dOp.forward([x], options);
  return { output: res.output, indices: res.saved![0] };
}

/**
 * 2-D average pooling (PyTorch's `F.avg_pool2d`).
 * @param x Input [N, C, H, W] or [C, H, W], f32.
 * @param options kernelSize, stride (default kernelSize), padding, ceilMode, countIncludePad (default true).
 * @returns The pooled tensor; its shape is {@link pool2dShape}'s.
 * @throws {TypeError} On a wrong rank or dtype; {@link pool2dShape} lists the rest.
 */
export function avgPool2d(x: Tensor, options: AvgPool2dOptions): Tensor {
  return avgPool2dOp.forward([x], options).output;
}

/**
 * Adaptive average pooling (PyTorch's `F.adaptive_avg_pool2d`): output cell o of n averages
 * input rows [⌊o·H/n⌋, ⌈(o+1)·H/n⌉) (likewise columns), so windows may overlap.
 * @param x Input [N, C, H, W] or [C, H, W], f32.
 * @param outputSize Output H, W: one number for both or [h, w].
 * @throws {TypeError} On a wrong rank or dtype.
 * @throws {RangeError} When a size is not a positive integer.
 */
export function adaptiveAvgPool2d(x: Tensor, outputSize: Size2d): Tensor {
  return adaptiveAvgPool2dOp.forward([x], { outputSize }).output;
}
