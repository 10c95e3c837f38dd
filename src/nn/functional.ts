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
