/** Batch normalization (shaders/norm.wgsl, one workgroup per channel), PyTorch semantics. */
import { Device, launch, tuning } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { fmt, numel, type Shape } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { NORM } from "./norm.ts";
import { type AffineInputs, affineSlots, checkEps, checkParam, constant } from "./norm_affine.ts";

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
