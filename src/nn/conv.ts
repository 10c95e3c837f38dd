/**
 * The convolution layers (PyTorch names, layouts and default initialisation): Conv1d, Conv2d,
 * ConvTranspose2d and their options.
 */
import { apply, Parameter, type Variable } from "../autograd/mod.ts";
import { Device } from "../gpu/mod.ts";
import * as T from "../tensor/mod.ts";
import type { Size2d } from "../tensor/mod.ts";
import { initDefault } from "./init.ts";
import { checkPositiveInt, type LayerOptions } from "./layer_options.ts";
import { Module } from "./module.ts";

/** Options of {@link Conv2d}. */
export interface Conv2dLayerOptions extends LayerOptions, T.Conv2dOptions {
  /** A learned bias [outChannels] (PyTorch's `bias`). Default true. */
  bias?: boolean;
}

/** 2-D convolution, NCHW, weight [out, in/groups, kh, kw] (PyTorch's nn.Conv2d). */
export class Conv2d extends Module {
  /** Kernel [outChannels, inChannels/groups, kh, kw] (PyTorch's `weight`); init U(±1/√fanIn). */
  readonly weight: Parameter;
  /** [outChannels], init U(±1/√fanIn), fanIn = in/groups·kh·kw; absent with `bias: false`. */
  readonly bias?: Parameter;
  /** stride, padding, dilation (undefined: the op's defaults 1, 0, 1) and groups, as passed to conv2d. */
  readonly options: T.Conv2dOptions;
  /**
   * A Conv2d with a `kernelSize` (one number or [kh, kw]) window, PyTorch's default init.
   * @throws {RangeError} When a channel count is not an integer >= 1 or does not divide by groups.
   */
  constructor(
    /** Channels of the input, dim 1 of x. */
    readonly inChannels: number,
    /** Channels of the output (the number of filters). */
    readonly outChannels: number,
    kernelSize: Size2d,
    options: Conv2dLayerOptions = {},
  ) {
    super();
    const groups = options.groups ?? 1;
    checkPositiveInt("Conv2d", "inChannels", inChannels);
    checkPositiveInt("Conv2d", "outChannels", outChannels);
    if (inChannels % groups || outChannels % groups) {
      throw new RangeError(`Conv2d: inChannels ${inChannels} and outChannels ${outChannels} must divide by groups ${groups}`);
    }
    const [kh, kw] = typeof kernelSize === "number" ? [kernelSize, kernelSize] : kernelSize;
    const device = options.device ?? Device.default;
    this.weight = new Parameter(T.zeros([outChannels, inChannels / groups, kh, kw], { device }), "weight");
    if (options.bias !== false) this.bias = new Parameter(T.zeros([outChannels], { device }), "bias");
    initDefault(this.weight, this.bias, options.seed);
    this.options = { stride: options.stride, padding: options.padding, dilation: options.dilation, groups };
  }
  /**
   * x [N, inChannels, H, W] to [N, outChannels, Ho, Wo] (unbatched [C, H, W]: no N), with
   * Ho = ⌊(H + 2·padding − dilation·(kh − 1) − 1) / stride⌋ + 1 (likewise Wo).
   */
  forward(x: Variable): Variable {
    return apply(T.conv2dOp, this.bias ? [x, this.weight, this.bias] : [x, this.weight], this.options);
  }
}

/** Options of {@link Conv1d}. */
export interface Conv1dLayerOptions extends LayerOptions, T.Conv1dOptions {
  /** A learned bias [outChannels] (PyTorch's `bias`). Default true. */
  bias?: boolean;
}

/**
 * 1-D convolution, NCL, weight [out, in/groups, k] (PyTorch's nn.Conv1d, its default init:
 * kaiming-uniform weight, bias U(±1/√fanIn), fanIn = in/groups·k).
 */
export class Conv1d extends Module {
  /** Kernel [outChannels, inChannels/groups, kernelSize] (PyTorch's `weight`). */
  readonly weight: Parameter;
  /** [outChannels] (PyTorch's `bias`); absent with `bias: false`. */
  readonly bias?: Parameter;
  /** Window length k, an integer >= 1 (a `[k]` argument is unwrapped). */
  readonly kernelSize: number;
  /** stride, padding, dilation and groups as numbers, defaults (1, 0, 1, 1) filled in. */
  readonly options: T.Conv1dOptions;
  /**
   * A Conv1d with a window of `kernelSize` (k or [k]), PyTorch's default init.
   * @throws {RangeError} When a size or option is out of range, or a channel count does not divide by groups.
   * @throws {TypeError} When kernelSize or a length option is neither a number nor [number].
   */
  constructor(
    /** Channels of the input, dim 1 of x. */
    readonly inChannels: number,
    /** Channels of the output (the number of filters). */
    readonly outChannels: number,
    kernelSize: T.Size1d,
    options: Conv1dLayerOptions = {},
  ) {
    super();
    const groups = options.groups ?? 1;
    checkPositiveInt("Conv1d", "inChannels", inChannels);
    checkPositiveInt("Conv1d", "outChannels", outChannels);
    checkPositiveInt("Conv1d", "groups", groups);
    if (inChannels % groups) {
      throw new RangeError(`Conv1d: inChannels must be divisible by groups ${groups}, got ${inChannels}`);
    }
    if (outChannels % groups) {
      throw new RangeError(`Conv1d: outChannels must be divisible by groups ${groups}, got ${outChannels}`);
    }
    this.kernelSize = T.size1d(kernelSize, 1, "Conv1d", "kernelSize", 1);
    const device = options.device ?? Device.default;
    this.weight = new Parameter(T.zeros([outChannels, inChannels / groups, this.kernelSize], { device }), "weight");
    if (options.bias !== false) this.bias = new Parameter(T.zeros([outChannels], { device }), "bias");
    initDefault(this.weight, this.bias, options.seed);
    this.options = {
      stride: T.size1d(options.stride, 1, "Conv1d", "stride", 1),
      padding: T.size1d(options.padding, 0, "Conv1d", "padding", 0),
      dilation: T.size1d(options.dilation, 1, "Conv1d", "dilation", 1),
      groups,
    };
  }
  /**
   * x [N, inChannels, L] to [N, outChannels, Lo] (unbatched [C, L]: no N), with
   * Lo = ⌊(L + 2·padding − dilation·(k − 1) − 1) / stride⌋ + 1.
   */
  forward(x: Variable): Variable {
    return apply(T.conv1dOp, this.bias ? [x, this.weight, this.bias] : [x, this.weight], this.options);
  }
  /** Channels, kernel_size, stride, padding, dilation, groups and bias, for the module tree's printout. */
  override extraRepr(): string {
    const o = this.options;
    return `${this.inChannels}, ${this.outChannels}, kernel_size=${this.kernelSize}, stride=${o.stride}, ` +
      `padding=${o.padding}, dilation=${o.dilation}, groups=${o.groups}, bias=${!!this.bias}`;
  }
}

/** Options of {@link ConvTranspose2d}. */
export interface ConvTranspose2dLayerOptions extends LayerOptions, T.ConvTranspose2dOptions {
  /** A learned bias [outChannels] (PyTorch's `bias`). Default true. */
  bias?: boolean;
}

/** 2-D transposed convolution, weight [in, out/groups, kh, kw] (PyTorch's nn.ConvTranspose2d). */
export class ConvTranspose2d extends Module {
  /** Kernel [inChannels, outChannels/groups, kh, kw] (PyTorch's `weight`); U(±1/√fanIn), fanIn = out/groups·kh·kw. */
  readonly weight: Parameter;
  /** [outChannels] (PyTorch's `bias`), init U(±1/√fanIn); absent with `bias: false`. */
  readonly bias?: Parameter;
  /** stride, padding, outputPadding, dilation (undefined: the op's defaults) and groups. */
  readonly options: T.ConvTranspose2dOptions;
  /**
   * A ConvTranspose2d with a `kernelSize` (one number or [kh, kw]) window, PyTorch's default init.
   * @throws {RangeError} When a channel count is not an integer >= 1 or does not divide by groups.
   */
  constructor(
    /** Channels of the input, dim 1 of x. */
    readonly inChannels: number,
    /** Channels of the output. */
    readonly outChannels: number,
    kernelSize: Size2d,
    options: ConvTranspose2dLayerOptions = {},
  ) {
    super();
    const groups = options.groups ?? 1;
    checkPositiveInt("ConvTranspose2d", "inChannels", inChannels);
    checkPositiveInt("ConvTranspose2d", "outChannels", outChannels);
    if (inChannels % groups || outChannels % groups) {
      throw new RangeError(`ConvTranspose2d: inChannels ${inChannels} and outChannels ${outChannels} must divide by groups ${groups}`);
    }
    const [kh, kw] = typeof kernelSize === "number" ? [kernelSize, kernelSize] : kernelSize;
    const device = options.device ?? Device.default;
    this.weight = new Parameter(T.zeros([inChannels, outChannels / groups, kh, kw], { device }), "weight");
    if (options.bias !== false) this.bias = new Parameter(T.zeros([outChannels], { device }), "bias");
    initDefault(this.weight, this.bias, options.seed);
    this.options = {
      stride: options.stride,
      padding: options.padding,
      outputPadding: options.outputPadding,
      dilation: options.dilation,
      groups,
    };
  }
  /**
   * x [N, inChannels, H, W] to [N, outChannels, Ho, Wo] (unbatched [C, H, W]: no N), with
   * Ho = (H − 1)·stride − 2·padding + dilation·(kh − 1) + outputPadding + 1 (likewise Wo).
   */
  forward(x: Variable): Variable {
    return apply(T.convTranspose2dOp, this.bias ? [x, this.weight, this.bias] : [x, this.weight], this.options);
  }
}
