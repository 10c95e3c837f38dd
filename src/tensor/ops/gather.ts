/**
 * The index ops of shaders/gather.wgsl: index_select, gather, one_hot and embedding, their
 * shape rules and host-index checks. `embeddingBag` is embedding_bag.ts's; the launches they
 * share (and the sorted scatter-add of their backward) gather_launch.ts's.
 */
import { type Device, launch } from "../../gpu/mod.ts";
import { fromArray } from "../creation.ts";
import { checkHostIndices, type IndexRule, recordIndexCheck } from "../index_check.ts";
import type { OpDef } from "../op.ts";
import { fmt, numel, type Shape } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { GATHER } from "./gather_kernel.ts";
import { checkIndex, type IndexValues, perElement, selectBackward } from "./gather_launch.ts";
import { dimOf } from "./shape.ts";

/** Dims gather supports (the Params struct holds six per shape). */
const MAX_DIMS = 6;

// ---- shape rules (pure) ----------------------------------------------------------------------

/** How `indexSelect` views x as [outer, size, inner] and its output as [outer, k, inner]. */
export interface SelectPlan {
  /** Output shape: x's with `dim` resized to k. */
  shape: number[];
  /** The selected dim, normalized (non-negative). */
  dim: number;
  /** Product of x's sizes before `dim`. */
  outer: number;
  /** x's size along `dim`: the range the indices pick from. */
  size: number;
  /** Product of x's sizes after `dim`. */
  inner: number;
  /** Index count: the output's size along `dim`. */
  k: number;
}

/** Output shape of `indexSelect(x, dim, index)`: x's shape with `dim` resized to the index count. */
export function indexSelectShape(x: Shape, dim: number, index: Shape): SelectPlan {
  const d = dimOf(dim, x, "indexSelect");
  if (index.length !== 1) {
    throw new RangeError(`indexSelect: index must be 1-D, got shape ${fmt(index)} (x is ${fmt(x)})`);
  }
  const k = index[0];
  return {
    shape: x.map((n, i) => (i === d ? k : n)),
    dim: d,
    outer: numel(x.slice(0, d)),
    size: x[d],
    inner: numel(x.slice(d + 1)),
    k,
  };
}

/**
 * Output shape of `gather(x, dim, index)` (torch.gather): the index's shape, which must
 * have x's number of dims and sizes no larger than x's except along `dim`.
 */
export function gatherShape(x: Shape, dim: number, index: Shape): { shape: number[]; dim: number } {
  const d = dimOf(dim, x, "gather");
  const bad = (why: string) => new RangeError(`gather: index ${fmt(index)} does not fit x ${fmt(x)}: ${why}`);
  if (index.length !== x.length) throw bad(`it has ${index.length} dims, x has ${x.length}`);
  if (x.length > MAX_DIMS) throw bad(`at most ${MAX_DIMS} dims are supported`);
  index.forEach((n, i) => {
    if (i !== d && n > x[i]) throw bad(`size ${n} at dim ${i} exceeds x's ${x[i]}`);
  });
  return { shape: [...index], dim: d };
}

/** Output shape of `oneHot`: the index's shape with `numClasses` appended. */
export function oneHotShape(index: Shape, numClasses: number): number[] {
  if (!Number.isInteger(numClasses) || numClasses < 1) {
    throw new RangeError(`oneHot: numClasses must be a positive integer, got ${numClasses} (index ${fmt(index)})`);
  }
  return [...index, numClasses];
}

/** Output shape of `embedding` ([...index, D]) and `paddingIdx` normalized to a row (-1 = none). */
export function embeddingShape(weight: Shape, index: Shape, paddingIdx?: number): { shape: number[]; pad: number } {
  if (weight.length !== 2) throw new RangeError(`embedding: weight must be [V, D], got ${fmt(weight)}`);
  const v = weight[0];
  if (paddingIdx === undefined) return { shape: [...index, weight[1]], pad: -1 };
  if (!Number.isInteger(paddingIdx) || paddingIdx < -v || paddingIdx >= v) {
    throw new RangeError(
      `embedding: paddingIdx must be in ${-v}..${v - 1} for weight ${fmt(weight)}, got ${paddingIdx}`,
    );
  }
  return { shape: [...index, weight[1]], pad: paddingIdx < 0 ? paddingIdx + v : paddingIdx };
}

const pad6 = (s: Shape) => [...new Array<number>(MAX_DIMS - s.length).fill(1), ...s];

/** Gather params: both shapes padded to 6 dims, `dim` shifted with them. */
function gatherValues(x: Shape, index: Shape, dim: number, n: number): IndexValues & { n: number } {
  const [x0, x1, x2, x3, x4, x5] = pad6(x);
  const [i0, i1, i2, i3, i4, i5] = pad6(index);
  return { n, dim: dim + MAX_DIMS - x.length, x0, x1, x2, x3, x4, x5, i0, i1, i2, i3, i4, i5 };
}
// ---- ops -------------------------------------------------------------------------------------

/**
 * Rows of `x` along `dim` picked by an i32 1-D index (inputs `[x, index]`). The gradient of x
 * sums dy into the picked rows (repeated indices add up, deterministically).
 */
export const indexSelectOp: OpDef<{ dim: number }> = {
  name: "indexSelect",
  forward([x, index], { dim }) {
    checkIndex(x, index, "indexSelect");
    const r = indexSelectShape(x.shape, dim, index.shape);
    const y = Tensor.empty(r.shape, { device: x.device, dtype: x.dtype }, "indexSelect");
    const values = { n: numel(r.shape), size: r.size, k: r.k, inner: r.inner };
    launch(x.device, GATHER, { ...perElement("index_select_forward", values), io: { x, y, idx: index } });
    return { output: y, saved: [index] };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null, null];
    const r = indexSelectShape(ctx.shapes[0], ctx.attrs.dim, ctx.shapes[1]);
    const dx = Tensor.empty(ctx.shapes[0], { device: dy.device }, "indexSelect.backward");
    selectBackward(dy, ctx.saved[0], dx, r.size, r.k, r.inner, -1);
    return [dx, null];
  },
};

/**
 * torch.gather (inputs `[x, index]`): `y[c] = x[c with c[dim] = index[c]]`, shaped like the
 * index. The gradient of x scatter-adds dy (repeated indices add up, deterministically).
 */
export const gatherOp: OpDef<{ dim: number }> = {
  name: "gather",
  forward([x, index], { dim }) {
    checkIndex(x, index, "gather");
    const r = gatherShape(x.shape, dim, index.shape);
    const y = Tensor.empty(r.shape, { device: x.device, dtype: x.dtype }, "gather");
    const values = gatherValues(x.shape, index.shape, r.dim, y.numel);
    launch(x.device, GATHER, { ...perElement("gather_forward", values), io: { x, y, idx: index } });
    return { output: y, saved: [index] };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null, null];
    const [xs, is] = ctx.shapes;
    const r = gatherShape(xs, ctx.attrs.dim, is);
    const dx = Tensor.empty(xs, { device: dy.device }, "gather.backward");
    const values = gatherValues(xs, is, r.dim, dx.numel);
    launch(dy.device, GATHER, { ...perElement("gather_backward", values), io: { idx: ctx.saved[0], dy, dx } });
    return [dx, null];
  },
};

/** One-hot rows of an i32 index (input `[index]`); no gradient. */
export const oneHotOp: OpDef<{ numClasses: number }> = {
  name: "oneHot",
  forward([index], { numClasses }) {
    const shape = oneHotShape(index.shape, numClasses);
    checkIndex(index, index, "oneHot");
    const y = Tensor.empty(shape, { device: index.device }, "oneHot");
    launch(index.device, GATHER, {
      ...perElement("one_hot_forward", { n: y.numel, size: numClasses }),
      io: { y, idx: index },
    });
    return { output: y };
  },
};

/**
 * Rows of `weight` [V, D] picked by an i32 index of any shape (inputs `[weight, index]`).
 * The gradient of weight is dense; repeated indices add up; row `paddingIdx` gets none.
 */
export const embeddingOp: OpDef<{ paddingIdx?: number }> = {
  name: "embedding",
  forward([weight, index], { paddingIdx }) {
    checkIndex(weight, index, "embedding");
    const r = embeddingShape(weight.shape, index.shape, paddingIdx);
    recordIndexCheck(weight.device, index.buffer, index.shape, embeddingRule(weight.shape[0]));
    const y = Tensor.empty(r.shape, { device: weight.device, dtype: weight.dtype }, "embedding");
    const values = { n: y.numel, size: weight.shape[0], k: index.numel, inner: weight.shape[1] };
    launch(weight.device, GATHER, { ...perElement("index_select_forward", values), io: { x: weight, y, idx: index } });
    return { output: y, saved: [index] };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null, null];
    const [ws, is] = ctx.shapes;
    const r = embeddingShape(ws, is, ctx.attrs.paddingIdx);
    const dw = Tensor.empty(ws, { device: dy.device }, "embedding.backward");
    selectBackward(dy, ctx.saved[0], dw, ws[0], numel(is), ws[1], r.pad);
    return [dw, null];
  },
};

/** The index rule of an embedding table of `rows` rows. */
export const embeddingRule = (rows: number): IndexRule => ({
  op: "embedding",
  noun: "index",
  where: "position",
  limit: rows,
});

/** Host indices or an i32 tensor: what ops taking class or row indices accept. */
export type Indices = Tensor | ArrayLike<number>;

/**
 * An i32 tensor of host indices, each checked against `rule` before the upload (PyTorch's
 * error, at no GPU cost); a tensor passes through unchanged (see setIndexChecks for those).
 * @param shape Shape of the host indices; default 1-D.
 * @throws {RangeError} For an index out of range: `crossEntropy: target 12 at row 3 is out of range [0, 10)`.
 */
export function toIndexTensor(indices: Indices, rule: IndexRule, device: Device, shape?: Shape): Tensor {
  if (indices instanceof Tensor) return indices;
  const s = shape ?? [indices.length];
  if (numel(s) !== indices.length) {
    throw new RangeError(`${rule.op}: ${indices.length} host ${rule.noun} values do not fill shape ${fmt(s)}`);
  }
  checkHostIndices(indices, s, rule);
  return fromArray(Int32Array.from(indices), s, { device, dtype: "i32" });
}

// ---- tensor-level functions ------------------------------------------------------------------

/**
 * Entries of `x` along `dim` at the positions in `index` (i32, 1-D), as torch.index_select.
 * NOTE: an index outside [0, x.size(dim)) is not detected (that needs a read back): it
 * gives zeros and receives no gradient.
 * @throws {TypeError} When `index` is not i32. @throws {RangeError} For a bad dim or a non-1-D index.
 */
export const indexSelect = (x: Tensor, dim: number, index: Tensor): Tensor =>
  indexSelectOp.forward([x, index], { dim }).output;

/**
 * torch.gather: `y[i][j][k] = x[index[i][j][k]][j][k]` for dim 0, and so on; the output has
 * the index's shape. Out-of-range indices give 0 (not detected, as in {@link indexSelect}).
 * @throws {TypeError} When `index` is not i32. @throws {RangeError} When the shapes do not fit.
 */
export const gather = (x: Tensor, dim: number, index: Tensor): Tensor => gatherOp.forward([x, index], { dim }).output;

/**
 * f32 one-hot encoding `[...index.shape, numClasses]` of an i32 index. An index outside
 * [0, numClasses) gives an all-zero row: checking it would need a read back.
 * @throws {TypeError} When `index` is not i32. @throws {RangeError} When numClasses is not a positive integer.
 */
export const oneHot = (index: Tensor, numClasses: number): Tensor => oneHotOp.forward([index], { numClasses }).output;

/**
 * Look up rows of `weight` [V, D] for an i32 index of any shape: `[...index.shape, D]`, as
 * torch.nn.functional.embedding. Row `paddingIdx` (negative counts from V) receives no
 * gradient. Host indices (a plain array, 1-D) are checked before the upload; indices on the
 * GPU are checked in checked mode only (`setIndexChecks`), else out-of-range ones give zero rows.
 * @throws {TypeError} When `index` is not i32. @throws {RangeError} When weight is not 2-D,
 * paddingIdx is out of range, or a host index is outside [0, V).
 */
export const embedding = (weight: Tensor, index: Indices, paddingIdx?: number): Tensor =>
  embeddingOp.forward([weight, toIndexTensor(index, embeddingRule(weight.shape[0]), weight.device)], { paddingIdx })
    .output;
