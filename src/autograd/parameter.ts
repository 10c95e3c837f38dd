import type { Tensor } from "../tensor/mod.ts";
import { Variable } from "./variable.ts";

/**
 * A trainable tensor: a leaf Variable that requires a gradient and whose data (and
 * gradient) persist across steps. Optimizers take parameters, not modules.
 */
export class Parameter extends Variable {
  /** A leaf over `data` (kept: `data.keep()` unless it is) that requires a gradient; `name` shows in messages. */
  constructor(data: Tensor, name = "") {
    super(data.kept ? data : data.keep(), true, null);
    this.name = name;
  }

  /** Replace the values in place (same shape); recorded work is submitted first. */
  set(values: ArrayLike<number>): void {
    this.data.write(values);
  }
}
