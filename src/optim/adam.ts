import { checkInRange, checkNonNegative } from "./check.ts";
import { launchUpdate } from "./kernel.ts";
import { type BaseOptions, Optimizer, type ParamsInput, type UpdateArgs } from "./optimizer.ts";

/** Options of {@link Adam} and {@link AdamW}. */
export interface AdamOptions extends BaseOptions {
  /** Decay rates of the first and second moment estimates, each in [0, 1). Default [0.9, 0.999]. */
  betas: readonly [number, number];
  /** Added to the denominator for stability, >= 0. Default 1e-8. */
  eps: number;
  /** Adam: L2 penalty added to the gradient; AdamW: decoupled decay rate. >= 0. */
  weightDecay: number;
}

/**
 * The Adam update, shared by {@link Adam} (L2 penalty on the gradient) and AdamW (decoupled
 * decay), as PyTorch computes it: m = lerp(m, d, 1 − β1); v = β2·v + (1 − β2)·d²;
 * p −= lr/(1 − β1^t) · m / (√v/√(1 − β2^t) + eps). The bias corrections are computed on
 * the host in f64 from the host step count and travel in the uniform.
 */
export abstract class AdamBase extends Optimizer<AdamOptions> {
  readonly #decoupled: boolean;

  /**
   * Build an Adam-family optimizer (subclasses pass their name and defaults).
   * @param name Used in messages ("Adam", "AdamW").
   * @param params Parameters, or groups `{ params, ...options }` overriding `options`.
   * @param options Every option, already merged with the subclass's defaults.
   * @param decoupled True for AdamW's decoupled decay, false for Adam's L2 penalty on the gradient.
   */
  protected constructor(name: string, params: ParamsInput<AdamOptions>, options: AdamOptions, decoupled: boolean) {
    super(name, params, options);
    this.#decoupled = decoupled;
  }

  /**
   * Check lr, eps, weightDecay (finite, >= 0) and betas (a pair, each in [0, 1)).
   * @throws {TypeError} When betas is not a pair or a value not a number. @throws {RangeError} For one out of range.
   */
  protected checkOptions(o: AdamOptions, where: string): void {
    checkNonNegative(where, "lr", o.lr);
    if (!Array.isArray(o.betas) || o.betas.length !== 2) {
      throw new TypeError(`${where}: betas must be [beta1, beta2], got ${JSON.stringify(o.betas)}`);
    }
    checkInRange(where, "betas[0]", o.betas[0], 0, 1);
    checkInRange(where, "betas[1]", o.betas[1], 0, 1);
    checkNonNegative(where, "eps", o.eps);
    checkNonNegative(where, "weightDecay", o.weightDecay);
  }

  /** The two moments, PyTorch's `exp_avg` (m) and `exp_avg_sq` (v). */
  protected stateNames(): readonly string[] {
    return ["exp_avg", "exp_avg_sq"];
  }

  /** Record the fused Adam/AdamW update of `param` and both moments (`adam_forward`, one dispatch). */
  protected update({ param, grad, state, step, group, segments }: UpdateArgs<AdamOptions>): void {
    const [beta1, beta2] = group.betas;
    const wd = group.weightDecay;
    launchUpdate("adam_forward", param, grad, state, {
      lr: group.lr,
      weight_decay: this.#decoupled ? 0 : wd,
      decay: this.#decoupled ? 1 - group.lr * wd : 1,
      beta1,
      one_minus_beta1: 1 - beta1,
      beta2,
      one_minus_beta2: 1 - beta2,
      eps: group.eps,
      step_size: group.lr / (1 - beta1 ** step),
      bc2_sqrt: Math.sqrt(1 - beta2 ** step),
    }, segments);
  }
}

/**
 * Adam (Kingma & Ba) with bias correction and optional L2 weight decay added to the
 * gradient, PyTorch's `torch.optim.Adam` (amsgrad off). One fused kernel per parameter per
 * step updates the parameter and both moments in place.
 * @throws {RangeError} Naming the option: lr, eps, weightDecay finite and >= 0; betas in [0, 1).
 * @example
 * ```ts
 * import { Adam, Device, Parameter, randn } from "../index.ts";
 * await Device.request();
 * const opt = new Adam([new Parameter(randn([4, 4]), "w")], { lr: 3e-4 });
 * ```
 */
export class Adam extends AdamBase {
  /** Options default to PyTorch's: lr 1e-3, betas [0.9, 0.999], eps 1e-8, weightDecay 0. */
  constructor(params: ParamsInput<AdamOptions>, options: Partial<AdamOptions> = {}) {
    super("Adam", params, { lr: 1e-3, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0, ...options }, false);
  }
}
