/** Group normalization over groups of channels (PyTorch's nn.GroupNorm), on functional.ts's groupNorm. */
import { Parameter, type Variable } from "../autograd/mod.ts";
import { Device } from "../gpu/mod.ts";
import * as T from "../tensor/mod.ts";
import { groupNorm } from "./functional.ts";
import { Module } from "./module.ts";

/**
 * Group normalization (PyTorch's nn.GroupNorm): `numGroups` groups of the `numChannels`
 * channels of x [N, C, *], with a per-channel `weight` (ones) and `bias` (zeros) unless
 * `affine` is false; see {@link groupNorm}.
 */
export class GroupNorm extends Module {
  /** γ [numChannels], init ones (PyTorch's `weight`); absent with `affine: false`. */
  readonly weight?: Parameter;
  /** β [numChannels], init zeros (PyTorch's `bias`); absent with `affine: false`. */
  readonly bias?: Parameter;
  /** Added to each group's variance before the square root (`options.eps`, default 1e-5). */
  readonly eps: number;
  /**
   * GroupNorm with eps 1e-5 and `affine` true by default, on `options.device` (default `Device.default`).
   * @throws {RangeError} When numChannels is not a positive integer, numGroups does not divide it, or eps < 0.
   */
  constructor(
    /** Groups the channels are split into; must divide numChannels. */
    readonly numGroups: number,
    /** Channels C, dim 1 of the input. */
    readonly numChannels: number,
    options: { device?: Device; eps?: number; affine?: boolean } = {},
  ) {
    super();
    if (!Number.isInteger(numChannels) || numChannels < 1) throw new RangeError(`GroupNorm: numChannels must be a positive integer, got ${numChannels}`);
    if (!Number.isInteger(numGroups) || numGroups < 1 || numChannels % numGroups !== 0) {
      throw new RangeError(`GroupNorm: numGroups must be a positive integer dividing numChannels ${numChannels}, got ${numGroups}`);
    }
    this.eps = options.eps ?? 1e-5;
    if (!(this.eps >= 0) || !Number.isFinite(this.eps)) throw new RangeError(`GroupNorm: eps must be a finite number >= 0, got ${this.eps}`);
    const device = options.device ?? Device.default;
    if (options.affine !== false) {
      this.weight = new Parameter(T.ones([numChannels], { device }), "weight");
      this.bias = new Parameter(T.zeros([numChannels], { device }), "bias");
    }
  }
  /**
   * x [N, C, *] normalized over each group of C/numGroups channels (and all of *), then ·weight + bias per channel.
   * @throws {RangeError} When dim 1 of x is not numChannels.
   */
  forward(x: Variable): Variable {
    if (x.shape[1] !== this.numChannels) throw new RangeError(`GroupNorm: expected ${this.numChannels} channels (x [N, C, *]), got x [${x.shape}]`);
    return groupNorm(x, this.numGroups, this.weight, this.bias, this.eps);
  }
}
