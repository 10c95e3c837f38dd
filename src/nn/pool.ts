/** The pooling layers (PyTorch names): MaxPool1d, AvgPool1d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d. */
import { apply, type Variable } from "../autograd/mod.ts";
import * as T from "../tensor/mod.ts";
import type { Size2d } from "../tensor/mod.ts";
import { Module } from "./module.ts";

/** Max pooling over 1-D windows of [N, C, L] or [C, L] (PyTorch's nn.MaxPool1d; stride defaults to kernelSize). */
export class MaxPool1d extends Module {
  /** The pooling's options, `kernelSize` included, as given (checked by the constructor). */
  readonly options: T.MaxPool1dOptions;
  /**
   * Windows of `kernelSize` (k or [k]); stride, padding, dilation, ceilMode as PyTorch's.
   * @throws {RangeError} When an option is out of range (padding over half the kernel included).
   * @throws {TypeError} When an option is neither a number nor [number].
   */
  constructor(kernelSize: T.Size1d, options: Omit<T.MaxPool1dOptions, "kernelSize"> = {}) {
    super();
    this.options = { ...options, kernelSize };
    T.pool1dShape([1, 1 << 20], this.options, "MaxPool1d"); // the options' own checks, now
  }
  /** The maximum of each window: x [N, C, L] or [C, L] to [N, C, Lo] or [C, Lo]. */
  forward(x: Variable): Variable {
    return apply(T.maxPool1dOp, [x], this.options);
  }
}

/** Average pooling over 1-D windows (PyTorch's nn.AvgPool1d; countIncludePad true, ceilMode false by default). */
export class AvgPool1d extends Module {
  /** The pooling's options, `kernelSize` included, as given (checked by the constructor). */
  readonly options: T.AvgPool1dOptions;
  /**
   * Windows of `kernelSize` (k or [k]); stride, padding, ceilMode, countIncludePad as PyTorch's.
   * @throws {RangeError} When an option is out of range (padding over half the kernel included).
   * @throws {TypeError} When an option is neither a number nor [number].
   */
  constructor(kernelSize: T.Size1d, options: Omit<T.AvgPool1dOptions, "kernelSize"> = {}) {
    super();
    this.options = { ...options, kernelSize };
    T.pool1dShape([1, 1 << 20], this.options, "AvgPool1d");
  }
  /** The mean of each window: x [N, C, L] or [C, L] to [N, C, Lo] or [C, Lo]. */
  forward(x: Variable): Variable {
    return apply(T.avgPool1dOp, [x], this.options);
  }
}

/** Max pooling over 2-D windows (PyTorch's nn.MaxPool2d). */
export class MaxPool2d extends Module {
  /** The pooling's options, `kernelSize` included, as given (checked at forward). */
  readonly options: T.MaxPool2dOptions;
  /** Windows of `kernelSize` (one number or [kh, kw]); stride defaults to kernelSize, as PyTorch. */
  constructor(kernelSize: Size2d, options: Omit<T.MaxPool2dOptions, "kernelSize"> = {}) {
    super();
    this.options = { ...options, kernelSize };
  }
  /**
   * The maximum of each window: x [N, C, H, W] or [C, H, W] to [..., Ho, Wo].
   * @throws {RangeError} When an option is out of range or the output would be empty.
   */
  forward(x: Variable): Variable {
    return apply(T.maxPool2dOp, [x], this.options);
  }
}

/** Average pooling over 2-D windows (PyTorch's nn.AvgPool2d). */
export class AvgPool2d extends Module {
  /** The pooling's options, `kernelSize` included, as given (checked at forward). */
  readonly options: T.AvgPool2dOptions;
  /** Windows of `kernelSize` (one number or [kh, kw]); stride defaults to kernelSize, as PyTorch. */
  constructor(kernelSize: Size2d, options: Omit<T.AvgPool2dOptions, "kernelSize"> = {}) {
    super();
    this.options = { ...options, kernelSize };
  }
  /**
   * The mean of each window: x [N, C, H, W] or [C, H, W] to [..., Ho, Wo].
   * @throws {RangeError} When an option is out of range or the output would be empty.
   */
  forward(x: Variable): Variable {
    return apply(T.avgPool2dOp, [x], this.options);
  }
}

/** Average pooling to a fixed output size (PyTorch's nn.AdaptiveAvgPool2d). */
export class AdaptiveAvgPool2d extends Module {
  /** Pooling to `outputSize` whatever the input's H and W. */
  constructor(
    /** [Ho, Wo] of the output, or one number for both (PyTorch's `output_size`, without None). */
    readonly outputSize: Size2d,
  ) {
    super();
  }
  /** Means over PyTorch's adaptive windows: x [N, C, H, W] or [C, H, W] to [..., Ho, Wo]. */
  forward(x: Variable): Variable {
    return apply(T.adaptiveAvgPool2dOp, [x], { outputSize: this.outputSize });
  }
}
