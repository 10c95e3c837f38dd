/**
 * The norm family of shaders/norm.wgsl: its params and bindings, and layer normalization.
 * Batch and RMS norm, the family's other ops, are ./batch_norm.ts and ./rms_norm.ts.
 */
import { Device, type Kernel, kernel, launch, type Layout, layout, tuning } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { fmt, numel, sameShape, type Shape } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { type AffineInputs, affineSlots, checkEps, checkParam, constant } from "./norm_affine.ts";

export type { AffineInputs } from "./norm_affine.ts";

/** Mirrors `struct Params` in shaders/norm.wgsl. */
export const NORM_PARAMS: Layout<{
  rows: "u32"; len: "u32"; inner: "u32"; channels: "u32"; eps: "f32"; momentum: "f32"; training: "u32";
  w_stride: "u32"; b_stride: "u32";
}> = layout("norm", "Params", {
  rows: "u32",
  len: "u32",
  inner: "u32",
  channels: "u32",
  eps: "f32",
  momentum: "f32",
  training: "u32",
  w_stride: "u32",
  b_stride: "u32",
});
/** Storage bindings of shaders/norm.wgsl. */
export const NORM: Kernel<typeof NORM_PARAMS, {
  x: [number, "read"]; w: [number, "read"]; b: [number, "read"]; y: [number, "read_write"];
  stats: [number, "read_write"]; dy: [number, "read"]; dx: [number, "read_write"];
  dw: [number, "read_write"]; db: [number, "read_write"]; running_mean: [number, "read_write"];
  running_var: [number, "read_write"]; x4: [number, "read"]; w4: [number, "read"]; b4: [number, "read"];
  y4: [number, "read_write"]; dy4: [number, "read"]; dx4: [number, "read_write"];
  dw4: [number, "read_write"]; db4: [number, "read_write"];
}> = kernel(NORM_PARAMS, {
  x: [1, "read"],
  w: [2, "read"],
  b: [3, "read"],
  y: [4, "read_write"],
  stats: [5, "read_write"],
  dy: [6, "read"],
  dx: [7, "read_write"],
  dw: [8, "read_write"],
  db: [9, "read_write"],
  running_mean: [10, "read_write"],
  running_var: [11, "read_write"],
  x4: [12, "read"],
  w4: [13, "read"],
  b4: [14, "read"],
  y4: [15, "read_write"],
  dy4: [16, "read"],
  dx4: [17, "read_write"],
  dw4: [18, "read_write"],
  db4: [19, "read_write"],
}, { rows: 0, len: 0, inner: 1, channels: 0, eps: 0, momentum: 0, training: 0, w_stride: 1, b_stride: 1 });

/** The grid and WGSL overrides of one norm kernel launch. */
export interface NormLaunch {
  /** Workgroup counts [x, y] ({@link Device.grid} over the rows or columns, `perGroup` each). */
  groups: [number, number];
  /** WGSL overrides of the pipeline: `WG` threads a workgroup, `SEG` threads a row (or column). */
  overrides: Record<string, number>;
}

/**
 * Grid and overrides of the norm row kernels (layer and RMS norm forward and backward):
 * one segment of threads per row of `len`, several rows per workgroup ({@link tuning.segmentBlocking}).
 */
export function rowLaunch(rows: number, len: number): NormLaunch {
  const { WG, SEG, perGroup } = tuning.segmentBlocking(len);
  return { groups: Device.grid(rows, perGroup), overrides: { WG, SEG } };
}

/** Grid and overrides of the norm column kernels (weight and bias gradients): one segment per column, over the rows. */
export function columnLaunch(rows: number, len: number): NormLaunch {
  const { WG, SEG, perGroup } = tuning.segmentBlocking(rows);
  return { groups: Device.grid(len, perGroup), overrides: { WG, SEG } };
}

/** Attributes of {@link layerNormOp}; inputs are [x, weight?, bias?]. */
export interface LayerNormAttrs extends AffineInputs {
  /** The trailing dims normalized over. */
  normalizedShape: Shape | number;
  /** Added to the variance (default 1e-5). */
  eps?: number;
}

// ---- layer norm ---------------------------------------------------------------------

/**
 * The normalized shape as a list, checked against the trailing dims of `x` (pure).
 * @throws {TypeError} When it is not a positive integer or a non-empty list of them.
 * @throws {RangeError} When it does not match the trailing dims of `shape` (both named).
 */
export function normalizedDims(normalizedShape: Shape | number, shape: Shape, op = "layerNorm"): number[] {
  const ns = typeof normalizedShape === "number" ? [normalizedShape] : normalizedShape;
  if (!Array.isArray(ns) || ns.length === 0 || ns.some((d) => !Number.isInteger(d) || d <= 0)) {
    throw new TypeError(
      `${op}: normalizedShape must be a positive integer or a non-empty list of them, got ${
        JSON.stringify(normalizedShape)
      }`,
    );
  }
  if (ns.length > shape.length || !sameShape(ns, shape.slice(shape.length - ns.length))) {
    throw new RangeError(`${op}: normalizedShape ${fmt(ns)} does not match the trailing dims of input ${fmt(shape)}`);
  }
  return [...ns];
}

/** Layer normalization over the trailing `normalizedShape` dims; saves [x, weight or 1, stats]. */
export const layerNormOp: OpDef<LayerNormAttrs> = {
  name: "layerNorm",
  forward(inputs, attrs) {
    const op = "layerNorm";
    const x = inputs[0];
    if (x.dtype !== "f32") throw new TypeError(`${op}: expects an f32 tensor, got ${x.dtype}`);
    const ns = normalizedDims(attrs.normalizedShape, x.shape, op);
    const eps = attrs.eps ?? 1e-5;
    checkEps(eps, op);
    const slot = affineSlots(attrs, inputs.length, 1);
    if (slot.w >= 0) checkParam(inputs[slot.w], ns, x, op, "weight");
    if (slot.b >= 0) checkParam(inputs[slot.b], ns, x, op, "bias");
    const w = slot.w >= 0 ? inputs[slot.w] : constant(x.device, 1);
    const b = slot.b >= 0 ? inputs[slot.b] : constant(x.device, 0);
    const len = numel(ns);
    const rows = x.numel / len;
    const y = Tensor.empty(x.shape, { device: x.device }, op);
    const stats = Tensor.empty([2 * rows], { device: x.device }, "layerNorm.stats");
    const values = { rows, len, eps, w_stride: slot.w >= 0 ? 1 : 0, b_stride: slot.b >= 0 ? 1 : 0 };
    const v4 = len % 4 === 0;
    launch(x.device, NORM, {
      entry: v4 ? "layer_norm_forward_vec4" : "layer_norm_forward",
      params: values,
      io: v4 ? { x4: x, w4: w, b4: b, y4: y, stats } : { x, w, b, y, stats },
      ...rowLaunch(rows, v4 ? len / 4 : len),
    });
    return { output: y, saved: [x, w, stats] };
  },
  backward(dy, ctx) {
    const [x, w, stats] = ctx.saved;
    const ns = normalizedDims(ctx.attrs.normalizedShape, x.shape);
    const slot = affineSlots(ctx.attrs, ctx.shapes.length, 1);
    const len = numel(ns);
    const rows = x.numel / len;
    const values = { rows, len, w_stride: slot.w >= 0 ? 1 : 0 };
    const grads: (Tensor | null)[] = ctx.shapes.map(() => null);
    const dev = dy.device;
    // Four values a thread step where rows allow (len a multiple of 4; shaders/norm.wgsl).
    const v4 = len % 4 === 0;
    if (ctx.needs[0]) {
      const dx = Tensor.empty(x.shape, { device: dev }, "layerNorm.backward");
      launch(dev, NORM, {
        entry: v4 ? "layer_norm_backward_vec4" : "layer_norm_backward",
        params: values,
        io: v4 ? { x4: x, w4: w, stats, dy4: dy, dx4: dx } : { x, w, stats, dy, dx },
        ...rowLaunch(rows, v4 ? len / 4 : len),
      });
      grads[0] = dx;
    }
    const needW = slot.w >= 0 && ctx.needs[slot.w];
    const needB = slot.b >= 0 && ctx.needs[slot.b];
    if (needW || needB) {
      const dw = needW ? Tensor.empty(ns, { device: dev }, "layerNorm.backward") : undefined;
      const db = needB ? Tensor.empty(ns, { device: dev }, "layerNorm.backward") : undefined;
      // One launch for both when both are wanted (dy read once), four columns a segment
      // where rows allow.
      const both4 = v4 && dw && db;
      const entry = both4
        ? "layer_norm_backward_params_vec4"
        : dw && db
        ? "layer_norm_backward_params"
        : dw
        ? "layer_norm_backward_weight"
        : "layer_norm_backward_bias";
      const io: Record<string, Tensor> = both4 ? { dy4: dy, x4: x, stats, dw4: dw, db4: db } : { dy };
      if (!both4 && dw) Object.assign(io, { x, stats, dw });
      if (!both4 && db) io.db = db;
      launch(dev, NORM, { entry, params: values, io, ...columnLaunch(rows, both4 ? len / 4 : len) });
      if (dw) grads[slot.w] = dw;
      if (db) grads[slot.b] = db;
    }
    return grads;
  },
};

/**
 * Layer normalization over the trailing `normalizedShape` dims, as
 * `torch.nn.functional.layer_norm`: (x - mean) / sqrt(var + eps) · weight + bias with the
 * biased variance.
 * @param normalizedShape The trailing dims of `x` normalized over (a number for one dim).
 * @param weight Optional scale shaped `normalizedShape`.
 * @param bias Optional shift shaped `normalizedShape`.
 * @throws {TypeError} For a non-f32 input or a normalizedShape that is not positive integers.
 * @throws {RangeError} When normalizedShape, weight or bias do not fit the input (shapes named), or eps < 0.
 * @example
 * ```ts
 * import { Device } from "../../gpu/mod.ts";
 * import { fromArray } from "../creation.ts";
 * import { layerNorm } from "./norm.ts";
 * await Device.request();
 * const y = layerNorm(fromArray([1, 2, 3, 4, 5, 6], [2, 3]), [3]);
 * console.log(await y.toArray());
 * ```
 */
export function layerNorm(
  x: Tensor,
  normalizedShape: Shape | number,
  weight?: Tensor,
  bias?: Tensor,
  eps = 1e-5,
): Tensor {
  const inputs = [x];
  if (weight) inputs.push(weight);
  if (bias) inputs.push(bias);
  return layerNormOp.forward(inputs, { normalizedShape, eps, weight: !!weight, bias: !!bias }).output;
}
