/**
 * The layers of flodl's nn (PyTorch names, layouts and default initialisation):
 * Linear, Conv1d, Conv2d, ConvTranspose2d, pooling, BatchNorm1d/2d, LayerNorm, Dropout,
 * Flatten, Embedding.
 */
import { apply, Parameter, Variable } from "../autograd/mod.ts";
import { Device } from "../gpu/mod.ts";
import * as T from "../tensor/mod.ts";
import { nextSeed, type Size2d, type Tensor } from "../tensor/mod.ts";
import { fusedActivation } from "./activation.ts";
import { initDefault } from "./init.ts";
import { Module } from "./module.ts";
import { dropout2d, groupNorm, interpolate, type InterpolateOptions } from "./functional.ts";

/** Options shared by layers that own parameters. */
export interface LayerOptions {
  /** Device for the parameters; default `Device.default`. */
  device?: Device;
  /** Seed of the default initialisation; default the global stream (`manualSeed`). */
  seed?: number;
}

function checkPositiveInt(layer: string, name: string, v: number): void {
  if (!Number.isInteger(v) || v < 1) throw new RangeError(`${layer}: ${name} must be an integer >= 1, got ${v}`);
}

/** y = x·Wᵀ + b, W [out, in] (PyTorch's nn.Linear, its default init U(±1/√in)). */
export class Linear extends Module {
  /** W [outFeatures, inFeatures] (PyTorch's `weight`); default init U(±1/√in). */
  readonly weight: Parameter;
  /** b [outFeatures] (PyTorch's `bias`), init U(±1/√in); absent when built with `bias: false`. */
  readonly bias?: Parameter;
  /**
   * A Linear on `options.device`, initialised as PyTorch (seeded by `options.seed`); `bias`
   * defaults to true.
   * @throws {RangeError} When inFeatures or outFeatures is not an integer >= 1.
   */
  constructor(
    /** Size of each input row: the last dim of x. */
    readonly inFeatures: number,
    /** Size of each output row: the last dim of y. */
    readonly outFeatures: number,
    options: LayerOptions & { bias?: boolean } = {},
  ) {
    super();
    checkPositiveInt("Linear", "inFeatures", inFeatures);
    checkPositiveInt("Linear", "outFeatures", outFeatures);
    const device = options.device ?? Device.default;
    this.weight = new Parameter(T.zeros([outFeatures, inFeatures], { device }), "weight");
    if (options.bias !== false) this.bias = new Parameter(T.zeros([outFeatures], { device }), "bias");
    initDefault(this.weight, this.bias, options.seed);
  }
  /**
   * x·Wᵀ + b: x [..., inFeatures] to [..., outFeatures].
   * @throws {RangeError} When the last dim of x is not inFeatures.
   */
  forward(x: Variable): Variable {
    return apply(T.linearOp, this.#inputs(x), undefined);
  }
  /** relu(this.forward(x)) in one dispatch (`T.linearReluOp`); what Sequential runs for Linear → ReLU. */
  forwardRelu(x: Variable): Variable {
    return this.forwardAct(x, "relu");
  }
  /**
   * act(this.forward(x)) in one dispatch (`T.linearActOps[act]`): the activation runs in the
   * matmul's store, and its gradient folds into the next Linear's dx product when that Linear
   * consumes the output directly. What Sequential runs for Linear → ReLU/GELU/Tanh/Sigmoid/SiLU.
   */
  forwardAct(x: Variable, act: T.Activation): Variable {
    return apply(T.linearActOps[act], this.#inputs(x), undefined);
  }
  /**
   * then.forward(this.forward(x)), fused into one dispatch when `then` is an activation the
   * store can apply (`fusedActivation`: ReLU, GELU, Tanh, Sigmoid, SiLU), for models that call
   * their layers by hand (`ff_up.forwardThen(x, gelu)` in a transformer block).
   */
  forwardThen(x: Variable, then: Module): Variable {
    const act = fusedActivation(then);
    return act ? this.forwardAct(x, act) : then.forward(this.forward(x));
  }
  /**
   * res + drop.forward(this.forward(x)) in one dispatch (`T.linearResidualOp`: the dropout
   * mask and the residual add run in the matmul's store; dropout draws its seed as
   * `Dropout.forward` would, so the stream and the mask are the same). A `drop` of another
   * class than `Dropout` runs unfused. A transformer block's `x + drop(ff_down(h))`.
   * @throws {RangeError} When res does not have the output's shape.
   */
  forwardResidual(x: Variable, res: Variable, drop?: Module): Variable {
    if (drop && drop.constructor !== Dropout) return res.add(drop.forward(this.forward(x)));
    const d = drop as Dropout | undefined;
    const dropout = d && d.training && d.p > 0 ? { p: d.p, training: true, seed: nextSeed() } : null;
    return apply(T.linearResidualOp, [...this.#inputs(x), res], { bias: !!this.bias, dropout });
  }
  #inputs(x: Variable): Variable[] {
    const last = x.shape[x.shape.length - 1];
    if (last !== this.inFeatures) {
      throw new RangeError(`Linear(${this.inFeatures}, ${this.outFeatures}): input [${x.shape}] has ${last} features, expected ${this.inFeatures}`);
    }
    return this.bias ? [x, this.weight, this.bias] : [x, this.weight];
  }
  /** `in, out, bias=…`, for the module tree's printout. */
  override extraRepr(): string {
    return `${this.inFeatures}, ${this.outFeatures}, bias=${!!this.bias}`;
  }
}

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

/** Options of the batch-norm layers. */
export interface BatchNormLayerOptions {
  /** Device for the parameters and running statistics; default `Device.default`. */
  device?: Device;
  /** Added to the variance before the square root. Default 1e-5. */
  eps?: number;
  /** Weight of each batch's statistics in the running averages, in [0, 1]. Default 0.1 (PyTorch's). */
  momentum?: number;
  /** Learnable weight and bias (default true). */
  affine?: boolean;
}

/** Shared body of {@link BatchNorm1d} and {@link BatchNorm2d} (PyTorch's `_BatchNorm`). */
export class BatchNormBase extends Module {
  /** γ [numFeatures], init ones (PyTorch's `weight`); absent with `affine: false`. */
  readonly weight?: Parameter;
  /** β [numFeatures], init zeros (PyTorch's `bias`); absent with `affine: false`. */
  readonly bias?: Parameter;
  /** Running mean [numFeatures], init zeros: the buffer `running_mean`, updated in training, used in eval. */
  readonly runningMean: Tensor;
  /** Running variance [numFeatures], init ones: the buffer `running_var`, updated in training, used in eval. */
  readonly runningVar: Tensor;
  /** Training batches seen (i32 on the GPU, I64 in files as PyTorch); a counter, not averaged by the trainer. */
  readonly numBatchesTracked: Tensor;
  /** Added to the variance before the square root (`options.eps`, default 1e-5). */
  readonly eps: number;
  /** Weight of a batch's statistics in the running ones (`options.momentum`, default 0.1). */
  readonly momentum: number;
  /**
   * Parameters and buffers for `numFeatures` channels; BatchNorm1d and BatchNorm2d pass `ranks`.
   * @throws {RangeError} When numFeatures is not an integer >= 1.
   */
  constructor(
    /** Channels C, dim 1 of the input. */
    readonly numFeatures: number,
    /** The input ranks forward accepts: [2, 3] for BatchNorm1d, [4] for BatchNorm2d. */
    readonly ranks: number[],
    options: BatchNormLayerOptions,
  ) {
    super();
    checkPositiveInt(this.constructor.name, "numFeatures", numFeatures);
    const device = options.device ?? Device.default;
    this.eps = options.eps ?? 1e-5;
    this.momentum = options.momentum ?? 0.1;
    if (options.affine !== false) {
      this.weight = new Parameter(T.ones([numFeatures], { device }), "weight");
      this.bias = new Parameter(T.zeros([numFeatures], { device }), "bias");
    }
    this.runningMean = this.registerBuffer("running_mean", T.zeros([numFeatures], { device }));
    this.runningVar = this.registerBuffer("running_var", T.ones([numFeatures], { device }));
    this.numBatchesTracked = this.registerCounter("num_batches_tracked", T.zeros([], { device, dtype: "i32" }));
  }
  /**
   * x normalized per channel (dim 1), same shape: in training with the batch's statistics,
   * updating the running ones in place and counting the batch; in eval with the running ones.
   * @throws {RangeError} When x's rank is not one of `ranks` or dim 1 is not numFeatures.
   */
  forward(x: Variable): Variable {
    if (!this.ranks.includes(x.ndim) || x.shape[1] !== this.numFeatures) {
      throw new RangeError(
        `${this.constructor.name}(${this.numFeatures}): expects input of ${this.ranks.join(" or ")} dims with ` +
          `${this.numFeatures} channels at dim 1, got [${x.shape}]`,
      );
    }
    const inputs = [x, new Variable(this.runningMean), new Variable(this.runningVar)];
    if (this.weight) inputs.push(this.weight, this.bias!);
    if (this.training) T.incrementInPlace(this.numBatchesTracked);
    return apply(T.batchNormOp, inputs, {
      training: this.training,
      momentum: this.momentum,
      eps: this.eps,
      weight: !!this.weight,
      bias: !!this.bias,
    });
  }
}

/** Batch normalization over [N, C] or [N, C, L] (PyTorch's nn.BatchNorm1d). */
export class BatchNorm1d extends BatchNormBase {
  /**
   * BatchNorm1d over `numFeatures` channels; eps 1e-5, momentum 0.1, affine by default.
   * @throws {RangeError} When numFeatures is not an integer >= 1.
   */
  constructor(numFeatures: number, options: BatchNormLayerOptions = {}) {
    super(numFeatures, [2, 3], options);
  }
}

/** Batch normalization over [N, C, H, W] (PyTorch's nn.BatchNorm2d). */
export class BatchNorm2d extends BatchNormBase {
  /**
   * BatchNorm2d over `numFeatures` channels; eps 1e-5, momentum 0.1, affine by default.
   * @throws {RangeError} When numFeatures is not an integer >= 1.
   */
  constructor(numFeatures: number, options: BatchNormLayerOptions = {}) {
    super(numFeatures, [4], options);
  }
}

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

/** Merge dims `startDim..endDim` (PyTorch's nn.Flatten: default from dim 1). */
export class Flatten extends Module {
  /** Flatten dims startDim..endDim, both inclusive. */
  constructor(
    /** First dim merged; default 1, keeping the batch dim. */
    readonly startDim = 1,
    /** Last dim merged, inclusive; negative counts from the end. Default −1. */
    readonly endDim = -1,
  ) {
    super();
  }
  /** x with dims startDim..endDim merged into one ([N, C, H, W] to [N, C·H·W] by default). */
  forward(x: Variable): Variable {
    return x.flatten(this.startDim, this.endDim);
  }
}

/** A lookup table [num, dim] indexed by i32 tensors (PyTorch's nn.Embedding, init N(0, 1)). */
export class Embedding extends Module {
  /** The table [numEmbeddings, embeddingDim] (PyTorch's `weight`), init N(0, 1). */
  readonly weight: Parameter;
  /**
   * A table of `numEmbeddings` rows of `embeddingDim`, seeded by `options.seed`. `paddingIdx`:
   * a row that gets no gradient (it is not zeroed at init, unlike PyTorch).
   * @throws {RangeError} When a size is not an integer >= 1.
   */
  constructor(
    /** Rows of the table: indices lie in [0, numEmbeddings). */
    readonly numEmbeddings: number,
    /** Length of each row, the last dim of the output. */
    readonly embeddingDim: number,
    options: LayerOptions & { paddingIdx?: number } = {},
  ) {
    super();
    checkPositiveInt("Embedding", "numEmbeddings", numEmbeddings);
    checkPositiveInt("Embedding", "embeddingDim", embeddingDim);
    const device = options.device ?? Device.default;
    this.weight = new Parameter(T.randn([numEmbeddings, embeddingDim], { device, seed: options.seed }), "weight");
    this.paddingIdx = options.paddingIdx;
  }
  /** The row that gets no gradient, as given (negative counts from the end); undefined: none. */
  readonly paddingIdx?: number;
  /**
   * Look up `index` (an i32 tensor, a Variable over one, or 1-D host values, checked against
   * [0, numEmbeddings) before the upload; tensors are checked in checked mode, `setIndexChecks`).
   * @throws {RangeError} For a host index out of range: `embedding: index 12 at position 3 is out of range [0, 10)`.
   */
  forward(index: Variable | T.Indices): Variable {
    const idx = index instanceof Variable
      ? index
      : new Variable(T.toIndexTensor(index, T.embeddingRule(this.numEmbeddings), this.weight.data.device));
    return apply(T.embeddingOp, [this.weight, idx], { paddingIdx: this.paddingIdx });
  }
}

/** Options of {@link EmbeddingBag}. */
export interface EmbeddingBagLayerOptions extends LayerOptions {
  /** "mean" (default), "sum" or "max". */
  mode?: T.EmbeddingBagMode;
  /** A row left out of every bag; initialised to zeros and never updated by its gradient. */
  paddingIdx?: number;
}

/**
 * Sums, means or maxima of bags of embedding rows (PyTorch's nn.EmbeddingBag: weight
 * [num, dim] init N(0, 1) with row paddingIdx zeroed). forward(input [B, L]) or
 * forward(input [K], offsets [B]) gives [B, dim]; empty bags give zeros, as PyTorch.
 */
export class EmbeddingBag extends Module {
  /** The table [numEmbeddings, embeddingDim] (PyTorch's `weight`), init N(0, 1), row paddingIdx zeros. */
  readonly weight: Parameter;
  /** How a bag's rows combine: "sum", "mean" (the default) or "max". */
  readonly mode: T.EmbeddingBagMode;
  /** The row left out of every bag, as given; undefined: none. */
  readonly paddingIdx?: number;
  /**
   * A table of `numEmbeddings` rows of `embeddingDim`, seeded by `options.seed`.
   * @throws {RangeError} When a size is not an integer >= 1, mode is unknown or paddingIdx is out of range.
   */
  constructor(
    /** Rows of the table: indices lie in [0, numEmbeddings). */
    readonly numEmbeddings: number,
    /** Length of each row, the last dim of the output. */
    readonly embeddingDim: number,
    options: EmbeddingBagLayerOptions = {},
  ) {
    super();
    checkPositiveInt("EmbeddingBag", "numEmbeddings", numEmbeddings);
    checkPositiveInt("EmbeddingBag", "embeddingDim", embeddingDim);
    this.mode = options.mode ?? "mean";
    if (!["sum", "mean", "max"].includes(this.mode)) {
      throw new RangeError(`EmbeddingBag: mode must be "sum", "mean" or "max", got ${JSON.stringify(options.mode)}`);
    }
    const { pad } = T.embeddingShape([numEmbeddings, embeddingDim], [0], options.paddingIdx);
    const device = options.device ?? Device.default;
    const w = T.randn([numEmbeddings, embeddingDim], { device, seed: options.seed });
    if (pad >= 0) {
      const keep = T.fromArray(Float32Array.from({ length: numEmbeddings }, (_, i) => (i === pad ? 0 : 1)), [numEmbeddings, 1], { device });
      this.weight = new Parameter(T.mul(w, keep), "weight");
    } else {
      this.weight = new Parameter(w, "weight");
    }
    this.paddingIdx = options.paddingIdx;
  }
  /**
   * Bags of `input` (an i32 tensor or Variable, [B, L], or 1-D with `offsets` [B]; host values
   * are checked before the upload).
   * @throws {RangeError} For a bad index or offsets, naming the value and its position.
   */
  forward(input: Variable | T.Indices, offsets?: Variable | T.Indices): Variable {
    const raw = (v: Variable | T.Indices | undefined) => (v instanceof Variable ? v.data : v);
    const r = T.bagInputs(this.weight.shape, raw(input)!, raw(offsets), this.weight.data.device);
    return apply(T.embeddingBagOp, [this.weight, new Variable(r.index), new Variable(r.offsets)], {
      mode: this.mode,
      paddingIdx: this.paddingIdx,
    });
  }
  /** `num, dim, mode=…` and padding_idx when set, for the module tree's printout. */
  override extraRepr(): string {
    return `${this.numEmbeddings}, ${this.embeddingDim}, mode=${this.mode}` +
      (this.paddingIdx === undefined ? "" : `, padding_idx=${this.paddingIdx}`);
  }
}
