/**
 * conv1d (PyTorch's `F.conv1d`): the shape rule in 1-D terms, then conv2d's kernels of
 * shaders/conv.wgsl on the same memory seen as height 1 ([N, C, L] → [N, C, 1, L], the
 * weight [O, C/G, K] → [O, C/G, 1, K]; reshapes are views, no copy). With kh = 1 conv_tile's
 * tile (4 output channels × 8 columns of one row) is a 1-D tile already, and every tap it
 * skips in height is none: the 2-D kernel does exactly the 1-D work.
 */
import type { OpDef } from "../op.ts";
import { fmt, type Shape } from "../shape.ts";
import type { Tensor } from "../tensor.ts";
import { conv2dOp } from "./conv.ts";
import type { Conv2dOptions } from "./conv_shape.ts";

/** A length option of the 1-D ops: one integer, or PyTorch's one-element tuple `[n]`. */
export type Size1d = number | readonly [number];

/** Options of {@link conv1d} (PyTorch's `F.conv1d` keywords). */
export interface Conv1dOptions {
  /** Step between windows, ≥ 1. Default 1. */
  stride?: Size1d;
  /** Zeros added on each end, ≥ 0. Default 0. */
  padding?: Size1d;
  /** Spacing between kernel taps, ≥ 1. Default 1. */
  dilation?: Size1d;
  /** Channel groups; input and output channels must both divide by it. Default 1. */
  groups?: number;
}

/**
 * Read a length option: an integer ≥ `min`, or a one-element array of one.
 * @throws {TypeError} When it is neither a number nor `[number]`.
 * @throws {RangeError} When the value is not an integer ≥ `min`.
 */
export function size1d(value: Size1d | undefined, fallback: number, op: string, name: string, min: number): number {
  if (value === undefined) return fallback;
  const v = typeof value === "number" ? value : Array.isArray(value) && value.length === 1 ? value[0] : undefined;
  if (typeof v !== "number") {
    throw new TypeError(`${op}: ${name} must be a number or a one-element array [n], got ${JSON.stringify(value)}`);
  }
  if (!Number.isInteger(v) || v < min) {
    throw new RangeError(`${op}: ${name} must be an integer >= ${min}, got ${JSON.stringify(value)}`);
  }
  return v;
}

/** The input as [N, C, L] (a 2-D input gets N = 1); throws naming the op otherwise. */
export function nclShape(x: Shape, op: string): { shape: [number, number, number]; unbatched: boolean } {
  if (x.length === 3) return { shape: [x[0], x[1], x[2]], unbatched: false };
  if (x.length === 2) return { shape: [1, x[0], x[1]], unbatched: true };
  throw new TypeError(`${op}: input must be 2-D [C, L] or 3-D [N, C, L], got ${fmt(x)}`);
}

/** A checked conv1d: its output shape and the conv2d call that computes it. */
interface Conv1dPlan {
  out: number[];
  x4: number[];
  w4: number[];
  y4: number[];
  options: Conv2dOptions;
}

function plan(x: Shape, w: Shape, b: Shape | undefined, options: Conv1dOptions): Conv1dPlan {
  const op = "conv1d";
  const { shape: [n, ci, l], unbatched } = nclShape(x, op);
  if (w.length !== 3) throw new TypeError(`${op}: weight must be 3-D [Cout, Cin/groups, K], got ${fmt(w)}`);
  const groups = options.groups ?? 1;
  if (!Number.isInteger(groups) || groups < 1) {
    throw new RangeError(`${op}: groups must be a positive integer, got ${groups}`);
  }
  const stride = size1d(options.stride, 1, op, "stride", 1);
  const padding = size1d(options.padding, 0, op, "padding", 0);
  const dilation = size1d(options.dilation, 1, op, "dilation", 1);
  const [co, cig, k] = w;
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
  if (b && (b.length !== 1 || b[0] !== co)) {
    throw new RangeError(`${op}: bias must be [${co}] to match weight ${fmt(w)}, got ${fmt(b)}`);
  }
  const span = dilation * (k - 1) + 1, padded = l + 2 * padding;
  if (k < 1 || span > padded) {
    throw new RangeError(
      `${op}: kernel ${k} with dilation ${dilation} spans ${span}, larger than the padded length ${padded} ` +
        `of input ${fmt(x)} with padding ${padding}`,
    );
  }
  const lo = Math.floor((padded - span) / stride) + 1;
  return {
    out: unbatched ? [co, lo] : [n, co, lo],
    x4: [n, ci, 1, l],
    w4: [co, cig, 1, k],
    y4: [n, co, 1, lo],
    options: { stride: [1, stride], padding: [0, padding], dilation: [1, dilation], groups },
  };
}

/**
 * Output shape of {@link conv1d}: `[N, Cout, Lout]` (or `[Cout, Lout]` for a 2-D input) with
 * `Lout = ⌊(L + 2·padding − dilation·(K − 1) − 1) / stride⌋ + 1`. Pure; no GPU.
 * @param x Input shape [N, Cin, L] or [Cin, L].
 * @param w Weight shape [Cout, Cin/groups, K].
 * @param b Bias shape [Cout], if any.
 * @throws {TypeError} When a shape has the wrong rank or an option is not a number.
 * @throws {RangeError} When channels disagree with the weight or groups, the bias length is not
 *   Cout, an option is out of range, or the dilated kernel exceeds the padded input.
 * @example
 * ```ts
 * import { conv1dShape } from "./conv1d.ts";
 * conv1dShape([8, 4, 101], [6, 2, 5], [6], { groups: 2, padding: 2 }); // [8, 6, 101]
 * ```
 */
export function conv1dShape(x: Shape, w: Shape, b?: Shape, options: Conv1dOptions = {}): number[] {
  return plan(x, w, b, options).out;
}

/**
 * 1-D convolution as PyTorch's `F.conv1d` (cross-correlation, NCL). Inputs: x [N, Cin, L]
 * (or [Cin, L]), weight [Cout, Cin/groups, K], optional bias [Cout]. Runs conv2d's forward and
 * backward kernels at height 1; backward gives the gradients of x, weight and bias.
 */
export const conv1dOp: OpDef<Conv1dOptions> = {
  name: "conv1d",
  forward(inputs, attrs) {
    if (inputs.length < 2 || inputs.length > 3) {
      throw new TypeError(`conv1d: expects [input, weight] or [input, weight, bias], got ${inputs.length} tensors`);
    }
    for (const t of inputs) {
      if (t.dtype !== "f32") throw new TypeError(`conv1d: expects f32 tensors, got ${t.dtype} ${fmt(t.shape)}`);
    }
    const [x, w, b] = inputs;
    const p = plan(x.shape, w.shape, b?.shape, attrs);
    const four = [x.reshape(p.x4), w.reshape(p.w4), ...(b ? [b] : [])];
    const res = conv2dOp.forward(four, p.options);
    return { output: res.output.reshape(p.out), saved: res.saved };
  },
  backward(dy, ctx) {
    const p = plan(ctx.shapes[0], ctx.shapes[1], ctx.shapes[2], ctx.attrs);
    const shapes = [p.x4, p.w4, ...ctx.shapes.slice(2)];
    const grads = conv2dOp.backward!(dy.reshape(p.y4), {
      shapes,
      needs: ctx.needs,
      saved: ctx.saved,
      output: ctx.output.reshape(p.y4),
      attrs: p.options,
    });
    return grads.map((g: Tensor | null, i) => (g ? g.reshape(ctx.shapes[i]) : null));
  },
};

/**
 * 1-D convolution (PyTorch's `F.conv1d`): y[n, o] = b[o] + Σ_j w[o, j] ⋆ x[n, group(o)·Cin/groups + j].
 * @param x Input [N, Cin, L] or [Cin, L], f32.
 * @param w Weight [Cout, Cin/groups, K].
 * @param b Optional bias [Cout].
 * @param options stride, padding, dilation (a number or `[n]`) and groups.
 * @returns [N, Cout, Lout] (or [Cout, Lout]); see {@link conv1dShape}.
 * @throws {TypeError} On a wrong rank or dtype; {@link conv1dShape} lists the rest.
 * @example
 * ```ts
 * import { Device } from "../../gpu/mod.ts";
 * import { randn } from "../creation.ts";
 * import { conv1d } from "./conv1d.ts";
 * await Device.request();
 * const y = conv1d(randn([8, 4, 101]), randn([6, 4, 5]), randn([6]), { stride: 2 });
 * console.log(y.shape); // [8, 6, 49]
 * ```
 */
export function conv1d(x: Tensor, w: Tensor, b?: Tensor | null, options: Conv1dOptions = {}): Tensor {
  return conv1dOp.forward(b ? [x, w, b] : [x, w], options).output;
}
