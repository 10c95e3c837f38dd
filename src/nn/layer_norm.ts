/** Layer normalization over trailing dims (PyTorch's nn.LayerNorm). */
import { apply, Parameter, type Variable } from "../autograd/mod.ts";
import { Device } from "../gpu/mod.ts";
import * as T from "../tensor/mod.ts";
import { Module } from "./module.ts";

/** Layer normalization over the trailing `normalizedShape` (PyTorch's nn.LayerNorm). */
export class LayerNorm extends Module {
  /** γ of shape normalizedShape, init ones (PyTorch's `weight`); absent with `elementwiseAffine: false`. */
  readonly weight?: Parameter;
  /** β of shape normalizedShape, init zeros (PyTorch's `bias`); absent with `elementwiseAffine: false`. */
  readonly bias?: Parameter;
  /** The trailing dims normalized over (a number argument becomes [n]). */
  readonly normalizedShape: number[];
  /**
   * LayerNorm over the trailing `normalizedShape` (a size or sizes); eps default 1e-5,
   * `elementwiseAffine` (learned weight and bias) default true, device default `Device.default`.
   */
  constructor(normalizedShape: number | number[], options: { device?: Device; eps?: number; elementwiseAffine?: boolean } = {}) {
    super();
    this.normalizedShape = typeof normalizedShape === "number" ? [normalizedShape] : [...normalizedShape];
    const device = options.device ?? Device.default;
    this.eps = options.eps ?? 1e-5;
    if (options.elementwiseAffine !== false) {
      this.weight = new Parameter(T.ones(this.normalizedShape, { device }), "weight");
      this.bias = new Parameter(T.zeros(this.normalizedShape, { device }), "bias");
    }
  }
  /** Added to the variance before the square root (`options.eps`, default 1e-5). */
  readonly eps: number;
  /** x [..., *normalizedShape] normalized over its trailing normalizedShape dims, then ·weight + bias; same shape. */
  forward(x: Variable): Variable {
    const inputs = this.weight ? [x, this.weight, this.bias!] : [x];
    return apply(T.layerNormOp, inputs, { normalizedShape: this.normalizedShape, eps: this.eps, weight: !!this.weight, bias: !!this.bias });
  }
}
