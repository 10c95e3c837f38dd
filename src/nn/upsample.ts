/** Resampling as a layer (PyTorch's nn.Upsample), on functional.ts's interpolate. */
import type { Variable } from "../autograd/mod.ts";
import { interpolate, type InterpolateOptions } from "./functional.ts";
import { Module } from "./module.ts";

/** Resampling (PyTorch's nn.Upsample): {@link interpolate} with these options. */
export class Upsample extends Module {
  /** A copy of the options given: size or scaleFactor, mode (default "nearest"), alignCorners. */
  readonly options: InterpolateOptions;
  /** Resampling with `options` (checked at forward: exactly one of size and scaleFactor). */
  constructor(options: InterpolateOptions) {
    super();
    this.options = { ...options };
  }
  /**
   * x [N, C, ...spatial] resampled to the options' size: {@link interpolate}(x, options).
   * @throws {RangeError} For a mode that does not fit x's rank or bad size/scaleFactor.
   */
  forward(x: Variable): Variable {
    return interpolate(x, this.options);
  }
}
