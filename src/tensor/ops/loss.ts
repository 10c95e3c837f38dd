/**
 * The loss family of shaders/loss.wgsl: its params and bindings, the reduction option every
 * loss takes, and the class losses (crossEntropy, nllLoss). The elementwise losses are
 * ./loss_elementwise.ts.
 */
import { Device, type Kernel, kernel, launch, type Layout, layout, tuning } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { fmt } from "../shape.ts";
import { type IndexRule, recordIndexCheck } from "../index_check.ts";
import { Tensor } from "../tensor.ts";
import { type Indices, toIndexTensor } from "./gather.ts";

/** Mirrors `struct Params` in shaders/loss.wgsl. */
export const LOSS_PARAMS: Layout<{
  n: "u32"; classes: "u32"; ignore_index: "i32"; smoothing: "f32"; mode: "u32"; scale: "f32"; den_at: "u32";
  beta: "f32"; pw_n: "u32"; log_target: "u32"; alpha: "f32"; gamma: "f32";
}> = layout("loss", "Params", {
  n: "u32",
  classes: "u32",
  ignore_index: "i32",
  smoothing: "f32",
  mode: "u32",
  scale: "f32",
  den_at: "u32",
  beta: "f32",
  pw_n: "u32",
  log_target: "u32",
  alpha: "f32",
  gamma: "f32",
});
/** Storage bindings of shaders/loss.wgsl; a launch leaves out the params it does not read. */
export const LOSS: Kernel<typeof LOSS_PARAMS, {
  a: [number, "read"]; b: [number, "read"]; tgt: [number, "read"]; el: [number, "read_write"];
  y: [number, "read_write"]; stats: [number, "read_write"]; dy: [number, "read"]; dx: [number, "read_write"];
  pw: [number, "read"];
}> = kernel(LOSS_PARAMS, {
  a: [1, "read"],
  b: [2, "read"],
  tgt: [3, "read"],
  el: [4, "read_write"],
  y: [5, "read_write"],
  stats: [6, "read_write"],
  dy: [7, "read"],
  dx: [8, "read_write"],
  pw: [9, "read"],
}, { n: 0, classes: 0, ignore_index: 0, smoothing: 0, mode: 0, scale: 1, den_at: 0, beta: 0, pw_n: 1, log_target: 0, alpha: 0, gamma: 0 });

/** How a loss combines its per-element values, as PyTorch's `reduction`. */
export type LossReduction = "mean" | "sum" | "none";

/** Options every loss takes. */
export interface LossOptions {
  /** "mean" (default), "sum", or "none" (one loss per element or row). */
  reduction?: LossReduction;
}

/** Options of {@link nllLoss}. */
export interface NllLossOptions extends LossOptions {
  /** Rows with this target add nothing and do not count toward the mean (default -100, as PyTorch). */
  ignoreIndex?: number;
}

/** Options of {@link crossEntropy}. */
export interface CrossEntropyOptions extends NllLossOptions {
  /** Mix the one-hot target with the uniform distribution by this weight, in [0, 1] (default 0). */
  labelSmoothing?: number;
}

/** Attributes of the class losses (crossEntropy, nllLoss). */
export type ClassLossAttrs = CrossEntropyOptions;
const DEFAULT_IGNORE_INDEX = -100;
const MODE = { none: 0, sum: 1, mean: 2 } as const;

type Values = Partial<Record<keyof typeof LOSS_PARAMS.fields, number>>;

/**
 * Cross-entropy over at most this many classes runs one thread per row. A workgroup per row
 * costs SwiftShader and lavapipe per workgroup: gpt-nano's [128, 85] took 21-29 ms that way in
 * Chromium (bench/README.md, gpt-nano), one thread a row a fraction of it.
 */
const ROW_CLASSES = 256;
/** Threads per workgroup of the one-thread-per-row kernel. */
const ROWS_WG = 64;

/**
 * The `reduction` option checked, "mean" when absent (every loss of the family takes it).
 * @throws {RangeError} Naming the op and the value when it is not "mean", "sum" or "none".
 */
export function lossReduction(attrs: LossOptions | undefined, op: string): LossReduction {
  const r = attrs?.reduction ?? "mean";
  if (r !== "mean" && r !== "sum" && r !== "none") {
    throw new RangeError(`${op}: reduction must be "mean", "sum" or "none", got ${JSON.stringify(r)}`);
  }
  return r;
}

// ---- class losses ----------------------------------------------------------------

/** Validate x [N, C] f32 and target [N] i32; returns N and C. */
function checkClassInputs(x: Tensor, target: Tensor, op: string, xName: string): [number, number] {
  x.sameDevice(target, op);
  if (x.dtype !== "f32") throw new TypeError(`${op}: ${xName} must be f32, got ${x.dtype}`);
  if (target.dtype !== "i32") {
    throw new TypeError(`${op}: target must be an i32 tensor of class indices, got ${target.dtype}`);
  }
  if (x.ndim !== 2) throw new TypeError(`${op}: ${xName} must be [N, C], got ${fmt(x.shape)}`);
  if (target.ndim !== 1) throw new TypeError(`${op}: target must be [N], got ${fmt(target.shape)}`);
  const [n, c] = x.shape;
  if (target.shape[0] !== n) {
    throw new RangeError(
      `${op}: ${xName} ${fmt(x.shape)} and target ${fmt(target.shape)} disagree on N (${n} vs ${target.shape[0]})`,
    );
  }
  if (c === 0) throw new RangeError(`${op}: ${xName} ${fmt(x.shape)} has no classes`);
  return [n, c];
}

/** The target rule of a class loss over `c` classes (ignoreIndex allowed). */
export function classRule(op: string, c: number, attrs: NllLossOptions = {}): IndexRule {
  return { op, noun: "target", where: "row", limit: c, ignore: attrs.ignoreIndex ?? DEFAULT_IGNORE_INDEX };
}

function classValues(attrs: ClassLossAttrs, op: string, n: number, c: number): Values {
  const ignore = attrs.ignoreIndex ?? DEFAULT_IGNORE_INDEX;
  if (!Number.isInteger(ignore)) throw new TypeError(`${op}: ignoreIndex must be an integer, got ${ignore}`);
  const smoothing = attrs.labelSmoothing ?? 0;
  if (!(smoothing >= 0 && smoothing <= 1)) {
    throw new RangeError(`${op}: labelSmoothing must be in [0, 1], got ${smoothing}`);
  }
  return { n, classes: c, ignore_index: ignore, smoothing };
}

/** Sum or class-mean of the row losses in `el` into a scalar; the mean stores its count at stats[denAt]. */
function reduceRows(
  device: Device,
  reduction: LossReduction,
  el: Tensor,
  target: Tensor,
  stats: Tensor,
  v: Values,
  denAt: number,
): Tensor {
  if (reduction === "none") return el;
  const y = Tensor.empty([], { device }, "loss");
  const n = v.n!;
  if (reduction === "sum") {
    launch(device, LOSS, {
      entry: "total_forward",
      params: { n, scale: 1 },
      io: { el, y },
      groups: [1],
      overrides: { WG: tuning.reduceWg(n) },
    });
  } else {
    launch(device, LOSS, {
      entry: "class_mean_forward",
      params: { ...v, den_at: denAt },
      io: { tgt: target, el, y, stats },
      groups: [1],
      overrides: { WG: tuning.reduceWg(n) },
    });
  }
  return y;
}

/**
 * Cross entropy of logits [N, C] against i32 class targets [N]: log-softmax and NLL fused
 * (one row kernel, plus one reduction for "mean"/"sum"); backward is one elementwise
 * kernel, (softmax - target distribution) · upstream. Saves [logits, target, stats] where
 * stats holds each row's max and log-sum-exp, then the mean's count.
 */
export const crossEntropyOp: OpDef<ClassLossAttrs> = {
  name: "crossEntropy",
  forward([x, target], attrs) {
    const op = "crossEntropy";
    const [n, c] = checkClassInputs(x, target, op, "logits");
    recordIndexCheck(x.device, target.buffer, target.shape, classRule(op, c, attrs));
    const reduction = lossReduction(attrs, op);
    const v = classValues(attrs, op, n, c);
    const stats = Tensor.empty([2 * n + 1], { device: x.device }, "crossEntropy.stats");
    const el = Tensor.empty([n], { device: x.device }, op);
    const io = { a: x, tgt: target, el, stats };
    if (c <= ROW_CLASSES && reduction === "mean" && n <= tuning.REDUCE_WG) {
      // Rows and their class mean in one launch (one workgroup covers the batch).
      const y = Tensor.empty([], { device: x.device }, "loss");
      launch(x.device, LOSS, {
        entry: "cross_entropy_mean_forward_rows",
        params: { ...v, den_at: 2 * n },
        io: { ...io, y },
        groups: [1],
        overrides: { WG: tuning.reduceWg(n) },
      });
      return { output: y, saved: [x, target, stats] };
    }
    if (c <= ROW_CLASSES) {
      launch(x.device, LOSS, {
        entry: "cross_entropy_forward_rows",
        params: v,
        io,
        groups: Device.grid(n, ROWS_WG),
        overrides: { WG: ROWS_WG },
      });
    } else {
      launch(x.device, LOSS, {
        entry: "cross_entropy_forward",
        params: v,
        io,
        groups: Device.grid(n, 1),
        overrides: { WG: tuning.reduceWg(c) },
      });
    }
    return { output: reduceRows(x.device, reduction, el, target, stats, v, 2 * n), saved: [x, target, stats] };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null, null];
    const [x, target, stats] = ctx.saved;
    const [n, c] = x.shape;
    const v = classValues(ctx.attrs, "crossEntropy", n, c);
    const mode = MODE[lossReduction(ctx.attrs, "crossEntropy")];
    const dx = Tensor.empty(x.shape, { device: dy.device }, "crossEntropy.backward");
    launch(dy.device, LOSS, {
      entry: "cross_entropy_backward",
      params: { ...v, mode, den_at: 2 * n },
      io: { a: x, tgt: target, stats, dy, dx },
      groups: Device.grid(n * c),
    });
    return [dx, null];
  },
};

/** Negative log-likelihood of log-probabilities [N, C] against i32 targets [N]. Saves [target, stats]. */
export const nllLossOp: OpDef<NllLossOptions> = {
  name: "nllLoss",
  forward([x, target], attrs) {
    const op = "nllLoss";
    const [n, c] = checkClassInputs(x, target, op, "logProbs");
    recordIndexCheck(x.device, target.buffer, target.shape, classRule(op, c, attrs));
    const reduction = lossReduction(attrs, op);
    const v = classValues(attrs, op, n, c);
    const stats = Tensor.empty([1], { device: x.device }, "nllLoss.stats");
    const el = Tensor.empty([n], { device: x.device }, op);
    launch(x.device, LOSS, { entry: "nll_forward", params: v, io: { a: x, tgt: target, el }, groups: Device.grid(n) });
    return { output: reduceRows(x.device, reduction, el, target, stats, v, 0), saved: [target, stats] };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null, null];
    const [target, stats] = ctx.saved;
    const [n, c] = ctx.shapes[0];
    const v = classValues(ctx.attrs, "nllLoss", n, c);
    const mode = MODE[lossReduction(ctx.attrs, "nllLoss")];
    const dx = Tensor.empty(ctx.shapes[0], { device: dy.device }, "nllLoss.backward");
    launch(dy.device, LOSS, {
      entry: "nll_backward",
      params: { ...v, mode, den_at: 0 },
      io: { tgt: target, stats, dy, dx },
      groups: Device.grid(n * c),
    });
    return [dx, null];
  },
};

// ---- tensor-level functions ----------------------------------------------------------

/**
 * Cross entropy of logits [N, C] against class indices [N] (i32), as
 * `torch.nn.functional.cross_entropy`: log-softmax and NLL fused, stable for large logits.
 * "mean" divides by the number of rows whose target is not `ignoreIndex`. A target outside
 * [0, C) that is not `ignoreIndex` is an error: at once for host targets (a plain array),
 * at the next read back in checked mode (`setIndexChecks`) for targets on the GPU; with
 * checks off, a bad GPU target gives NaN (the kernel cannot throw).
 * @returns A scalar `[]` for "mean"/"sum", `[N]` for "none" (0 on ignored rows).
 * @throws {TypeError} When logits are not f32 [N, C] or target is not i32 [N].
 * @throws {RangeError} When N differs (both shapes named), for a bad reduction or labelSmoothing
 * outside [0, 1], or a host target out of range (`crossEntropy: target 12 at row 3 is out of range [0, 10)`).
 * @example
 * ```ts
 * import { Device } from "../../gpu/mod.ts";
 * import { fromArray } from "../creation.ts";
 * import { crossEntropy } from "./loss.ts";
 * await Device.request();
 * const loss = crossEntropy(fromArray([2, 0, 1, 0, 3, 1], [2, 3]), fromArray(new Int32Array([0, 1])));
 * console.log(await loss.item());
 * ```
 */
export function crossEntropy(logits: Tensor, target: Indices, options: CrossEntropyOptions = {}): Tensor {
  const t = toIndexTensor(target, classRule("crossEntropy", logits.shape[1], options), logits.device);
  return crossEntropyOp.forward([logits, t], options).output;
}

/**
 * Negative log-likelihood of log-probabilities [N, C] against class indices [N] (i32), as
 * `torch.nn.functional.nll_loss`.
 * @throws {TypeError} When logProbs are not f32 [N, C] or target is not i32 [N].
 * Targets out of range are checked as in {@link crossEntropy}.
 * @throws {RangeError} When N differs (both shapes named), for a bad reduction, or a host target out of range.
 */
export function nllLoss(logProbs: Tensor, target: Indices, options: NllLossOptions = {}): Tensor {
  const t = toIndexTensor(target, classRule("nllLoss", logProbs.shape[1], options), logProbs.device);
  return nllLossOp.forward([logProbs, t], options).output;
}
