/**
 * Functional forms on Variables: softmax, losses. Targets may be plain tensors (class
 * indices are i32); they never receive a gradient unless they are Variables that want one.
 */
import { apply, Variable } from "../autograd/mod.ts";
import * as T from "../tensor/mod.ts";
import type { Tensor } from "../tensor/mod.ts";

const v = (x: Variable | Tensor): Variable => (x instanceof Variable ? x : new Variable(x));

/** ELU with `alpha` (PyTorch default 1). */
export function elu(x: Variable, alpha = 1): Variable {
  return apply(T.eluOp, [x], { alpha });
}
/** SELU (fixed alpha and scale, as torch.nn.functional.selu). */
export function selu(x: Variable): Variable {
  return apply(T.seluOp, [x], { alpha: T.SELU_ALPHA, scale: T.SELU_SCALE });
}
/** Mish, x·tanh(softplus(x)). */
export function mish(x: Variable): Variable {
  return apply(T.mishOp, [x], {});
}
/** Hardswish, x·relu6(x + 3)/6. */
export function hardswish(x: Variable): Variable {
  return apply(T.hardswishOp, [x], {});
}
/** Hardsigmoid, relu6(x + 3)/6. */
export function hardsigmoid(x: Variable): Variable {
  return apply(T.hardsigmoidOp, [x], {});
}
/**
 * log σ(x) = −softplus(−x), stable for large |x| (torch.nn.functional.logsigmoid); the
 * gradient is σ(−x).
 * @throws {TypeError} When x is not f32.
 */
export function logSigmoid(x: Variable): Variable {
  return apply(T.logSigmoidOp, [x], {});
}
/** PReLU with a learned `weight` [C] on dim 1, or [1] shared (torch.nn.functional.prelu). */
export function prelu(x: Variable, weight: Variable): Variable {
  return apply(T.preluOp, [x, weight], undefined);
}

/** Softmax along `dim`. */
export function softmax(x: Variable, dim = -1): Variable {
  return apply(T.softmaxOp, [x], { dim });
}
/** Log-softmax along `dim`. */
export function logSoftmax(x: Variable, dim = -1): Variable {
  return apply(T.logSoftmaxOp, [x], { dim });
}
/** Class targets as a Variable, from a tensor or from host values (checked against [0, C) before the upload). */
function classTarget(op: string, x: Variable, target: Variable | T.Indices, options: T.NllLossOptions): Variable {
  if (target instanceof Variable) return target;
  return v(T.toIndexTensor(target, T.classRule(op, x.shape[1], options), x.data.device));
}

/**
 * Cross-entropy of logits [N, C] against class indices (i32 [N], or host values); PyTorch options.
 * @throws {RangeError} For a host target outside [0, C) that is not ignoreIndex, e.g.
 * `crossEntropy: target 12 at row 3 is out of range [0, 10)`; targets on the GPU are checked
 * in checked mode (`setIndexChecks`).
 */
export function crossEntropy(logits: Variable, target: Variable | T.Indices, options: T.CrossEntropyOptions = {}): Variable {
  return apply(T.crossEntropyOp, [logits, classTarget("crossEntropy", logits, target, options)], options);
}
/** Negative log-likelihood of log-probabilities [N, C] against class indices (checked as {@link crossEntropy}). */
export function nllLoss(logProbs: Variable, target: Variable | T.Indices, options: T.NllLossOptions = {}): Variable {
  return apply(T.nllLossOp, [logProbs, classTarget("nllLoss", logProbs, target, options)], options);
}
/** Mean squared error. */
export function mseLoss(a: Variable, b: Variable | Tensor, options: T.LossOptions = {}): Variable {
  return apply(T.mseLossOp, [a, v(b)], options);
}
/** Mean absolute error. */
export function l1Loss(a: Variable, b: Variable | Tensor, options: T.LossOptions = {}): Variable {
  return apply(T.l1LossOp, [a, v(b)], options);
}
/** Huber loss with `beta`. */
export function smoothL1Loss(a: Variable, b: Variable | Tensor, options: T.SmoothL1Options = {}): Variable {
  return apply(T.smoothL1LossOp, [a, v(b)], options);
}
/** Binary cross-entropy of probabilities. */
export function bceLoss(p: Variable, target: Variable | Tensor, options: T.LossOptions = {}): Variable {
  return apply(T.bceLossOp, [p, v(target)], options);
}
/** Binary cross-entropy of logits (stable), optional `posWeight`. */
export function bceWithLogitsLoss(logits: Variable, target: Variable | Tensor, options: T.BceWithLogitsOptions = {}): Variable {
  const { posWeight, ...rest } = options;
  if (posWeight === undefined) return apply(T.bceWithLogitsLossOp, [logits, v(target)], rest);
  const pw = posWeight instanceof T.Tensor ? posWeight : T.fromArray([posWeight], [1], { device: logits.data.device });
  return apply(T.bceWithLogitsLossOp, [logits, v(target), new Variable(pw)], rest);
}
/**
 * KL divergence of `target` from log-probabilities `input`, as torch.nn.functional.kl_div;
 * `reduction` "mean" (default, over every element as PyTorch), "batchmean" (per sample),
 * "sum" or "none", and `logTarget`. Both inputs get gradients when they want one.
 * @throws {TypeError} For non-f32 inputs. @throws {RangeError} When shapes differ or the reduction is unknown.
 */
export function klDiv(input: Variable, target: Variable | Tensor, options: T.KlDivOptions = {}): Variable {
  return apply(T.klDivOp, [input, v(target)], options);
}
/**
 * Focal loss on logits, as torchvision.ops.sigmoid_focal_loss: `alpha` 0.25, `gamma` 2,
 * `reduction` "none" by default. The targets get no gradient.
 * @throws {TypeError} For non-f32 inputs. @throws {RangeError} When shapes differ or an option is out of range.
 */
export function sigmoidFocalLoss(
  inputs: Variable,
  targets: Variable | Tensor,
  options: T.SigmoidFocalLossOptions = {},
): Variable {
  return apply(T.sigmoidFocalLossOp, [inputs, v(targets)], options);
}

/**
 * 1-D convolution as torch.nn.functional.conv1d: x [N, Cin, L] (or [Cin, L]), weight
 * [Cout, Cin/groups, K], optional bias [Cout]; `stride`, `padding`, `dilation`, `groups`.
 * @throws {TypeError} On a wrong rank or dtype. @throws {RangeError} See `ops.conv1dShape`.
 */
export function conv1d(x: Variable, weight: Variable, bias?: Variable | null, options: T.Conv1dOptions = {}): Variable {
  return apply(T.conv1dOp, bias ? [x, weight, bias] : [x, weight], options);
}
/** 1-D max pooling as torch.nn.functional.max_pool1d (x [N, C, L] or [C, L]; stride defaults to kernelSize). */
export function maxPool1d(x: Variable, options: T.MaxPool1dOptions): Variable {
  return apply(T.maxPool1dOp, [x], options);
}
/** 1-D average pooling as torch.nn.functional.avg_pool1d (countIncludePad true by default). */
export function avgPool1d(x: Variable, options: T.AvgPool1dOptions): Variable {
  return apply(T.avgPool1dOp, [x], options);
}
/**
 * Bags of embedding rows as torch.nn.functional.embedding_bag: weight [V, D], index [B, L] or
 * 1-D with offsets [B]; `mode` "mean" (default), "sum" or "max"; `paddingIdx` left out. Empty
 * bags give zeros. The weight gets the gradient.
 */
export function embeddingBag(
  weight: Variable,
  index: Variable | T.Indices,
  offsets?: Variable | T.Indices,
  options: T.EmbeddingBagOptions = {},
): Variable {
  const raw = (x: Variable | T.Indices | undefined) => (x instanceof Variable ? x.data : x);
  const r = T.bagInputs(weight.shape, raw(index)!, raw(offsets), weight.data.device);
  return apply(T.embeddingBagOp, [weight, v(r.index), v(r.offsets)], options);
}

// ---- the layers' ops, for models written as functions of their weights ----------------

/**
 * The matrix product as torch.matmul, batch dims broadcast; `transA`/`transB` read the last
 * two dims of a or b transposed in place (no copy).
 * @throws {RangeError} When the inner dims differ or the batch dims do not broadcast (both shapes named).
 */
export function matmul(a: Variable, b: Variable, options: T.MatmulAttrs = {}): Variable {
  return apply(T.matmulOp, [a, b], options);
}

/**
 * x·weightᵀ + bias as torch.nn.functional.linear: x [..., in], weight [out, in], bias [out].
 * `activation` ("relu", "gelu", "geluTanh", "tanh", "sigmoid", "silu") runs in the same
 * dispatch, the f32 operations of the two ops apart.
 * @throws {RangeError} When the shapes do not fit (named).
 */
export function linear(
  x: Variable,
  weight: Variable,
  bias?: Variable | null,
  options: { activation?: T.Activation } = {},
): Variable {
  const inputs = bias ? [x, weight, bias] : [x, weight];
  if (options.activation === undefined) return apply(T.linearOp, inputs, undefined);
  const op = T.linearActOps[options.activation];
  if (!op) {
    throw new RangeError(
      `linear: activation must be one of ${Object.keys(T.linearActOps).join(", ")}, got ${JSON.stringify(options.activation)}`,
    );
  }
  return apply(op, inputs, undefined);
}

/**
 * residual + dropout(linear(x, weight, bias)) in one dispatch (a transformer block's
 * `x + drop(ff_down(h))`); `dropout` p in [0, 1), none by default, drawn from the global seed
 * stream as `dropout` would unless `seed` is given.
 * @throws {RangeError} When the residual does not have the output's shape, or p is out of range.
 */
export function linearResidual(
  x: Variable,
  weight: Variable,
  bias: Variable | null | undefined,
  residual: Variable,
  options: { dropout?: number; seed?: number } = {},
): Variable {
  const p = options.dropout ?? 0;
  const dropout = p > 0 ? { p, training: true, seed: options.seed ?? T.nextSeed() } : null;
  return apply(T.linearResidualOp, bias ? [x, weight, bias, residual] : [x, weight, residual], { bias: !!bias, dropout });
}

/**
 * 2-D convolution as torch.nn.functional.conv2d: x [N, Cin, H, W], weight [Cout, Cin/groups,
 * kH, kW], optional bias [Cout]; `stride`, `padding`, `dilation`, `groups`.
 * @throws {TypeError} On a wrong rank or dtype. @throws {RangeError} See `ops.conv2dShape`.
 */
export function conv2d(x: Variable, weight: Variable, bias?: Variable | null, options: T.Conv2dOptions = {}): Variable {
  return apply(T.conv2dOp, bias ? [x, weight, bias] : [x, weight], options);
}

/**
 * Transposed 2-D convolution as torch.nn.functional.conv_transpose2d: weight [Cin,
 * Cout/groups, kH, kW]; `outputPadding` besides conv2d's options.
 * @throws {TypeError} On a wrong rank or dtype. @throws {RangeError} For shapes that do not fit (named).
 */
export function convTranspose2d(
  x: Variable,
  weight: Variable,
  bias?: Variable | null,
  options: T.ConvTranspose2dOptions = {},
): Variable {
  return apply(T.convTranspose2dOp, bias ? [x, weight, bias] : [x, weight], options);
}

/** 2-D max pooling as torch.nn.functional.max_pool2d (stride defaults to kernelSize). */
export function maxPool2d(x: Variable, options: T.MaxPool2dOptions): Variable {
  return apply(T.maxPool2dOp, [x], options);
}
/** 2-D average pooling as torch.nn.functional.avg_pool2d (countIncludePad true by default). */
export function avgPool2d(x: Variable, options: T.AvgPool2dOptions): Variable {
  return apply(T.avgPool2dOp, [x], options);
}
/** Adaptive average pooling to `outputSize` (one number or [h, w]) as torch.nn.functional.adaptive_avg_pool2d. */
export function adaptiveAvgPool2d(x: Variable, outputSize: T.Size2d): Variable {
  return apply(T.adaptiveAvgPool2dOp, [x], { outputSize });
}

/**
 * Batch normalization as torch.nn.functional.batch_norm: statistics over every dim but 1.
 * `training` (default false) normalizes with the batch's and updates `runningMean` and
 * `runningVar` in place (`momentum` 0.1); else it uses them. `eps` 1e-5.
 * @throws {RangeError} When a statistic or an affine parameter is not [C], or an option is out of range.
 */
export function batchNorm(
  x: Variable,
  runningMean: Tensor,
  runningVar: Tensor,
  weight?: Variable | null,
  bias?: Variable | null,
  options: { training?: boolean; momentum?: number; eps?: number } = {},
): Variable {
  const inputs = [x, v(runningMean), v(runningVar)];
  if (weight) inputs.push(weight);
  if (bias) inputs.push(bias);
  const { training = false, momentum = 0.1, eps = 1e-5 } = options;
  return apply(T.batchNormOp, inputs, { training, momentum, eps, weight: !!weight, bias: !!bias });
}

/**
 * Layer normalization over the trailing `normalizedShape` dims as
 * torch.nn.functional.layer_norm; `eps` 1e-5.
 * @throws {TypeError} For a bad normalizedShape. @throws {RangeError} When it does not match x's trailing dims.
 */
export function layerNorm(
  x: Variable,
  normalizedShape: number | number[],
  weight?: Variable | null,
  bias?: Variable | null,
  eps = 1e-5,
): Variable {
  const inputs = [x, ...(weight ? [weight] : []), ...(bias ? [bias] : [])];
  return apply(T.layerNormOp, inputs, { normalizedShape, eps, weight: !!weight, bias: !!bias });
}

/**
 * RMS normalization over the trailing `normalizedShape` dims (flodl's RMSNorm,
 * torch.nn.functional.rms_norm); `eps` 1e-5.
 * @throws {TypeError} For a bad normalizedShape. @throws {RangeError} When it does not match x's trailing dims.
 */
export function rmsNorm(x: Variable, normalizedShape: number | number[], weight?: Variable | null, eps = 1e-5): Variable {
  return apply(T.rmsNormOp, weight ? [x, weight] : [x], { normalizedShape, eps, weight: !!weight });
}

/**
 * Group normalization as torch.nn.functional.group_norm: x [N, C, *] is split into
 * `numGroups` groups of C / numGroups channels, each normalized over its channels and every
 * spatial position (biased variance), then scaled and shifted per channel by `weight` and
 * `bias` [C]. Built on layerNorm's kernels (the groups are rows), so it has its gradients.
 * @throws {RangeError} When x has fewer than 2 dims, numGroups does not divide C, weight or
 * bias is not [C], or eps is not a finite number >= 0.
 */
export function groupNorm(
  x: Variable,
  numGroups: number,
  weight?: Variable | null,
  bias?: Variable | null,
  eps = 1e-5,
): Variable {
  const shape = x.shape;
  if (shape.length < 2) throw new RangeError(`groupNorm: x must be [N, C, *] (at least 2 dims), got [${shape}]`);
  const [n, c] = shape;
  if (!Number.isInteger(numGroups) || numGroups < 1 || c % numGroups !== 0) {
    throw new RangeError(`groupNorm: numGroups must be a positive integer dividing the ${c} channels, got ${numGroups}`);
  }
  for (const [name, p] of [["weight", weight], ["bias", bias]] as const) {
    if (p && !(p.shape.length === 1 && p.shape[0] === c)) throw new RangeError(`groupNorm: ${name} must be [${c}], got [${p.shape}]`);
  }
  if (!(eps >= 0) || !Number.isFinite(eps)) throw new RangeError(`groupNorm: eps must be a finite number >= 0, got ${eps}`);
  const perGroup = shape.reduce((a, d) => a * d, 1) / (n * numGroups);
  const normed = apply(T.layerNormOp, [x.reshape([n, numGroups, perGroup])], { normalizedShape: [perGroup], eps, weight: false, bias: false })
    .reshape(shape);
  if (!weight && !bias) return normed;
  const perChannel = [1, c, ...shape.slice(2).map(() => 1)];
  const scaled = weight ? normed.mul(weight.reshape(perChannel)) : normed;
  return bias ? scaled.add(bias.reshape(perChannel)) : scaled;
}

/** How {@link interpolate} resamples: "nearest" on 3-D to 5-D x, "linear" 3-D, "bilinear" 4-D, "trilinear" 5-D. */
export type InterpolateMode = "nearest" | "linear" | "bilinear" | "trilinear";

/** Options of {@link interpolate}: exactly one of `size` and `scaleFactor`. */
export interface InterpolateOptions {
  /** The output's spatial size: one number for every spatial dim, or one per dim. */
  size?: number | number[];
  /** The factor of every spatial dim (or one per dim); the output is ⌊in · factor⌋. */
  scaleFactor?: number | number[];
  /** Default "nearest". */
  mode?: InterpolateMode;
  /** The linear modes only: corner pixels' centres map onto each other (default false). */
  alignCorners?: boolean;
}

const SPATIAL_DIMS: Record<InterpolateMode, number[]> = { nearest: [1, 2, 3], linear: [1], bilinear: [2], trilinear: [3] };

/**
 * Resampling as torch.nn.functional.interpolate over x [N, C, *spatial]: "nearest" takes
 * source index ⌊dst · in/out⌋ (or ⌊dst / scaleFactor⌋); the linear modes weigh the two
 * neighbours of source position (dst + ½)·scale − ½ (clamped at 0), or dst·(in − 1)/(out − 1)
 * with `alignCorners`. Built one spatial dim at a time from indexSelect and a broadcast
 * weighted sum, so x gets its gradient from ops that have one.
 * @throws {RangeError} For a mode that does not fit x's rank, both or neither of size and
 * scaleFactor, a size or factor that is not positive, or alignCorners with "nearest".
 */
export function interpolate(x: Variable, options: InterpolateOptions): Variable {
  const { size, scaleFactor, mode = "nearest" } = options;
  const spatial = x.shape.length - 2;
  if (!Object.hasOwn(SPATIAL_DIMS, mode)) throw new RangeError(`interpolate: mode must be one of ${Object.keys(SPATIAL_DIMS).join(", ")}, got ${JSON.stringify(mode)}`);
  if (!SPATIAL_DIMS[mode].includes(spatial)) {
    throw new RangeError(`interpolate: mode "${mode}" takes x with ${SPATIAL_DIMS[mode].map((d) => d + 2).join(" or ")} dims, got [${x.shape}]`);
  }
  if ((size === undefined) === (scaleFactor === undefined)) throw new RangeError(`interpolate: give exactly one of size and scaleFactor, got ${size === undefined ? "neither" : "both"}`);
  if (mode === "nearest" && options.alignCorners !== undefined) throw new RangeError(`interpolate: alignCorners applies to the linear modes only, got it with "nearest"`);
  const perDim = (v: number | number[], name: string): number[] => {
    const a = typeof v === "number" ? Array(spatial).fill(v) : [...v];
    if (a.length !== spatial || !a.every((e) => e > 0 && Number.isFinite(e))) {
      throw new RangeError(`interpolate: ${name} must be a positive number or ${spatial} of them, got ${JSON.stringify(v)}`);
    }
    return a;
  };
  const factors = scaleFactor === undefined ? undefined : perDim(scaleFactor, "scaleFactor");
  const sizes = size === undefined ? factors!.map((f, d) => Math.floor(x.shape[d + 2] * f)) : perDim(size, "size");
  if (!sizes.every((s) => Number.isInteger(s) && s >= 1)) throw new RangeError(`interpolate: the output size must be whole and >= 1 per dim, got [${sizes}]`);
  const device = x.data.device, align = options.alignCorners ?? false;
  let y = x;
  for (let d = 0; d < spatial; d++) {
    const dim = d + 2, len = x.shape[dim], out = sizes[d];
    if (out === len && !factors) continue;
    // PyTorch's source scale: in/out, or 1/scaleFactor when one was given.
    const scale = factors ? 1 / factors[d] : len / out;
    const index = (i: number[]) => T.fromArray(Int32Array.from(i), [i.length], { device, dtype: "i32" });
    if (mode === "nearest") {
      y = y.indexSelect(dim, index(Array.from({ length: out }, (_, i) => Math.min(Math.floor(i * scale), len - 1))));
      continue;
    }
    const lo: number[] = [], hi: number[] = [], w = new Float32Array(out);
    for (let i = 0; i < out; i++) {
      const src = align ? (out > 1 ? (i * (len - 1)) / (out - 1) : 0) : Math.max((i + 0.5) * scale - 0.5, 0);
      const i0 = Math.min(Math.floor(src), len - 1);
      lo.push(i0);
      hi.push(i0 < len - 1 ? i0 + 1 : i0);
      w[i] = src - i0;
    }
    const shape = x.shape.map((_, k) => (k === dim ? out : 1));
    const far = v(T.fromArray(w, shape, { device }));
    const near = v(T.fromArray(w.map((e) => 1 - e), shape, { device }));
    y = y.indexSelect(dim, index(lo)).mul(near).add(y.indexSelect(dim, index(hi)).mul(far));
  }
  return y;
}

/**
 * Channel dropout as torch.nn.functional.dropout2d on x [N, C, H, W]: each (sample, channel)
 * plane is zeroed with probability p and the others scaled by 1 / (1 − p); identity unless
 * `training` (default true) and p > 0. The mask's seed comes from the global stream unless
 * given. (PyTorch also takes an unbatched [C, H, W]; here add the batch dim first.)
 * @throws {RangeError} When x is not 4-D, p is outside [0, 1) or the seed is not a u32.
 */
export function dropout2d(x: Variable, p = 0.5, training = true, seed?: number): Variable {
  if (!(p >= 0 && p < 1)) throw new RangeError(`dropout2d: p must be in [0, 1), got ${p}`);
  if (x.shape.length !== 4) throw new RangeError(`dropout2d: x must be [N, C, H, W], got [${x.shape}]`);
  if (!training || p === 0) return x;
  const [n, c] = x.shape;
  const planes = v(T.ones([n, c, 1, 1], { device: x.data.device }));
  return x.mul(apply(T.dropoutOp, [planes], { p, training: true, seed: seed ?? T.nextSeed() }));
}

/**
 * Inverted dropout as torch.nn.functional.dropout: identity unless `training` (default true)
 * and p > 0; the mask's seed comes from the global stream (`manualSeed`) unless given.
 * @throws {RangeError} When p is outside [0, 1) or the seed is not a u32.
 */
export function dropout(x: Variable, p = 0.5, training = true, seed?: number): Variable {
  if (!(p >= 0 && p < 1)) throw new RangeError(`dropout: p must be in [0, 1), got ${p}`);
  if (!training || p === 0) return x;
  return apply(T.dropoutOp, [x], { p, training: true, seed: seed ?? T.nextSeed() });
}

/**
 * Rows of `weight` [V, D] picked by `index` (an i32 tensor, a Variable over one, or 1-D host
 * values checked before the upload) as torch.nn.functional.embedding; row `paddingIdx` gets
 * no gradient.
 * @throws {TypeError} When the index is not i32. @throws {RangeError} For a host index outside [0, V).
 */
export function embedding(index: Variable | T.Indices, weight: Variable, paddingIdx?: number): Variable {
  const idx = index instanceof Variable
    ? index
    : v(T.toIndexTensor(index, T.embeddingRule(weight.shape[0]), weight.data.device));
  return apply(T.embeddingOp, [weight, idx], { paddingIdx });
}
