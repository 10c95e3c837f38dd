import { checkBoolean, checkNonNegative } from "./check.ts";
import { launchUpdate } from "./kernel.ts";
import { type BaseOptions, Optimizer, type ParamsInput, type UpdateArgs } from "./optimizer.ts";

/** Options of {@link SGD} (PyTorch's `torch.optim.SGD`). */
export interface SgdOptions extends BaseOptions {
  /** Momentum factor >= 0; 0 = plain SGD. Default 0. */
  momentum: number;
  /** Dampening of the momentum's gradient term, >= 0. Default 0. */
  dampening: number;
  /** Nesterov momentum; needs momentum > 0 and dampening 0. Default false. */
  nesterov: boolean;
  /** L2 penalty added to the gradient, >= 0. Default 0. */
  weightDecay: number;
}

/**
 * Stochastic gradient descent with optional momentum, Nesterov momentum and L2 weight decay,
 * PyTorch's update rule:
 * d = g + weightDecay·p; buf = d (first step) or momentum·buf + (1 − dampening)·d;
 * p −= lr·(nesterov ? d + momentum·buf : buf) (or lr·d without momentum).
 * One fused WGSL kernel per parameter per step (shaders/optim.wgsl).
 * @throws {RangeError} From the constructor (or `step()` after a bad change to a group)
 *   naming the option: lr, momentum, dampening, weightDecay must be finite and >= 0;
 *   nesterov needs momentum > 0 and dampening 0.
 * @example
 * ```ts
 * import { Device, Parameter, SGD, randn } from "../index.ts";
 * await Device.request();
 * const w = new Parameter(randn([3, 4]), "w");
 * const opt = new SGD([w], { lr: 0.1, momentum: 0.9, nesterov: true });
 * // loss.backward(); opt.step(); opt.zeroGrad();
 * ```
 */
export class SGD extends Optimizer<SgdOptions> {
  /** `lr` is required (as in PyTorch's SGD); momentum, dampening, weightDecay default 0, nesterov false. */
  constructor(params: ParamsInput<SgdOptions>, options: Partial<SgdOptions> & Pick<SgdOptions, "lr">) {
    super("SGD", params, { momentum: 0, dampening: 0, nesterov: false, weightDecay: 0, ...options });
  }

  /**
   * Check lr, momentum, dampening, weightDecay (finite, >= 0), nesterov (a boolean, with momentum > 0
   * and dampening 0).
   * @throws {TypeError} For a value of the wrong type. @throws {RangeError} For one out of range.
   */
  protected checkOptions(o: SgdOptions, where: string): void {
    checkNonNegative(where, "lr", o.lr);
    checkNonNegative(where, "momentum", o.momentum);
    checkNonNegative(where, "dampening", o.dampening);
    checkNonNegative(where, "weightDecay", o.weightDecay);
    checkBoolean(where, "nesterov", o.nesterov);
    if (o.nesterov && (o.momentum <= 0 || o.dampening !== 0)) {
      throw new RangeError(
        `${where}: nesterov needs momentum > 0 and dampening 0, got momentum ${o.momentum} and dampening ${o.dampening}`,
      );
    }
  }

  /** `momentum_buffer` (PyTorch's name) when momentum is non-zero, else none. */
  protected stateNames(o: SgdOptions): readonly string[] {
    return o.momentum !== 0 ? ["momentum_buffer"] : [];
  }

  /** Record the fused update: `sgd_forward`, or `sgd_momentum_forward` (its buffer starts as d when fresh). */
  protected update({ param, grad, state, fresh, group, segments }: UpdateArgs<SgdOptions>): void {
    const common = { lr: group.lr, weight_decay: group.weightDecay };
    if (group.momentum === 0) return launchUpdate("sgd_forward", param, grad, state, common, segments);
    launchUpdate("sgd_momentum_forward", param, grad, state, {
      ...common,
      first: fresh ? 1 : 0,
      momentum: group.momentum,
      one_minus_dampening: 1 - group.dampening,
      nesterov: group.nesterov ? 1 : 0,
    }, segments);
  }
}
