import { Device, type Kernel, kernel, launch, type Layout, layout, tuning } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { fmt, type Shape } from "../shape.ts";
import {
  type Conv2dOptions,
  type ConvTranspose2dOptions,
  type Geometry,
  geometry,
  sideShape,
  transposeGeometry,
} from "./conv_shape.ts";
import { Tensor } from "../tensor.ts";

/** Mirrors `struct Params` in shaders/conv.wgsl. */
export const CONV_PARAMS: Layout<{
  n: "u32"; groups: "u32"; cin: "u32"; hin: "u32"; win: "u32"; cout: "u32"; hout: "u32"; wout: "u32";
  kh: "u32"; kw: "u32"; stride_h: "i32"; stride_w: "i32"; pad_h: "i32"; pad_w: "i32"; dil_h: "i32";
  dil_w: "i32"; in_dil_h: "i32"; in_dil_w: "i32"; w_base: "i32"; w_group: "i32"; w_out: "i32"; w_in: "i32";
  w_ky: "i32"; w_kx: "i32"; has_bias: "u32"; total: "u32";
}> = layout("conv", "Params", {
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
export const CONV: Kernel<typeof CONV_PARAMS, {
  src: [number, "read"]; w: [number, "read"]; bias: [number, "read"]; dy: [number, "read"];
  out: [number, "read_write"];
}> = kernel(CONV_PARAMS, {
  src: [1, "read"],
  w: [2, "read"],
  bias: [3, "read"],
  dy: [4, "read"],
  out: [5, "read_write"],
});

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
