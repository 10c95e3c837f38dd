/** RMS normalization (shaders/norm.wgsl, one thread segment per row), as flodl's RMSNorm. */
import { launch } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { numel, type Shape } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { columnLaunch, NORM, normalizedDims, rowLaunch } from "./norm.ts";
import { affineSlots, checkEps, checkParam, constant } from "./norm_affine.ts";

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
      ...rowLaunch(rows, len),
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
        ...rowLaunch(rows, len),
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
        ...columnLaunch(rows, len),
      });
      grads[1] = dw;
    }
    return grads;
  },
};

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
 * import { rmsNorm } from "./rms_norm.ts";
 * await Device.request();
 * const y = rmsNorm(fromArray([1, 2, 3, 4, 5, 6], [2, 3]), [3]);
 * console.log(await y.toArray());
 * ```
 */
export function rmsNorm(x: Tensor, normalizedShape: Shape | number, weight?: Tensor, eps = 1e-5): Tensor {
  const inputs = weight ? [x, weight] : [x];
  return rmsNormOp.forward(inputs, { normalizedShape, eps, weight: !!weight }).output;
}
