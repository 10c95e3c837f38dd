/**
 * Sigmoid focal loss as torchvision.ops.sigmoid_focal_loss (shaders/loss.wgsl `focal_*`): one
 * kernel writes each element's loss, the loss family's `total_forward` reduces it.
 */
import { Device, launch, tuning } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { fmt, sameShape } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { LOSS, type LossReduction } from "./loss.ts";

/** Options of {@link sigmoidFocalLoss} (torchvision's keywords and defaults). */
export interface SigmoidFocalLossOptions {
  /** Weight of the positive class in [0, 1], or negative for no weighting (default 0.25). */
  alpha?: number;
  /** Focusing exponent on (1 − p_t), >= 0; 0 is plain BCE (default 2). */
  gamma?: number;
  /** "none" (default, as torchvision), "mean" or "sum". */
  reduction?: LossReduction;
}

/** The options checked, with torchvision's defaults filled in. */
export function focalOptions(options: SigmoidFocalLossOptions): Required<SigmoidFocalLossOptions> {
  const { alpha = 0.25, gamma = 2, reduction = "none" } = options;
  if (!Number.isFinite(alpha) || alpha > 1) {
    throw new RangeError(`sigmoidFocalLoss: alpha must be in [0, 1], or negative for none, got ${alpha}`);
  }
  if (!(gamma >= 0) || !Number.isFinite(gamma)) {
    throw new RangeError(`sigmoidFocalLoss: gamma must be a finite number >= 0, got ${gamma}`);
  }
  if (reduction !== "none" && reduction !== "mean" && reduction !== "sum") {
    throw new RangeError(`sigmoidFocalLoss: reduction must be "none", "mean" or "sum", got ${JSON.stringify(reduction)}`);
  }
  return { alpha, gamma, reduction };
}

function checkInputs(inputs: Tensor, targets: Tensor): void {
  inputs.sameDevice(targets, "sigmoidFocalLoss");
  if (inputs.dtype !== "f32" || targets.dtype !== "f32") {
    throw new TypeError(`sigmoidFocalLoss: inputs and targets must be f32, got ${inputs.dtype} and ${targets.dtype}`);
  }
  if (!sameShape(inputs.shape, targets.shape)) {
    throw new RangeError(
      `sigmoidFocalLoss: inputs ${fmt(inputs.shape)} and targets ${fmt(targets.shape)} must have the same shape`,
    );
  }
}

/** Sigmoid focal loss (inputs `[logits, targets]`); gradient for the logits only. */
export const sigmoidFocalLossOp: OpDef<SigmoidFocalLossOptions> = {
  name: "sigmoidFocalLoss",
  forward([x, t], attrs) {
    checkInputs(x, t);
    const { alpha, gamma, reduction } = focalOptions(attrs);
    const n = x.numel, device = x.device;
    const el = Tensor.empty(x.shape, { device }, "sigmoidFocalLoss");
    launch(device, LOSS, { entry: "focal_forward", params: { n, alpha, gamma }, io: { a: x, b: t, el }, groups: Device.grid(n) });
    if (reduction === "none") return { output: el, saved: [x, t] };
    const output = Tensor.empty([], { device }, "sigmoidFocalLoss");
    launch(device, LOSS, {
      entry: "total_forward",
      params: { n, scale: reduction === "mean" ? 1 / n : 1 },
      io: { el, y: output },
      groups: [1],
      overrides: { WG: tuning.reduceWg(n) },
    });
    return { output, saved: [x, t] };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null, null];
    const [x, t] = ctx.saved;
    const { alpha, gamma, reduction } = focalOptions(ctx.attrs);
    const n = x.numel;
    const dx = Tensor.empty(x.shape, { device: dy.device }, "sigmoidFocalLoss.backward");
    launch(dy.device, LOSS, {
      entry: "focal_backward_a",
      params: { n, alpha, gamma, mode: reduction === "none" ? 0 : 1, scale: reduction === "mean" ? 1 / n : 1 },
      io: { a: x, b: t, dy, dx },
      groups: Device.grid(n),
    });
    return [dx, null];
  },
};

/**
 * The focal loss of RetinaNet (Lin et al. 2017) on logits, as
 * torchvision.ops.sigmoid_focal_loss(inputs, targets, alpha, gamma, reduction): the binary
 * cross entropy of each logit scaled by (1 − p_t)^gamma and alpha_t, so easy, confident
 * examples add little. The targets get no gradient.
 * @param inputs Logits, f32, any shape.
 * @param targets Binary labels (0 or 1; soft labels in [0, 1] work), f32, inputs' shape.
 * @param options `alpha` (0.25), `gamma` (2), `reduction` ("none", as torchvision).
 * @returns inputs' shape for "none", else a scalar.
 * @throws {TypeError} For non-f32 tensors.
 * @throws {RangeError} When the shapes differ (both named), alpha > 1, gamma < 0, or the
 *   reduction is not "none", "mean" or "sum".
 * @example
 * ```ts
 * import { Device } from "../../gpu/mod.ts";
 * import { fromArray } from "../creation.ts";
 * import { sigmoidFocalLoss } from "./focal_loss.ts";
 * await Device.request();
 * // A confident right answer costs far less than with plain BCE (gamma 0, alpha -1).
 * const x = fromArray([4]), t = fromArray([1]);
 * const focal = (await sigmoidFocalLoss(x, t).toArray())[0];
 * const bce = (await sigmoidFocalLoss(x, t, { gamma: 0, alpha: -1 }).toArray())[0];
 * if (!(focal < bce / 1000)) throw new Error(`${focal} vs ${bce}`);
 * ```
 */
export function sigmoidFocalLoss(inputs: Tensor, targets: Tensor, options: SigmoidFocalLossOptions = {}): Tensor {
  return sigmoidFocalLossOp.forward([inputs, targets], options).output;
}
