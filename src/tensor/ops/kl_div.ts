/**
 * KL divergence as torch.nn.functional.kl_div (shaders/loss.wgsl `kl_div_*`): one kernel
 * writes each element's term, the loss family's `total_forward` reduces it.
 */
import { Device, launch, tuning } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { fmt, sameShape } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { LOSS } from "./loss.ts";

/** How {@link klDiv} reduces, as PyTorch's `reduction` ("batchmean" divides by input's dim 0). */
export type KlDivReduction = "mean" | "sum" | "batchmean" | "none";

/** Options of {@link klDiv} (PyTorch's keywords). */
export interface KlDivOptions {
  /**
   * "mean" (default, as PyTorch: the sum over every element divided by their count, which
   * is not the KL divergence of a batch), "batchmean" (the sum divided by input's dim 0: the
   * mathematical KL per sample), "sum", or "none" (one term per element).
   */
  reduction?: KlDivReduction;
  /** The target holds log-probabilities, not probabilities (default false). */
  logTarget?: boolean;
}

const REDUCTIONS: readonly KlDivReduction[] = ["mean", "sum", "batchmean", "none"];

/** The reduction checked, and the scale of the sum it takes (1 for "sum" and "none"). */
export function klDivScale(shape: readonly number[], options: KlDivOptions): { reduction: KlDivReduction; scale: number } {
  const reduction = options.reduction ?? "mean";
  if (!REDUCTIONS.includes(reduction)) {
    throw new RangeError(`klDiv: reduction must be "mean", "sum", "batchmean" or "none", got ${JSON.stringify(reduction)}`);
  }
  if (options.logTarget !== undefined && typeof options.logTarget !== "boolean") {
    throw new TypeError(`klDiv: logTarget must be a boolean, got ${JSON.stringify(options.logTarget)}`);
  }
  if (reduction === "batchmean" && shape.length === 0) {
    throw new RangeError(`klDiv: reduction "batchmean" needs an input with a batch dim, got shape ${fmt(shape)}`);
  }
  const n = shape.reduce((a, b) => a * b, 1);
  const scale = reduction === "mean" ? 1 / n : reduction === "batchmean" ? 1 / shape[0] : 1;
  return { reduction, scale };
}

function checkInputs(input: Tensor, target: Tensor): void {
  input.sameDevice(target, "klDiv");
  if (input.dtype !== "f32" || target.dtype !== "f32") {
    throw new TypeError(`klDiv: input and target must be f32, got ${input.dtype} and ${target.dtype}`);
  }
  if (!sameShape(input.shape, target.shape)) {
    throw new RangeError(`klDiv: input ${fmt(input.shape)} and target ${fmt(target.shape)} must have the same shape`);
  }
}

/**
 * KL divergence (inputs `[input, target]`), gradients for both: the input's is −target
 * (−e^target with logTarget), the target's log target + 1 − input (NaN where target = 0,
 * as PyTorch) or e^target·(target − input + 1).
 */
export const klDivOp: OpDef<KlDivOptions> = {
  name: "klDiv",
  forward([input, target], attrs) {
    checkInputs(input, target);
    const { reduction, scale } = klDivScale(input.shape, attrs);
    const n = input.numel, device = input.device;
    const el = Tensor.empty(input.shape, { device }, "klDiv");
    const log_target = attrs.logTarget ? 1 : 0;
    launch(device, LOSS, {
      entry: "kl_div_forward",
      params: { n, log_target },
      io: { a: input, b: target, el },
      groups: Device.grid(n),
    });
    if (reduction === "none") return { output: el, saved: [input, target] };
    const output = Tensor.empty([], { device }, "klDiv");
    launch(device, LOSS, {
      entry: "total_forward",
      params: { n, scale },
      io: { el, y: output },
      groups: [1],
      overrides: { WG: tuning.reduceWg(n) },
    });
    return { output, saved: [input, target] };
  },
  backward(dy, ctx) {
    const [input, target] = ctx.saved;
    const { reduction, scale } = klDivScale(input.shape, ctx.attrs);
    const n = input.numel;
    const params = { n, log_target: ctx.attrs.logTarget ? 1 : 0, mode: reduction === "none" ? 0 : 1, scale };
    const side = (which: "a" | "b"): Tensor => {
      const dx = Tensor.empty(input.shape, { device: dy.device }, `klDiv.backward_${which}`);
      launch(dy.device, LOSS, {
        entry: `kl_div_backward_${which}`,
        params,
        // backward_a reads the target only ("auto" layouts drop unread bindings).
        io: { a: which === "b" ? input : undefined, b: target, dy, dx },
        groups: Device.grid(n),
      });
      return dx;
    };
    return [ctx.needs[0] ? side("a") : null, ctx.needs[1] ? side("b") : null];
  },
};

/**
 * KL divergence of `target` from the distribution whose log-probabilities are `input`,
 * as torch.nn.functional.kl_div(input, target, reduction, log_target): each element is
 * target·(log target − input), 0 where target = 0, or e^target·(target − input) with
 * `logTarget`.
 * @param input Log-probabilities (e.g. logSoftmax output), f32, any shape.
 * @param target Probabilities (log-probabilities with `logTarget`), f32, input's shape.
 * @param options `reduction` ("mean" default: over every element, as PyTorch; "batchmean"
 *   is the per-sample KL) and `logTarget` (default false).
 * @returns A scalar, or input's shape for "none".
 * @throws {TypeError} For non-f32 tensors or a non-boolean logTarget.
 * @throws {RangeError} When the shapes differ (both named), the reduction is none of the
 *   four, or "batchmean" meets a 0-d input.
 * @example
 * ```ts
 * import { Device } from "../../gpu/mod.ts";
 * import { fromArray } from "../creation.ts";
 * import { klDiv } from "./kl_div.ts";
 * await Device.request();
 * const logQ = fromArray([Math.log(0.5), Math.log(0.5)], [1, 2]), p = fromArray([0.5, 0.5], [1, 2]);
 * const kl = (await klDiv(logQ, p, { reduction: "batchmean" }).toArray())[0];
 * if (Math.abs(kl) > 1e-6) throw new Error(`KL(p‖p) is 0, got ${kl}`);
 * ```
 */
export function klDiv(input: Tensor, target: Tensor, options: KlDivOptions = {}): Tensor {
  return klDivOp.forward([input, target], options).output;
}
