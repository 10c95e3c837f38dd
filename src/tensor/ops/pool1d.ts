/**
 * max_pool1d and avg_pool1d (PyTorch's `F.max_pool1d`, `F.avg_pool1d`): the shape rule in 1-D
 * terms, then the 2-D pooling kernels of shaders/pool.wgsl on the same memory seen as height 1
 * ([N, C, L] → [N, C, 1, L], a view), with a window of [1, k]: one row, so the 2-D kernels do
 * exactly the 1-D work and the max indices (iy·W + ix) are positions along L, as PyTorch's.
 */
import type { OpDef } from "../op.ts";
import { fmt, type Shape } from "../shape.ts";
import type { Tensor } from "../tensor.ts";
import { type Size1d, size1d } from "./conv1d.ts";
import { avgPool2dOp, maxPool2dOp, type Pool2dOptions } from "./pool.ts";

/** Options of {@link maxPool1d} (PyTorch's `F.max_pool1d` keywords). */
export interface MaxPool1dOptions {
  /** Window length, ≥ 1. */
  kernelSize: Size1d;
  /** Step between windows, ≥ 1. Default `kernelSize`. */
  stride?: Size1d;
  /** Implicit −∞ on each end, at most half the kernel size. Default 0. */
  padding?: Size1d;
  /** Spacing between window taps, ≥ 1. Default 1. */
  dilation?: Size1d;
  /** Round the output length up instead of down (a last, partial window). Default false. */
  ceilMode?: boolean;
}

/** Options of {@link avgPool1d} (PyTorch's `F.avg_pool1d` keywords). */
export interface AvgPool1dOptions {
  /** Window length, ≥ 1. */
  kernelSize: Size1d;
  /** Step between windows, ≥ 1. Default `kernelSize`. */
  stride?: Size1d;
  /** Implicit zeros on each end, at most half the kernel size. Default 0. */
  padding?: Size1d;
  /** Round the output length up instead of down (a last, partial window). Default false. */
  ceilMode?: boolean;
  /** Count padded zeros in the divisor. Default true. */
  countIncludePad?: boolean;
}

/** The 2-D call of a checked 1-D pooling, and the shapes on both sides. */
interface Pool1dPlan {
  out: number[];
  x4: number[];
  options: Pool2dOptions;
}

function plan(x: Shape, o: MaxPool1dOptions & { countIncludePad?: boolean }, op: string, max: boolean): Pool1dPlan {
  if (x.length !== 2 && x.length !== 3) {
    throw new TypeError(`${op}: input must be 2-D [C, L] or 3-D [N, C, L], got ${fmt(x)}`);
  }
  if (o === null || typeof o !== "object") {
    throw new TypeError(`${op}: options must be an object with kernelSize, got ${JSON.stringify(o)}`);
  }
  if (o.kernelSize === undefined) throw new TypeError(`${op}: kernelSize is required, got options without it`);
  const k = size1d(o.kernelSize, 1, op, "kernelSize", 1);
  const stride = size1d(o.stride, k, op, "stride", 1);
  const padding = size1d(o.padding, 0, op, "padding", 0);
  const dilation = max ? size1d(o.dilation, 1, op, "dilation", 1) : 1;
  if (padding > Math.floor(k / 2)) {
    throw new RangeError(
      `${op}: padding must be at most half of kernelSize ${k}, i.e. <= ${Math.floor(k / 2)}, got ${padding}`,
    );
  }
  if (o.ceilMode !== undefined && typeof o.ceilMode !== "boolean") {
    throw new TypeError(`${op}: ceilMode must be a boolean, got ${JSON.stringify(o.ceilMode)}`);
  }
  if (o.countIncludePad !== undefined && typeof o.countIncludePad !== "boolean") {
    throw new TypeError(`${op}: countIncludePad must be a boolean, got ${JSON.stringify(o.countIncludePad)}`);
  }
  const l = x[x.length - 1], ceil = o.ceilMode === true;
  const room = l + 2 * padding - dilation * (k - 1) - 1;
  let lo = Math.floor((room + (ceil ? stride - 1 : 0)) / stride) + 1;
  if (ceil && (lo - 1) * stride >= l + padding) lo--; // PyTorch: the last window starts inside
  if (lo < 1) {
    throw new RangeError(
      `${op}: output length ${lo} is too small for input ${fmt(x)} with kernelSize ${k}, stride ${stride}, ` +
        `padding ${padding}, dilation ${dilation}`,
    );
  }
  const options: Pool2dOptions = {
    kernelSize: [1, k],
    stride: [1, stride],
    padding: [0, padding],
    dilation: [1, dilation],
    ceilMode: ceil,
    countIncludePad: o.countIncludePad ?? true,
  };
  return { out: [...x.slice(0, -1), lo], x4: [...x.slice(0, -1), 1, l], options };
}

/**
 * Output shape of {@link maxPool1d} and {@link avgPool1d}: the input's with L replaced by
 * `⌊(L + 2·padding − dilation·(k − 1) − 1) / stride⌋ + 1` (rounded up with ceilMode). Pure.
 * @throws {TypeError} On a wrong rank or a non-numeric option.
 * @throws {RangeError} When an option is out of range or the output would be empty.
 * @example
 * ```ts
 * import { pool1dShape } from "./pool1d.ts";
 * pool1dShape([8, 4, 101], { kernelSize: 3, stride: 2 }); // [8, 4, 50]
 * ```
 */
export function pool1dShape(
  x: Shape,
  options: MaxPool1dOptions & { countIncludePad?: boolean },
  op = "pool1d",
): number[] {
  return plan(x, options, op, true).out;
}

function pool1dOp<A extends MaxPool1dOptions | AvgPool1dOptions>(
  name: string,
  inner: OpDef<Pool2dOptions>,
  max: boolean,
): OpDef<A> {
  return {
    name,
    forward([x], attrs) {
      if (x.dtype !== "f32") throw new TypeError(`${name}: expects an f32 tensor, got ${x.dtype} ${fmt(x.shape)}`);
      const p = plan(x.shape, attrs, name, max);
      const res = inner.forward([x.reshape(p.x4)], p.options);
      return { output: res.output.reshape(p.out), saved: res.saved };
    },
    backward(dy, ctx) {
      if (!ctx.needs[0]) return [null];
      const p = plan(ctx.shapes[0], ctx.attrs, name, max);
      const [dx] = inner.backward!(dy.reshape([...p.out.slice(0, -1), 1, p.out[p.out.length - 1]]), {
        shapes: [p.x4],
        needs: ctx.needs,
        saved: ctx.saved,
        output: ctx.output,
        attrs: p.options,
      });
      return [dx ? dx.reshape(ctx.shapes[0]) : null];
    },
  };
}

/** Max pooling as PyTorch's `F.max_pool1d`; the gradient goes to the first maximum of each window. */
export const maxPool1dOp: OpDef<MaxPool1dOptions> = pool1dOp("maxPool1d", maxPool2dOp as OpDef<Pool2dOptions>, true);
/** Average pooling as PyTorch's `F.avg_pool1d` (ceilMode and countIncludePad included). */
export const avgPool1dOp: OpDef<AvgPool1dOptions> = pool1dOp("avgPool1d", avgPool2dOp as OpDef<Pool2dOptions>, false);

/**
 * 1-D max pooling (PyTorch's `F.max_pool1d`): padded positions count as −∞.
 * @param x Input [N, C, L] or [C, L], f32.
 * @param options kernelSize, stride (default kernelSize), padding, dilation, ceilMode.
 * @throws {TypeError} On a wrong rank or dtype; {@link pool1dShape} lists the rest.
 */
export function maxPool1d(x: Tensor, options: MaxPool1dOptions): Tensor {
  return maxPool1dOp.forward([x], options).output;
}

/**
 * 1-D average pooling (PyTorch's `F.avg_pool1d`).
 * @param x Input [N, C, L] or [C, L], f32.
 * @param options kernelSize, stride (default kernelSize), padding, ceilMode, countIncludePad (default true).
 * @throws {TypeError} On a wrong rank or dtype; {@link pool1dShape} lists the rest.
 */
export function avgPool1d(x: Tensor, options: AvgPool1dOptions): Tensor {
  return avgPool1dOp.forward([x], options).output;
}
