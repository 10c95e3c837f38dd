/**
 * Shape rules of conv2d and conv_transpose2d (pure; run before any GPU work): the options,
 * their checks, and the geometry the kernels of ./conv.ts read.
 */
import { fmt, type Shape } from "../shape.ts";

/** A size along (height, width): one number for both, or `[h, w]`. */
export type Size2d = number | readonly [number, number];

/** Options of {@link conv2d} (PyTorch's `F.conv2d` keywords). */
export interface Conv2dOptions {
  /** Step between windows, ≥ 1. Default 1. */
  stride?: Size2d;
  /** Zeros added on each side, ≥ 0. Default 0. */
  padding?: Size2d;
  /** Spacing between kernel taps, ≥ 1. Default 1. */
  dilation?: Size2d;
  /** Channel groups; input and output channels must both divide by it. Default 1. */
  groups?: number;
}

/** Options of {@link convTranspose2d} (PyTorch's `F.conv_transpose2d` keywords). */
export interface ConvTranspose2dOptions extends Conv2dOptions {
  /** Extra rows/columns on the bottom/right of the output, < max(stride, dilation). Default 0. */
  outputPadding?: Size2d;
}

/**
 * Everything a kernel needs, in the geometry of one conv2d: the X side [n, ci, hi, wi]
 * (conv2d's input, conv_transpose2d's output), the weight [co, ci/groups, kh, kw] and the
 * Y side [n, co, ho, wo] (conv2d's output, conv_transpose2d's input). See shaders/conv.wgsl.
 */
export interface Geometry {
  n: number;
  ci: number;
  hi: number;
  wi: number;
  co: number;
  ho: number;
  wo: number;
  kh: number;
  kw: number;
  stride: [number, number];
  padding: [number, number];
  dilation: [number, number];
  groups: number;
  /** The user's input was [C, H, W]: outputs and gradients drop the batch dim again. */
  unbatched: boolean;
}

/**
 * Read a (height, width) option: one integer for both or a pair of integers, each ≥ `min`.
 * @throws {TypeError} When it is neither a number nor a pair of numbers.
 * @throws {RangeError} When a value is not an integer ≥ `min`.
 */
export function size2d(
  value: Size2d | undefined,
  fallback: number,
  op: string,
  name: string,
  min: number,
): [number, number] {
  if (value === undefined) return [fallback, fallback];
  const pair = typeof value === "number" ? [value, value] : value;
  if (!Array.isArray(pair) || pair.length !== 2 || pair.some((v) => typeof v !== "number")) {
    throw new TypeError(`${op}: ${name} must be a number or a pair [h, w] of numbers, got ${JSON.stringify(value)}`);
  }
  if (pair.some((v) => !Number.isInteger(v) || v < min)) {
    throw new RangeError(`${op}: ${name} must be integers >= ${min}, got ${JSON.stringify(value)}`);
  }
  return [pair[0], pair[1]];
}

/** The input as [N, C, H, W] (a 3-D input gets N = 1); throws naming the op otherwise. */
export function nchwShape(x: Shape, op: string): { shape: [number, number, number, number]; unbatched: boolean } {
  if (x.length === 4) return { shape: [x[0], x[1], x[2], x[3]], unbatched: false };
  if (x.length === 3) return { shape: [1, x[0], x[1], x[2]], unbatched: true };
  throw new TypeError(`${op}: input must be 3-D [C, H, W] or 4-D [N, C, H, W], got ${fmt(x)}`);
}

function checkGroups(groups: number | undefined, op: string): number {
  const g = groups ?? 1;
  if (!Number.isInteger(g) || g < 1) throw new RangeError(`${op}: groups must be a positive integer, got ${g}`);
  return g;
}

function checkWeight(w: Shape, op: string, layoutText: string): void {
  if (w.length !== 4) throw new TypeError(`${op}: weight must be 4-D ${layoutText}, got ${fmt(w)}`);
}

function checkBias(b: Shape | undefined, channels: number, w: Shape, op: string): void {
  if (b && (b.length !== 1 || b[0] !== channels)) {
    throw new RangeError(`${op}: bias must be [${channels}] to match weight ${fmt(w)}, got ${fmt(b)}`);
  }
}

export function geometry(x: Shape, w: Shape, b: Shape | undefined, options: Conv2dOptions): Geometry {
  const op = "conv2d";
  const { shape: [n, ci, hi, wi], unbatched } = nchwShape(x, op);
  checkWeight(w, op, "[Cout, Cin/groups, kH, kW]");
  const groups = checkGroups(options.groups, op);
  const stride = size2d(options.stride, 1, op, "stride", 1);
  const padding = size2d(options.padding, 0, op, "padding", 0);
  const dilation = size2d(options.dilation, 1, op, "dilation", 1);
  const [co, cig, kh, kw] = w;
  if (ci % groups !== 0) {
    throw new RangeError(`${op}: input channels ${ci} of input ${fmt(x)} are not divisible by groups ${groups}`);
  }
  if (co % groups !== 0) {
    throw new RangeError(`${op}: output channels ${co} of weight ${fmt(w)} are not divisible by groups ${groups}`);
  }
  if (cig * groups !== ci) {
    throw new RangeError(
      `${op}: weight ${fmt(w)} with groups ${groups} expects input with ${cig * groups} channels, got input ${
        fmt(x)
      } with ${ci}`,
    );
  }
  checkBias(b, co, w, op);
  const span = [dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1];
  const padded = [hi + 2 * padding[0], wi + 2 * padding[1]];
  if (kh < 1 || kw < 1 || span[0] > padded[0] || span[1] > padded[1]) {
    throw new RangeError(
      `${op}: kernel ${fmt([kh, kw])} with dilation ${fmt(dilation)} spans ${fmt(span)}, ` +
        `larger than the padded input ${fmt(padded)} of input ${fmt(x)} with padding ${fmt(padding)}`,
    );
  }
  const ho = Math.floor((padded[0] - span[0]) / stride[0]) + 1;
  const wo = Math.floor((padded[1] - span[1]) / stride[1]) + 1;
  return { n, ci, hi, wi, co, ho, wo, kh, kw, stride, padding, dilation, groups, unbatched };
}

export function transposeGeometry(x: Shape, w: Shape, b: Shape | undefined, options: ConvTranspose2dOptions): Geometry {
  const op = "convTranspose2d";
  const { shape: [n, cin, h, wd], unbatched } = nchwShape(x, op);
  checkWeight(w, op, "[Cin, Cout/groups, kH, kW]");
  const groups = checkGroups(options.groups, op);
  const stride = size2d(options.stride, 1, op, "stride", 1);
  const padding = size2d(options.padding, 0, op, "padding", 0);
  const dilation = size2d(options.dilation, 1, op, "dilation", 1);
  const outputPadding = size2d(options.outputPadding, 0, op, "outputPadding", 0);
  const [wcin, cog, kh, kw] = w;
  if (cin % groups !== 0) {
    throw new RangeError(`${op}: input channels ${cin} of input ${fmt(x)} are not divisible by groups ${groups}`);
  }
  if (wcin !== cin) {
    throw new RangeError(
      `${op}: weight ${fmt(w)} expects input with ${wcin} channels, got input ${fmt(x)} with ${cin}`,
    );
  }
  const cout = cog * groups;
  checkBias(b, cout, w, op);
  for (let d = 0; d < 2; d++) {
    if (outputPadding[d] >= Math.max(stride[d], dilation[d])) {
      throw new RangeError(
        `${op}: outputPadding ${fmt(outputPadding)} must be smaller than either stride ${fmt(stride)} ` +
          `or dilation ${fmt(dilation)} in each dim`,
      );
    }
  }
  const k = [kh, kw];
  const out = [h, wd].map((s, d) =>
    (s - 1) * stride[d] - 2 * padding[d] + dilation[d] * (k[d] - 1) + outputPadding[d] + 1
  );
  if (kh < 1 || kw < 1 || out[0] < 1 || out[1] < 1) {
    throw new RangeError(
      `${op}: output size ${fmt(out)} is not positive for input ${fmt(x)}, weight ${fmt(w)}, stride ${fmt(stride)}, ` +
        `padding ${fmt(padding)}, dilation ${fmt(dilation)}, outputPadding ${fmt(outputPadding)}`,
    );
  }
  // In conv2d terms the transposed op's output is the X side and its input the Y side.
  return {
    n,
    ci: cout,
    hi: out[0],
    wi: out[1],
    co: cin,
    ho: h,
    wo: wd,
    kh,
    kw,
    stride,
    padding,
    dilation,
    groups,
    unbatched,
  };
}

/** Shape of one side of a geometry, without the batch dim when the input had none. */
export function sideShape(g: Geometry, side: "x" | "y"): number[] {
  const s = side === "x" ? [g.n, g.ci, g.hi, g.wi] : [g.n, g.co, g.ho, g.wo];
  return g.unbatched ? s.slice(1) : s;
}

/**
 * Output shape of {@link conv2d}: `[N, Cout, Hout, Wout]` (or `[Cout, Hout, Wout]` for a 3-D
 * input) with `Hout = ⌊(H + 2·padding − dilation·(kH − 1) − 1) / stride⌋ + 1`. Pure; no GPU.
 * @param x Input shape [N, Cin, H, W] or [Cin, H, W].
 * @param w Weight shape [Cout, Cin/groups, kH, kW].
 * @param b Bias shape [Cout], if any.
 * @throws {TypeError} When a shape has the wrong rank or an option is not a number or pair.
 * @throws {RangeError} When channels disagree with the weight or groups, the bias length is not
 *   Cout, an option is out of range, or the dilated kernel exceeds the padded input.
 * @example
 * ```ts
 * import { conv2dShape } from "./conv_shape.ts";
 * conv2dShape([64, 1, 28, 28], [6, 1, 5, 5], [6]); // [64, 6, 24, 24]
 * ```
 */
export function conv2dShape(x: Shape, w: Shape, b?: Shape, options: Conv2dOptions = {}): number[] {
  return sideShape(geometry(x, w, b, options), "y");
}

/**
 * Output shape of {@link convTranspose2d}: `[N, Cout, Hout, Wout]` with Cout = weight[1]·groups and
 * `Hout = (H − 1)·stride − 2·padding + dilation·(kH − 1) + outputPadding + 1`. Pure; no GPU.
 * @param x Input shape [N, Cin, H, W] or [Cin, H, W].
 * @param w Weight shape [Cin, Cout/groups, kH, kW].
 * @param b Bias shape [Cout], if any.
 * @throws {TypeError} When a shape has the wrong rank or an option is not a number or pair.
 * @throws {RangeError} When channels disagree, outputPadding ≥ max(stride, dilation), an option is
 *   out of range, or the output would be empty.
 * @example
 * ```ts
 * import { convTranspose2dShape } from "./conv_shape.ts";
 * convTranspose2dShape([1, 4, 7, 7], [4, 2, 3, 3], undefined, { stride: 2, outputPadding: 1 }); // [1, 2, 16, 16]
 * ```
 */
export function convTranspose2dShape(x: Shape, w: Shape, b?: Shape, options: ConvTranspose2dOptions = {}): number[] {
  return sideShape(transposeGeometry(x, w, b, options), "x");
}
