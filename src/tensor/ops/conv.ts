import { Device, kernel, launch, layout, tuning } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { fmt, type Shape } from "../shape.ts";
import { Tensor } from "../tensor.ts";

/** Mirrors `struct Params` in shaders/conv.wgsl. */
export const CONV_PARAMS = layout("conv", "Params", {
  n: "u32",
  groups: "u32",
  cin: "u32",
  hin: "u32",
  win: "u32",
  cout: "u32",
  hout: "u32",
  wout: "u32",
  kh: "u32",
  kw: "u32",
  stride_h: "i32",
  stride_w: "i32",
  pad_h: "i32",
  pad_w: "i32",
  dil_h: "i32",
  dil_w: "i32",
  in_dil_h: "i32",
  in_dil_w: "i32",
  w_base: "i32",
  w_group: "i32",
  w_out: "i32",
  w_in: "i32",
  w_ky: "i32",
  w_kx: "i32",
  has_bias: "u32",
  total: "u32",
});
/** Storage bindings of shaders/conv.wgsl (src: conv_tile's input, weight_tile's xs). */
export const CONV = kernel(CONV_PARAMS, {
  src: [1, "read"],
  w: [2, "read"],
  bias: [3, "read"],
  dy: [4, "read"],
  out: [5, "read_write"],
});

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
interface Geometry {
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

function geometry(x: Shape, w: Shape, b: Shape | undefined, options: Conv2dOptions): Geometry {
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

function transposeGeometry(x: Shape, w: Shape, b: Shape | undefined, options: ConvTranspose2dOptions): Geometry {
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
function sideShape(g: Geometry, side: "x" | "y"): number[] {
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
 * import { conv2dShape } from "./conv.ts";
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
 * import { convTranspose2dShape } from "./conv.ts";
 * convTranspose2dShape([1, 4, 7, 7], [4, 2, 3, 3], undefined, { stride: 2, outputPadding: 1 }); // [1, 2, 16, 16]
 * ```
 */
export function convTranspose2dShape(x: Shape, w: Shape, b?: Shape, options: ConvTranspose2dOptions = {}): number[] {
  return sideShape(transposeGeometry(x, w, b, options), "x");
}

type ParamValues = { [K in keyof typeof CONV_PARAMS.fields]: number };

/** The weight [co, ci/G, kh, kw] read as conv_tile's kernel for the forward sum (see shaders/conv.wgsl). */
function forwardParams(g: Geometry, hasBias: boolean): ParamValues {
  const cig = g.ci / g.groups, khw = g.kh * g.kw;
  return {
    n: g.n,
    groups: g.groups,
    cin: g.ci,
    hin: g.hi,
    win: g.wi,
    cout: g.co,
    hout: g.ho,
    wout: g.wo,
    kh: g.kh,
    kw: g.kw,
    stride_h: g.stride[0],
    stride_w: g.stride[1],
    pad_h: g.padding[0],
    pad_w: g.padding[1],
    dil_h: g.dilation[0],
    dil_w: g.dilation[1],
    in_dil_h: 1,
    in_dil_w: 1,
    w_base: 0,
    w_group: (g.co / g.groups) * cig * khw,
    w_out: cig * khw,
    w_in: khw,
    w_ky: g.kw,
    w_kx: 1,
    has_bias: hasBias ? 1 : 0,
    total: 0,
  };
}

/**
 * The adjoint sum, X side from Y side: a convolution of the Y side with `stride − 1` zeros
 * inserted between elements, padding dilation·(k − 1) − padding, the kernel flipped and the
 * weight's two channel axes swapped.
 */
function adjointParams(g: Geometry, hasBias: boolean): ParamValues {
  const f = forwardParams(g, hasBias);
  const khw = g.kh * g.kw;
  return {
    ...f,
    cin: g.co,
    hin: g.ho,
    win: g.wo,
    cout: g.ci,
    hout: g.hi,
    wout: g.wi,
    stride_h: 1,
    stride_w: 1,
    pad_h: g.dilation[0] * (g.kh - 1) - g.padding[0],
    pad_w: g.dilation[1] * (g.kw - 1) - g.padding[1],
    in_dil_h: g.stride[0],
    in_dil_w: g.stride[1],
    w_base: khw - 1,
    w_out: khw,
    w_in: f.w_out,
    w_ky: -g.kw,
    w_kx: -1,
  };
}

/** conv_tile's launch: one thread per 4 output channels × 8 columns of one output row. */
function tiles(entry: string, v: ParamValues) {
  const n = v.n * v.groups * Math.ceil(v.cout / v.groups / 4) * v.hout * Math.ceil(v.wout / 8);
  return { entry, params: v, overrides: { WG: tuning.CONV_WG }, groups: Device.grid(n, tuning.CONV_WG) };
}

/** weight_tile's launch: one workgroup per 4 output channels × 1 input channel × 1 kernel row × 4 kernel columns. */
function weightTiles(entry: string, g: Geometry) {
  const total = g.groups * Math.ceil(g.co / g.groups / 4) * (g.ci / g.groups) * g.kh * Math.ceil(g.kw / 4);
  const params = { ...forwardParams(g, false), total };
  return { entry, params, overrides: { WG: tuning.CONV_WG }, groups: Device.grid(total, 1) };
}

/** The bias gradient's launch: one workgroup per channel of dy [n, channels, h, w]. */
function biasSums(entry: string, g: Geometry, dy: Shape) {
  const [channels, h, w] = dy.slice(-3);
  const params = { ...forwardParams(g, false), cout: channels, hout: h, wout: w, total: channels };
  return { entry, params, overrides: { WG: tuning.CONV_WG }, groups: Device.grid(channels, 1) };
}

function checkInputs(inputs: readonly Tensor[], op: string): void {
  if (inputs.length < 2 || inputs.length > 3) {
    throw new TypeError(`${op}: expects [input, weight] or [input, weight, bias], got ${inputs.length} tensors`);
  }
  for (const t of inputs) {
    if (t.dtype !== "f32") throw new TypeError(`${op}: expects f32 tensors, got ${t.dtype} ${fmt(t.shape)}`);
    inputs[0].sameDevice(t, op);
  }
}

const empty = (shape: Shape, device: Device, origin: string) => Tensor.empty(shape, { device }, origin);

/**
 * 2-D convolution as PyTorch's `F.conv2d` (cross-correlation, NCHW). Inputs: x [N, Cin, H, W]
 * (or [Cin, H, W]), weight [Cout, Cin/groups, kH, kW], optional bias [Cout]. Backward gives
 * the gradients of x, weight and bias.
 */
export const conv2dOp: OpDef<Conv2dOptions> = {
  name: "conv2d",
  forward(inputs, attrs) {
    checkInputs(inputs, "conv2d");
    const [x, w, b] = inputs;
    const g = geometry(x.shape, w.shape, b?.shape, attrs);
    const y = empty(sideShape(g, "y"), x.device, "conv2d");
    // NOTE: every conv_tile entry names `bias`; without one the weight stands in (has_bias = 0).
    const io = { src: x, w, bias: b ?? w, out: y };
    launch(x.device, CONV, { ...tiles("conv2d_forward", forwardParams(g, b !== undefined)), io });
    return { output: y, saved: [x, w] };
  },
  backward(dy, ctx) {
    const [x, w] = ctx.saved;
    const g = geometry(ctx.shapes[0], ctx.shapes[1], ctx.shapes[2], ctx.attrs);
    const d = dy.device;
    let dx: Tensor | null = null, dw: Tensor | null = null, db: Tensor | null = null;
    if (ctx.needs[0]) {
      dx = empty(ctx.shapes[0], d, "conv2d.backward");
      launch(d, CONV, {
        ...tiles("conv2d_backward_input", adjointParams(g, false)),
        io: { src: dy, w, out: dx, bias: w },
      });
    }
    if (ctx.needs[1]) {
      dw = empty(ctx.shapes[1], d, "conv2d.backward");
      launch(d, CONV, { ...weightTiles("conv2d_backward_weight", g), io: { src: x, dy, out: dw } });
    }
    if (ctx.shapes.length > 2 && ctx.needs[2]) {
      db = empty(ctx.shapes[2], d, "conv2d.backward");
      launch(d, CONV, { ...biasSums("conv2d_backward_bias", g, dy.shape), io: { dy, out: db } });
    }
    return ctx.shapes.length > 2 ? [dx, dw, db] : [dx, dw];
  },
};

/**
 * Transposed 2-D convolution as PyTorch's `F.conv_transpose2d` (the gradient of conv2d with
 * respect to its input). Inputs: x [N, Cin, H, W] (or [Cin, H, W]), weight [Cin, Cout/groups,
 * kH, kW], optional bias [Cout]. Backward gives the gradients of x, weight and bias.
 */
export const convTranspose2dOp: OpDef<ConvTranspose2dOptions> = {
  name: "convTranspose2d",
  forward(inputs, attrs) {
    checkInputs(inputs, "convTranspose2d");
    const [x, w, b] = inputs;
    const g = transposeGeometry(x.shape, w.shape, b?.shape, attrs);
    const y = empty(sideShape(g, "x"), x.device, "convTranspose2d");
    const io = { src: x, w, bias: b ?? w, out: y };
    launch(x.device, CONV, { ...tiles("conv_transpose2d_forward", adjointParams(g, b !== undefined)), io });
    return { output: y, saved: [x, w] };
  },
  backward(dy, ctx) {
    const [x, w] = ctx.saved;
    const g = transposeGeometry(ctx.shapes[0], ctx.shapes[1], ctx.shapes[2], ctx.attrs);
    const d = dy.device;
    let dx: Tensor | null = null, dw: Tensor | null = null, db: Tensor | null = null;
    if (ctx.needs[0]) {
      dx = empty(ctx.shapes[0], d, "convTranspose2d.backward");
      launch(d, CONV, {
        ...tiles("conv_transpose2d_backward_input", forwardParams(g, false)),
        io: { src: dy, w, bias: w, out: dx },
      });
    }
    if (ctx.needs[1]) {
      // The weight gradient of the conv2d this op is the adjoint of: its input is our dy, its output our x.
      dw = empty(ctx.shapes[1], d, "convTranspose2d.backward");
      launch(d, CONV, { ...weightTiles("conv_transpose2d_backward_weight", g), io: { src: dy, dy: x, out: dw } });
    }
    if (ctx.shapes.length > 2 && ctx.needs[2]) {
      db = empty(ctx.shapes[2], d, "convTranspose2d.backward");
      launch(d, CONV, { ...biasSums("conv_transpose2d_backward_bias", g, dy.shape), io: { dy, out: db } });
    }
    return ctx.shapes.length > 2 ? [dx, dw, db] : [dx, dw];
  },
};

/**
 * 2-D convolution (PyTorch's `F.conv2d`): y[n, o] = b[o] + Σ_j w[o, j] ⋆ x[n, group(o)·Cin/groups + j].
 * @param x Input [N, Cin, H, W] or [Cin, H, W], f32.
 * @param w Weight [Cout, Cin/groups, kH, kW].
 * @param b Optional bias [Cout].
 * @param options stride, padding, dilation (number or [h, w]) and groups.
 * @returns [N, Cout, Hout, Wout] (or [Cout, Hout, Wout]); see {@link conv2dShape}.
 * @throws {TypeError} On a wrong rank or dtype; {@link conv2dShape} lists the rest.
 * @example
 * ```ts
 * import { Device } from "../../gpu/mod.ts";
 * import { randn } from "../creation.ts";
 * import { conv2d } from "./conv.ts";
 * await Device.request();
 * const y = conv2d(randn([64, 1, 28, 28]), randn([6, 1, 5, 5]), randn([6]));
 * console.log(y.shape); // [64, 6, 24, 24]
 * ```
 */
export function conv2d(x: Tensor, w: Tensor, b?: Tensor | null, options: Conv2dOptions = {}): Tensor {
  return conv2dOp.forward(b ? [x, w, b] : [x, w], options).output;
}

/**
 * Transposed 2-D convolution (PyTorch's `F.conv_transpose2d`): each input pixel scatters
 * w[c] scaled by it into a stride-spaced output window; the adjoint of {@link conv2d}.
 * @param x Input [N, Cin, H, W] or [Cin, H, W], f32.
 * @param w Weight [Cin, Cout/groups, kH, kW].
 * @param b Optional bias [Cout].
 * @param options stride, padding, outputPadding, dilation (number or [h, w]) and groups.
 * @returns [N, Cout, Hout, Wout] (or 3-D); see {@link convTranspose2dShape}.
 * @throws {TypeError} On a wrong rank or dtype; {@link convTranspose2dShape} lists the rest.
 * @example
 * ```ts
 * import { Device } from "../../gpu/mod.ts";
 * import { randn } from "../creation.ts";
 * import { convTranspose2d } from "./conv.ts";
 * await Device.request();
 * const y = convTranspose2d(randn([1, 4, 7, 7]), randn([4, 2, 3, 3]), null, { stride: 2, outputPadding: 1 });
 * console.log(y.shape); // [1, 2, 16, 16]
 * ```
 */
export function convTranspose2d(x: Tensor, w: Tensor, b?: Tensor | null, options: ConvTranspose2dOptions = {}): Tensor {
  return convTranspose2dOp.forward(b ? [x, w, b] : [x, w], options).output;
}
