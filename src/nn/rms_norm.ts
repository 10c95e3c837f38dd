import { apply, Parameter, type Variable } from "../autograd/mod.ts";
import { Device } from "../gpu/mod.ts";
import * as T from "../tensor/mod.ts";
import { Module } from "./module.ts";

/** Options of {@link RMSNorm}. */
export interface RMSNormOptions {
  /** Device for the weight; default `Device.default`. */
  device?: Device;
  /** Added to the mean square; default 1e-5 (flodl's; PyTorch's default is f32 machine epsilon, 1.19e-7). */
  eps?: number;
  /** A learned weight, initialised to ones (default true). */
  elementwiseAffine?: boolean;
}

/**
 * Root-mean-square layer normalization over the trailing `normalizedShape`, as flodl's RMSNorm
 * and PyTorch's nn.RMSNorm: y = x / sqrt(mean(x²) + eps) · weight, no centring, no bias
 * (LLaMA, Gemma). Parameter `weight` (ones).
 * @throws {RangeError} From forward when the trailing dims of the input are not normalizedShape, or eps < 0.
 * @example
 * ```ts
 * import { Device } from "../gpu/mod.ts";
 * import { randn } from "../tensor/mod.ts";
 * import { Variable } from "../autograd/mod.ts";
 * import { RMSNorm } from "./rms_norm.ts";
 * await Device.request();
 * const y = new RMSNorm(8).forward(new Variable(randn([2, 5, 8])));
 * console.log(y.shape);
 * ```
 */
export class RMSNorm extends Module {
  /** The scale, of shape normalizedShape, init ones (PyTorch's `weight`); absent with `elementwiseAffine: false`. */
  readonly weight?: Parameter;
  /** The trailing dims normalized over (a number argument becomes [n]). */
  readonly normalizedShape: number[];
  /** Added to the mean square before the square root (`options.eps`, default 1e-5). */
  readonly eps: number;
  /**
   * RMSNorm over the trailing `normalizedShape` (a size or sizes).
   * @throws {RangeError} When eps is not a finite number >= 0.
   */
  constructor(normalizedShape: number | number[], options: RMSNormOptions = {}) {
    super();
    this.normalizedShape = typeof normalizedShape === "number" ? [normalizedShape] : [...normalizedShape];
    this.eps = options.eps ?? 1e-5;
    if (!(this.eps >= 0) || !Number.isFinite(this.eps)) {
      throw new RangeError(`RMSNorm: eps must be a finite number >= 0, got ${this.eps}`);
    }
    const device = options.device ?? Device.default;
    if (options.elementwiseAffine !== false) {
      this.weight = new Parameter(T.ones(this.normalizedShape, { device }), "weight");
    }
  }
  /** x [..., *normalizedShape] divided by its root mean square over those dims, times weight; same shape. */
  forward(x: Variable): Variable {
    const inputs = this.weight ? [x, this.weight] : [x];
    return apply(T.rmsNormOp, inputs, { normalizedShape: this.normalizedShape, eps: this.eps, weight: !!this.weight });
  }
  /** normalizedShape, eps and elementwiseAffine, for the module tree's printout. */
  override extraRepr(): string {
    return `[${this.normalizedShape}], eps=${this.eps}, elementwiseAffine=${!!this.weight}`;
  }
}
