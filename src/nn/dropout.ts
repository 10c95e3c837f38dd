/** The dropout layers (PyTorch names): Dropout, elementwise, and Dropout2d, per channel. */
import { apply, type Variable } from "../autograd/mod.ts";
import * as T from "../tensor/mod.ts";
import { nextSeed } from "../tensor/mod.ts";
import { dropout2d } from "./functional.ts";
import { Module } from "./module.ts";

/** Channel dropout (PyTorch's nn.Dropout2d) on x [N, C, H, W], identity in eval mode; see {@link dropout2d}. */
export class Dropout2d extends Module {
  /**
   * Channel dropout with probability p.
   * @throws {RangeError} When p is outside [0, 1).
   */
  constructor(/** Probability that a whole channel is zeroed, in [0, 1). Default 0.5. */ readonly p = 0.5) {
    super();
    if (!(p >= 0 && p < 1)) throw new RangeError(`Dropout2d: p must be in [0, 1), got ${p}`);
  }
  /**
   * In training, each channel [n, c] of x [N, C, H, W] zeroed with probability p and the rest
   * scaled by 1/(1 − p); x itself in eval mode.
   * @throws {RangeError} When x is not 4-D.
   */
  forward(x: Variable): Variable {
    return dropout2d(x, this.p, this.training);
  }
}

/** Seeded dropout, identity in eval mode (PyTorch's nn.Dropout). */
export class Dropout extends Module {
  /**
   * Dropout with probability p.
   * @throws {RangeError} When p is outside [0, 1).
   */
  constructor(/** Probability that an element is zeroed, in [0, 1). Default 0.5. */ readonly p = 0.5) {
    super();
    if (!(p >= 0 && p < 1)) throw new RangeError(`Dropout: p must be in [0, 1), got ${p}`);
  }
  /**
   * In training, each element zeroed with probability p and the rest scaled by 1/(1 − p)
   * (the mask's seed from the global stream, `manualSeed`); x itself in eval or when p is 0.
   */
  forward(x: Variable): Variable {
    if (!this.training || this.p === 0) return x;
    return apply(T.dropoutOp, [x], { p: this.p, training: true, seed: nextSeed() });
  }
}
