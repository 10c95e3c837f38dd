import { checkBoolean, checkInRange, checkNonNegative } from "./check.ts";
import { launchUpdate } from "./kernel.ts";
import { type BaseOptions, Optimizer, type ParamsInput, type UpdateArgs } from "./optimizer.ts";

/** Options of {@link RMSprop} (PyTorch's `torch.optim.RMSprop`). */
export interface RmspropOptions extends BaseOptions {
  /** Smoothing constant of the squared-gradient average, in [0, 1]. Default 0.99. */
  alpha: number;
  /** Added to the denominator, >= 0. Default 1e-8. */
  eps: number;
  /** Momentum factor >= 0. Default 0. */
  momentum: number;
  /** Normalize by the gradient's estimated variance instead of its second moment. Default false. */
  centered: boolean;
  /** L2 penalty added to the gradient, >= 0. Default 0. */
  weightDecay: number;
}

/**
 * RMSprop, PyTorch's rule: d = g + weightDecay·p; s = α·s + (1 − α)·d²;
 * centered: a = lerp(a, d, 1 − α), denom = √(s − a²) + eps, else denom = √s + eps;
 * with momentum: buf = momentum·buf + d/denom, p −= lr·buf; else p −= lr·d/denom.
 * One fused kernel per parameter per step.
 * @throws {RangeError} Naming the option: lr, eps, momentum, weightDecay finite and >= 0; alpha in [0, 1].
 * @example
 * ```ts
 * import { Device, Parameter, RMSprop, randn } from "../index.ts";
 * await Device.request();
 * const opt = new RMSprop([new Parameter(randn([5]), "b")], { lr: 1e-3, centered: true, momentum: 0.9 });
 * ```
 */
export class RMSprop extends Optimizer<RmspropOptions> {
  /** Options default to PyTorch's: lr 1e-2, alpha 0.99, eps 1e-8, momentum 0, centered false, weightDecay 0. */
  constructor(params: ParamsInput<RmspropOptions>, options: Partial<RmspropOptions> = {}) {
    super("RMSprop", params, {
      lr: 1e-2,
      alpha: 0.99,
      eps: 1e-8,
      momentum: 0,
      centered: false,
      weightDecay: 0,
      ...options,
    });
  }

  /**
   * Check lr, eps, momentum, weightDecay (finite, >= 0), alpha (in [0, 1]) and centered (a boolean).
   * @throws {TypeError} For a value of the wrong type. @throws {RangeError} For one out of range.
   */
  protected checkOptions(o: RmspropOptions, where: string): void {
    checkNonNegative(where, "lr", o.lr);
    checkInRange(where, "alpha", o.alpha, 0, 1, true);
    checkNonNegative(where, "eps", o.eps);
    checkNonNegative(where, "momentum", o.momentum);
    checkBoolean(where, "centered", o.centered);
    checkNonNegative(where, "weightDecay", o.weightDecay);
  }

  /** `square_avg`, plus `momentum_buffer` when momentum > 0 and `grad_avg` when centered (PyTorch's names). */
  protected stateNames(o: RmspropOptions): readonly string[] {
    const names = ["square_avg"];
    if (o.momentum > 0) names.push("momentum_buffer");
    if (o.centered) names.push("grad_avg");
    return names;
  }

  /** Record the fused update: the `rmsprop[_centered][_momentum]_forward` entry for the group's options. */
  protected update({ param, grad, state, group, segments }: UpdateArgs<RmspropOptions>): void {
    const entry = `rmsprop${group.centered ? "_centered" : ""}${group.momentum > 0 ? "_momentum" : ""}_forward`;
    launchUpdate(entry, param, grad, state, {
      lr: group.lr,
      weight_decay: group.weightDecay,
      alpha: group.alpha,
      one_minus_alpha: 1 - group.alpha,
      eps: group.eps,
      momentum: group.momentum,
    }, segments);
  }
}
