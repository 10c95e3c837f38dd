import { AdamBase, type AdamOptions } from "./adam.ts";
import type { ParamsInput } from "./optimizer.ts";

/**
 * AdamW (Loshchilov & Hutter): Adam with decoupled weight decay, p ← p·(1 − lr·weightDecay)
 * before the Adam step, PyTorch's `torch.optim.AdamW`. Default weightDecay 0.01.
 * @throws {RangeError} Naming the option: lr, eps, weightDecay finite and >= 0; betas in [0, 1).
 * @example
 * ```ts
 * import { AdamW, Device, Parameter, randn } from "../index.ts";
 * await Device.request();
 * const opt = new AdamW([new Parameter(randn([4, 4]), "w")], { lr: 1e-3, weightDecay: 0.05 });
 * ```
 */
export class AdamW extends AdamBase {
  /** Options default to PyTorch's: lr 1e-3, betas [0.9, 0.999], eps 1e-8, weightDecay 0.01. */
  constructor(params: ParamsInput<AdamOptions>, options: Partial<AdamOptions> = {}) {
    super("AdamW", params, { lr: 1e-3, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.01, ...options }, true);
  }
}
