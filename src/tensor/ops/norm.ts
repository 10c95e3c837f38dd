import { Device, kernel, launch, layout, tuning } from "../../gpu/mod.ts";
import { fromArray } from "../creation.ts";
import type { OpDef } from "../op.ts";
import { fmt, numel, sameShape, type Shape } from "../shape.ts";
import { Tensor } from "../tensor.ts";

/** Mirrors `struct Params` in shaders/norm.wgsl. */
export const NORM_PARAMS = layout("norm", "Params", {
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
export const NORM = kernel(NORM_PARAMS, {
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
}, { rows: 0, len: 0, inner: 1, channels: 0, eps: 0, momentum: 0, training: 0, w_stride: 1, b_stride: 1 });

/**
 * Which optional inputs an op call carries after its fixed ones. When omitted they are
 * inferred from the input count: one extra input is the weight, two are weight and bias.
 */
export interface AffineInputs {
  /** The inputs include a weight. */
  weight?: boolean;
  /** The inputs include a bias (after the weight, when both). */
  bias?: boolean;
}

/** Attributes of {@link layerNormOp}; inputs are [x, weight?, bias?]. */
export interface LayerNormAttrs extends AffineInputs {
  /** The trailing dims normalized over. */
  normalizedShape: Shape | number;
  /** Added to the variance (default 1e-5). */
  eps?: number;
}

/** Options of {@link batchNorm}. */
export interface BatchNormOptions {
  /** Batch statistics (and update the running ones) when true; running statistics when false. */
  training: boolean;
  /** Weight of the new batch statistic in the running average, in [0, 1] (default 0.1). */
  momentum?: number;
  /** Added to the variance (default 1e-5). */
  eps?: number;
}

/** Attributes of {@link batchNormOp}; inputs are [x, runningMean, runningVar, weight?, bias?]. */
export interface BatchNormAttrs extends BatchNormOptions, AffineInputs {}

const constants = new WeakMap<Device, Map<number, Tensor>>();

/** A kept one-element tensor holding `v` on `device`, made once: the stand-in for an absent weight (1) or bias (0). */
function constant(device: Device, v: number): Tensor {
  let m = constants.get(device);
  if (!m) constants.set(device, m = new Map());
  let t = m.get(v);
  if (!t || t.released) {
    t = fromArray([v], [1], { device }).keep();
    m.set(v, t);
  }
  return t;
}

/** Index of the weight and bias among the inputs (-1 when absent), after `fixed` inputs. */
function affineSlots(attrs: AffineInputs, count: number, fixed: number): { w: number; b: number } {
  const extra = count - fixed;
  const hasW = attrs.weight ?? extra >= 1;
  const hasB = attrs.bias ?? extra >= 2;
  if (Number(hasW) + Number(hasB) !== extra) {
    throw new RangeError(`Norm op: got ${extra} weight/bias inputs but attrs say weight ${hasW}, bias ${hasB}`);
  }
  return { w: hasW ? fixed : -1, b: hasB ? fixed + Number(hasW) : -1 };
}

function checkEps(eps: number, op: string): void {
  if (!(eps >= 0) || !Number.isFinite(eps)) throw new RangeError(`${op}: eps must be a finite number >= 0, got ${eps}`);
}

function checkParam(t: Tensor, want: Shape, x: Tensor, op: string, name: string): void {
  x.sameDevice(t, op);
  if (t.dtype !== "f32") throw new TypeError(`${op}: ${name} must be f32, got ${t.dtype}`);
  if (!sameShape(t.shape, want)) {
    throw new RangeError(`${op}: ${name} ${fmt(t.shape)} must be ${fmt(want)} for input ${fmt(x.shape)}`);
  }
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
    launch(x.device, NORM, {
      entry: "layer_norm_forward",
      params: values,
      io: { x, w, b, y, stats },
      groups: Device.grid(rows, 1),
      overrides: { WG: tuning.reduceWg(len) },
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
    if (ctx.needs[0]) {
      const dx = Tensor.empty(x.shape, { device: dev }, "layerNorm.backward");
      launch(dev, NORM, {
        entry: "layer_norm_backward",
        params: values,
        io: { x, w, stats, dy, dx },
        groups: Device.grid(rows, 1),
        overrides: { WG: tuning.reduceWg(len) },
      });
      grads[0] = dx;
    }
    if (slot.w >= 0 && ctx.needs[slot.w]) {
      const dw = Tensor.empty(ns, { device: dev }, "layerNorm.backward");
      launch(dev, NORM, {
        entry: "layer_norm_backward_weight",
        params: values,
        io: { x, stats, dy, dw },
        groups: Device.grid(len, 1),
        overrides: { WG: tuning.reduceWg(rows) },
      });
      grads[slot.w] = dw;
    }
    if (slot.b >= 0 && ctx.needs[slot.b]) {
      const db = Tensor.empty(ns, { device: dev }, "layerNorm.backward");
      launch(dev, NORM, {
        entry: "layer_norm_backward_bias",
        params: values,
        io: { dy, db },
        groups: Device.grid(len, 1),
        overrides: { WG: tuning.reduceWg(rows) },
      });
      grads[slot.b] = db;
    }
    return grads;
  },
};

// ---- batch norm ---------------------------------------------------------------------

/** x [N, C, ...] as N, C and S = product of the rest (pure). */
function batchDims(shape: Shape, op: string): { n: number; c: number; s: number } {
  if (shape.length < 2) throw new TypeError(`${op}: input must be [N, C] or [N, C, ...], got ${fmt(shape)}`);
  return { n: shape[0], c: shape[1], s: numel(shape.slice(2)) };
}

/**
 * Batch normalization over all dims but the channel dim 1. Training normalizes with the
 * batch statistics and updates the running ones in place; eval uses the running ones.
 * Saves [x, weight or 1, stats] (the statistics used, so a later in-place update of the
 * running buffers does not change this backward).
 */
export const batchNormOp: OpDef<BatchNormAttrs> = {
  name: "batchNorm",
  forward(inputs, attrs) {
    const op = "batchNorm";
    const [x, rm, rv] = inputs;
    if (!x || !rm || !rv) {
      throw new TypeError(`${op}: expects inputs [x, runningMean, runningVar, weight?, bias?], got ${inputs.length}`);
    }
    if (x.dtype !== "f32") throw new TypeError(`${op}: expects an f32 tensor, got ${x.dtype}`);
    const { n, c, s } = batchDims(x.shape, op);
    checkParam(rm, [c], x, op, "runningMean");
    checkParam(rv, [c], x, op, "runningVar");
    if (rm.buffer === rv.buffer) throw new RangeError(`${op}: runningMean and runningVar must be different tensors`);
    const slot = affineSlots(attrs, inputs.length, 3);
    if (slot.w >= 0) checkParam(inputs[slot.w], [c], x, op, "weight");
    if (slot.b >= 0) checkParam(inputs[slot.b], [c], x, op, "bias");
    const momentum = attrs.momentum ?? 0.1;
    if (!(momentum >= 0 && momentum <= 1)) throw new RangeError(`${op}: momentum must be in [0, 1], got ${momentum}`);
    const eps = attrs.eps ?? 1e-5;
    checkEps(eps, op);
    const len = n * s;
    if (attrs.training && len <= 1) {
      throw new RangeError(`${op}: training needs more than 1 value per channel, got input ${fmt(x.shape)}`);
    }
    const w = slot.w >= 0 ? inputs[slot.w] : constant(x.device, 1);
    const b = slot.b >= 0 ? inputs[slot.b] : constant(x.device, 0);
    const y = Tensor.empty(x.shape, { device: x.device }, op);
    const stats = Tensor.empty([2 * c], { device: x.device }, "batchNorm.stats");
    const values = {
      rows: n,
      len,
      inner: s,
      channels: c,
      eps,
      momentum,
      training: attrs.training ? 1 : 0,
      w_stride: slot.w >= 0 ? 1 : 0,
      b_stride: slot.b >= 0 ? 1 : 0,
    };
    const io = { x, w, b, y, stats, running_mean: rm, running_var: rv };
    launch(x.device, NORM, {
      entry: "batch_norm_forward",
      params: values,
      io,
      groups: Device.grid(c, 1),
      overrides: { WG: tuning.reduceWg(len) },
    });
    return { output: y, saved: [x, w, stats] };
  },
  backward(dy, ctx) {
    const [x, w, stats] = ctx.saved;
    const { n, c, s } = batchDims(x.shape, "batchNorm");
    const slot = affineSlots(ctx.attrs, ctx.shapes.length, 3);
    const grads: (Tensor | null)[] = ctx.shapes.map(() => null);
    const wantW = slot.w >= 0 && ctx.needs[slot.w];
    const wantB = slot.b >= 0 && ctx.needs[slot.b];
    if (!ctx.needs[0] && !wantW && !wantB) return grads;
    const dev = dy.device;
    const len = n * s;
    const values = {
      rows: n,
      len,
      inner: s,
      channels: c,
      training: ctx.attrs.training ? 1 : 0,
      w_stride: slot.w >= 0 ? 1 : 0,
    };
    const dw = Tensor.empty([c], { device: dev }, "batchNorm.backward");
    const db = Tensor.empty([c], { device: dev }, "batchNorm.backward");
    const io = { x, stats, dy, dw, db };
    if (ctx.needs[0]) {
      const dx = Tensor.empty(x.shape, { device: dev }, "batchNorm.backward");
      launch(dev, NORM, {
        entry: "batch_norm_backward",
        params: values,
        io: { ...io, w, dx },
        groups: Device.grid(c, 1),
        overrides: { WG: tuning.reduceWg(len) },
      });
      grads[0] = dx;
    } else {
      launch(dev, NORM, {
        entry: "batch_norm_backward_params",
        params: values,
        io,
        groups: Device.grid(c, 1),
        overrides: { WG: tuning.reduceWg(len) },
      });
    }
    if (wantW) grads[slot.w] = dw;
    else dw.dispose();
    if (wantB) grads[slot.b] = db;
    else db.dispose();
    return grads;
  },
};

// ---- RMS norm -----------------------------------------------------------------------

/** Attributes of {@link rmsNormOp}; inputs are [x, weight?]. */
export interface RmsNormAttrs {
  /** The trailing dims normalized over. */
  normalizedShape: Shape | number;
  /** Added to the mean square (default 1e-5, flodl's; PyTorch's default is f32 machine epsilon). */
  eps?: number;
  /** The inputs include a weight (inferred from the input count when omitted). */
  weight?: boolean;
}

/** RMS normalization over the trailing `normalizedShape` dims; saves [x, weight or 1, stats]. */
export const rmsNormOp: OpDef<RmsNormAttrs> = {
  name: "rmsNorm",
  forward(inputs, attrs) {
    const op = "rmsNorm";
    const x = inputs[0];
    if (x.dtype !== "f32") throw new TypeError(`${op}: expects an f32 tensor, got ${x.dtype}`);
    const ns = normalizedDims(attrs.normalizedShape, x.shape, op);
    const eps = attrs.eps ?? 1e-5;
    checkEps(eps, op);
    const slot = affineSlots({ weight: attrs.weight, bias: false }, inputs.length, 1);
    if (slot.w >= 0) checkParam(inputs[slot.w], ns, x, op, "weight");
    const w = slot.w >= 0 ? inputs[slot.w] : constant(x.device, 1);
    const len = numel(ns);
    const rows = x.numel / len;
    const y = Tensor.empty(x.shape, { device: x.device }, op);
    const stats = Tensor.empty([2 * rows], { device: x.device }, "rmsNorm.stats");
    const values = { rows, len, eps, w_stride: slot.w >= 0 ? 1 : 0 };
    launch(x.device, NORM, {
      entry: "rms_norm_forward",
      params: values,
      io: { x, w, y, stats },
      groups: Device.grid(rows, 1),
      overrides: { WG: tuning.reduceWg(len) },
    });
    return { output: y, saved: [x, w, stats] };
  },
  backward(dy, ctx) {
    const [x, w, stats] = ctx.saved;
    const ns = normalizedDims(ctx.attrs.normalizedShape, x.shape, "rmsNorm");
    const hasW = ctx.shapes.length > 1;
    const len = numel(ns);
    const rows = x.numel / len;
    const values = { rows, len, w_stride: hasW ? 1 : 0 };
    const grads: (Tensor | null)[] = ctx.shapes.map(() => null);
    const dev = dy.device;
    if (ctx.needs[0]) {
      const dx = Tensor.empty(x.shape, { device: dev }, "rmsNorm.backward");
      const io = { x, w, stats, dy, dx };
      launch(dev, NORM, {
        entry: "rms_norm_backward",
        params: values,
        io,
        groups: Device.grid(rows, 1),
        overrides: { WG: tuning.reduceWg(len) },
      });
      grads[0] = dx;
    }
    if (hasW && ctx.needs[1]) {
      // The saved mean is 0, so layer norm's dw = sum dy * (x - 0) * rstd is RMS norm's.
      const dw = Tensor.empty(ns, { device: dev }, "rmsNorm.backward");
      const io = { x, stats, dy, dw };
      launch(dev, NORM, {
        entry: "layer_norm_backward_weight",
        params: values,
        io,
        groups: Device.grid(len, 1),
        overrides: { WG: tuning.reduceWg(rows) },
      });
      grads[1] = dw;
    }
    return grads;
  },
};

// ---- tensor-level functions -----------------------------------------------------------

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

/**
 * Batch normalization of x [N, C], [N, C, L] or [N, C, H, W] per channel, as
 * `torch.nn.functional.batch_norm`. Training normalizes with the batch mean and biased
 * variance and updates `runningMean` and `runningVar` IN PLACE on the GPU:
 * r = (1 - momentum) r + momentum · batch, with the unbiased batch variance. Eval uses
 * the running statistics and leaves them unchanged.
 * @param runningMean Running mean [C] (updated in training).
 * @param runningVar Running variance [C] (updated in training).
 * @throws {TypeError} For a non-f32 input or one with fewer than 2 dims.
 * @throws {RangeError} When running stats, weight or bias are not [C] (shapes named), momentum is
 *   outside [0, 1], eps < 0, or training sees a single value per channel.
 */
export function batchNorm(
  x: Tensor,
  runningMean: Tensor,
  runningVar: Tensor,
  weight: Tensor | undefined,
  bias: Tensor | undefined,
  options: BatchNormOptions,
): Tensor {
  const inputs = [x, runningMean, runningVar];
  if (weight) inputs.push(weight);
  if (bias) inputs.push(bias);
  return batchNormOp.forward(inputs, { ...options, weight: !!weight, bias: !!bias }).output;
}

/**
 * RMS normalization over the trailing `normalizedShape` dims, as `torch.nn.functional.rms_norm`
 * and flodl's RMSNorm: x / sqrt(mean(x²) + eps) · weight, no centring and no bias.
 * @param weight Optional scale shaped `normalizedShape`.
 * @param eps Added to the mean square; default 1e-5 (flodl's; PyTorch's default is f32 epsilon).
 * @throws {TypeError} For a non-f32 input or a normalizedShape that is not positive integers.
 * @throws {RangeError} When normalizedShape or weight do not fit the input (shapes named), or eps < 0.
 * @example
 * ```ts
 * import { Device } from "../../gpu/mod.ts";
 * import { fromArray } from "../creation.ts";
 * import { rmsNorm } from "./norm.ts";
 * await Device.request();
 * const y = rmsNorm(fromArray([1, 2, 3, 4, 5, 6], [2, 3]), [3]);
 * console.log(await y.toArray());
 * ```
 */
export function rmsNorm(x: Tensor, normalizedShape: Shape | number, weight?: Tensor, eps = 1e-5): Tensor {
  const inputs = weight ? [x, weight] : [x];
  return rmsNormOp.forward(inputs, { normalizedShape, eps, weight: !!weight }).output;
}
