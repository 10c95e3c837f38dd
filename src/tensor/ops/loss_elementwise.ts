/**
 * The elementwise losses of shaders/loss.wgsl (mse, l1, smoothL1, bce, bceWithLogits): one
 * kernel writes each element's loss, the family's `total_forward` sums it.
 */
import { Device, launch, tuning } from "../../gpu/mod.ts";
import { fromArray } from "../creation.ts";
import type { OpDef } from "../op.ts";
import { fmt, sameShape } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { LOSS, type LossOptions, lossReduction } from "./loss.ts";

/** Options of {@link smoothL1Loss}. */
export interface SmoothL1Options extends LossOptions {
  /** Width of the quadratic zone, >= 0 (default 1; 0 is L1). */
  beta?: number;
}

/** Options of {@link bceWithLogitsLoss}. */
export interface BceWithLogitsOptions extends LossOptions {
  /** Weight of the positive term: a number, or a tensor shaped like the input's trailing dims (e.g. [C]). */
  posWeight?: Tensor | number;
}

/** Attributes of the elementwise losses (mse, l1, smoothL1, bce, bceWithLogits). */
export type ElementwiseLossAttrs = SmoothL1Options;

interface ElementwiseSpec {
  name: string;
  kernel: string;
  /** Whether the target gets a gradient (`<kernel>_backward_b`). */
  targetGrad: boolean;
  /** Whether the op takes a third input, a positive-class weight (bceWithLogits). */
  posWeight?: boolean;
}

function checkPair(a: Tensor, b: Tensor, op: string): void {
  a.sameDevice(b, op);
  if (a.dtype !== "f32" || b.dtype !== "f32") {
    throw new TypeError(`${op}: input and target must be f32, got ${a.dtype} and ${b.dtype}`);
  }
  if (!sameShape(a.shape, b.shape)) {
    throw new RangeError(`${op}: input ${fmt(a.shape)} and target ${fmt(b.shape)} must have the same shape`);
  }
}

/** posWeight must be one value or shaped like the input's trailing dims (leading 1s allowed). */
function checkPosWeight(pw: Tensor, x: Tensor, op: string): void {
  x.sameDevice(pw, op);
  if (pw.dtype !== "f32") throw new TypeError(`${op}: posWeight must be f32, got ${pw.dtype}`);
  const s = [...pw.shape];
  while (s.length > 0 && s[0] === 1) s.shift();
  const tail = x.shape.slice(x.ndim - s.length);
  if (s.length > x.ndim || !sameShape(s, tail) || pw.numel === 0) {
    throw new RangeError(`${op}: posWeight ${fmt(pw.shape)} must match the trailing dims of input ${fmt(x.shape)}`);
  }
}

function beta(attrs: ElementwiseLossAttrs | undefined, op: string): number {
  const b = attrs?.beta ?? 1;
  if (!(b >= 0) || !Number.isFinite(b)) throw new RangeError(`${op}: beta must be a finite number >= 0, got ${b}`);
  return b;
}

/** An elementwise loss of shaders/loss.wgsl: `<kernel>_forward`, `<kernel>_backward_a` (and `_b`). */
function defineElementwise(spec: ElementwiseSpec): OpDef<ElementwiseLossAttrs> {
  const { name, kernel } = spec;
  return {
    name,
    forward(inputs, attrs) {
      const [a, b] = inputs;
      checkPair(a, b, name);
      const reduction = lossReduction(attrs, name);
      const pw = spec.posWeight ? inputs[2] ?? fromArray([1], [1], { device: a.device }) : undefined;
      if (pw) checkPosWeight(pw, a, name);
      const n = a.numel;
      const values = { n, beta: beta(attrs, name), pw_n: pw?.numel ?? 1 };
      const el = Tensor.empty(a.shape, { device: a.device }, name);
      launch(a.device, LOSS, {
        entry: `${kernel}_forward`,
        params: values,
        io: { a, b, el, pw },
        groups: Device.grid(n),
      });
      let output = el;
      if (reduction !== "none") {
        output = Tensor.empty([], { device: a.device }, name);
        const scale = reduction === "mean" ? 1 / n : 1;
        launch(a.device, LOSS, {
          entry: "total_forward",
          params: { n, scale },
          io: { el, y: output },
          groups: [1],
          overrides: { WG: tuning.reduceWg(n) },
        });
      }
      return { output, saved: pw ? [a, b, pw] : [a, b] };
    },
    backward(dy, ctx) {
      const [a, b, pw] = ctx.saved;
      const reduction = lossReduction(ctx.attrs, name);
      const n = a.numel;
      const values = {
        n,
        beta: beta(ctx.attrs, name),
        pw_n: pw?.numel ?? 1,
        mode: reduction === "none" ? 0 : 1,
        scale: reduction === "mean" ? 1 / n : 1,
      };
      const side = (which: "a" | "b"): Tensor | null => {
        const dx = Tensor.empty(a.shape, { device: dy.device }, `${name}.backward`);
        launch(dy.device, LOSS, {
          entry: `${kernel}_backward_${which}`,
          params: values,
          io: { a, b, dy, dx, pw },
          groups: Device.grid(n),
        });
        return dx;
      };
      const grads = [ctx.needs[0] ? side("a") : null, ctx.needs[1] && spec.targetGrad ? side("b") : null];
      return spec.posWeight ? [...grads, null] : grads;
    },
  };
}

/** Mean squared error (a - b)²; gradients for both inputs. */
export const mseLossOp: OpDef<ElementwiseLossAttrs> = defineElementwise({
  name: "mseLoss",
  kernel: "mse",
  targetGrad: true,
});
/** Mean absolute error |a - b|; gradient 0 where a = b. */
export const l1LossOp: OpDef<ElementwiseLossAttrs> = defineElementwise({
  name: "l1Loss",
  kernel: "l1",
  targetGrad: true,
});
/** Smooth L1 (Huber / beta) with `attrs.beta`. */
export const smoothL1LossOp: OpDef<ElementwiseLossAttrs> = defineElementwise({
  name: "smoothL1Loss",
  kernel: "smooth_l1",
  targetGrad: true,
});
/** Binary cross entropy on probabilities; no target gradient (as PyTorch). */
export const bceLossOp: OpDef<ElementwiseLossAttrs> = defineElementwise({
  name: "bceLoss",
  kernel: "bce",
  targetGrad: false,
});
/** Binary cross entropy on logits; inputs [logits, target, posWeight?]; no target or posWeight gradient. */
export const bceWithLogitsLossOp: OpDef<ElementwiseLossAttrs> = defineElementwise({
  name: "bceWithLogitsLoss",
  kernel: "bce_logits",
  targetGrad: false,
  posWeight: true,
});

/**
 * Squared error (a - b)², reduced ("mean" default).
 * @throws {TypeError} For non-f32 inputs. @throws {RangeError} When the shapes differ (both named).
 */
export function mseLoss(a: Tensor, b: Tensor, options: LossOptions = {}): Tensor {
  return mseLossOp.forward([a, b], options).output;
}

/**
 * Absolute error |a - b|, reduced ("mean" default). The gradient at a = b is 0.
 * @throws {TypeError} For non-f32 inputs. @throws {RangeError} When the shapes differ (both named).
 */
export function l1Loss(a: Tensor, b: Tensor, options: LossOptions = {}): Tensor {
  return l1LossOp.forward([a, b], options).output;
}

/**
 * Smooth L1: 0.5 d²/beta where |d| < beta, else |d| - 0.5 beta (d = a - b), as PyTorch.
 * @throws {RangeError} When `beta` < 0 or the shapes differ.
 */
export function smoothL1Loss(a: Tensor, b: Tensor, options: SmoothL1Options = {}): Tensor {
  return smoothL1LossOp.forward([a, b], options).output;
}

/**
 * Binary cross entropy of probabilities `p` in [0, 1] against targets; each log is
 * clamped to >= -100 as in PyTorch. Gradient for `p` only.
 * @throws {TypeError} For non-f32 inputs. @throws {RangeError} When the shapes differ (both named).
 */
export function bceLoss(p: Tensor, target: Tensor, options: LossOptions = {}): Tensor {
  return bceLossOp.forward([p, target], options).output;
}

/**
 * Binary cross entropy on logits in PyTorch's stable form, with an optional positive-class
 * weight (a number, or a tensor shaped like the input's trailing dims). Gradient for the logits only.
 * @throws {TypeError} For non-f32 inputs. @throws {RangeError} When shapes differ or posWeight does not fit.
 */
export function bceWithLogitsLoss(logits: Tensor, target: Tensor, options: BceWithLogitsOptions = {}): Tensor {
  const { posWeight, ...rest } = options;
  const inputs = [logits, target];
  if (posWeight !== undefined) {
    inputs.push(posWeight instanceof Tensor ? posWeight : fromArray([posWeight], [1], { device: logits.device }));
  }
  return bceWithLogitsLossOp.forward(inputs, rest).output;
}
