/** Batch normalization (PyTorch's nn.BatchNorm1d/2d): running statistics as buffers, a batch counter. */
import { apply, Parameter, Variable } from "../autograd/mod.ts";
import { Device } from "../gpu/mod.ts";
import * as T from "../tensor/mod.ts";
import type { Tensor } from "../tensor/mod.ts";
import { checkPositiveInt } from "./layer_options.ts";
import { Module } from "./module.ts";

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
