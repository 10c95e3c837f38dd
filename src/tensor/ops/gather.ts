import { Device, type Kernel, kernel, launch, type Layout, layout } from "../../gpu/mod.ts";
import { fromArray } from "../creation.ts";
import { checkHostIndices, type IndexRule, recordIndexCheck } from "../index_check.ts";
import type { OpDef } from "../op.ts";
import { fmt, numel, type Shape } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { dimOf } from "./shape.ts";

// deno-fmt-ignore
/** Mirrors `struct Params` in shaders/gather.wgsl (one row per WGSL line). */
export const GATHER_PARAMS: Layout<{
  n: "u32"; size: "u32"; k: "u32"; inner: "u32"; pad: "i32"; dim: "u32"; block: "u32"; stride: "u32";
  x0: "u32"; x1: "u32"; x2: "u32"; x3: "u32"; x4: "u32"; x5: "u32"; i0: "u32"; i1: "u32"; i2: "u32";
  i3: "u32"; i4: "u32"; i5: "u32"; mode: "u32"; bags: "u32";
}> = layout("gather", "Params", {
  n: "u32", size: "u32", k: "u32", inner: "u32", pad: "i32", dim: "u32", block: "u32", stride: "u32",
  x0: "u32", x1: "u32", x2: "u32", x3: "u32", x4: "u32", x5: "u32",
  i0: "u32", i1: "u32", i2: "u32", i3: "u32", i4: "u32", i5: "u32",
  mode: "u32", bags: "u32",
});

/** Dims gather supports (the Params struct holds six per shape). */
const MAX_DIMS = 6;

// deno-fmt-ignore
/** Storage bindings of shaders/gather.wgsl (x and y are raw 32-bit words: any dtype). */
export const GATHER: Kernel<typeof GATHER_PARAMS, {
  x: [number, "read"]; y: [number, "read_write"]; idx: [number, "read"]; dy: [number, "read"];
  dx: [number, "read_write"]; keys: [number, "read_write"]; pos: [number, "read_write"];
  bounds: [number, "read_write"]; offs: [number, "read"]; arg: [number, "read_write"];
}> = kernel(GATHER_PARAMS, {
  x: [1, "read"], y: [2, "read_write"], idx: [3, "read"], dy: [4, "read"], dx: [5, "read_write"],
  keys: [6, "read_write"], pos: [7, "read_write"], bounds: [8, "read_write"],
  offs: [9, "read"], arg: [10, "read_write"],
}, {
  n: 0, size: 0, k: 0, inner: 0, pad: -1, dim: 0, block: 0, stride: 0,
  x0: 1, x1: 1, x2: 1, x3: 1, x4: 1, x5: 1, i0: 1, i1: 1, i2: 1, i3: 1, i4: 1, i5: 1,
  mode: 0, bags: 0,
});

type IndexValues = Partial<Record<keyof typeof GATHER_PARAMS.fields, number>>;

/** One thread per element of `params.n`. */
function perElement(entry: string, params: IndexValues & { n: number }) {
  return { entry, params, groups: Device.grid(params.n) };
}

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

function checkIndex(x: Tensor, index: Tensor, op: string): void {
  x.sameDevice(index, op);
  if (index.dtype !== "i32") {
    throw new TypeError(`${op}: index must be an i32 tensor, got ${index.dtype} ${fmt(index.shape)}`);
  }
}

const pad6 = (s: Shape) => [...new Array<number>(MAX_DIMS - s.length).fill(1), ...s];

/** Gather params: both shapes padded to 6 dims, `dim` shifted with them. */
function gatherValues(x: Shape, index: Shape, dim: number, n: number): IndexValues & { n: number } {
  const [x0, x1, x2, x3, x4, x5] = pad6(x);
  const [i0, i1, i2, i3, i4, i5] = pad6(index);
  return { n, dim: dim + MAX_DIMS - x.length, x0, x1, x2, x3, x4, x5, i0, i1, i2, i3, i4, i5 };
}

/** Pairs sorted in one workgroup (shaders/gather.wgsl's LOCAL_SORT: 8 KiB of workgroup memory). */
const LOCAL_SORT = 1024;

/**
 * dx [outer, size, inner] of an index_select whose output was [outer, k, inner]: sort the
 * (index, position) pairs (bitonic: in one workgroup's memory when k ≤ LOCAL_SORT, else one
 * launch per pass), find each row's run, then sum each run in position order. Deterministic,
 * and O(k log² k + dx + dy) rather than the O(dx · k) of scanning every index for every
 * element of dx.
 */
function selectBackward(
  dy: Tensor,
  index: Tensor,
  dx: Tensor,
  size: number,
  k: number,
  inner: number,
  pad: number,
): void {
  const device = dy.device;
  let p2 = 1;
  while (p2 < k) p2 *= 2;
  const keys = Tensor.empty([p2], { device, dtype: "u32" }, "indexSelect.keys");
  const pos = Tensor.empty([p2], { device, dtype: "u32" }, "indexSelect.pos");
  const bounds = Tensor.empty([2 * size], { device, dtype: "u32" }, "indexSelect.bounds");
  if (size > 0) device.clear(bounds.buffer);
  const base = { size, k, inner, pad };
  launch(device, GATHER, {
    ...perElement("index_select_backward_keys", { ...base, n: p2 }),
    io: { idx: index, keys, pos },
  });
  if (p2 <= LOCAL_SORT) {
    launch(device, GATHER, { entry: "index_select_backward_sort_local", params: { ...base, n: p2 }, io: { keys, pos }, groups: [1] });
  } else {
    for (let block = 2; block <= p2; block *= 2) {
      for (let stride = block / 2; stride >= 1; stride /= 2) {
        launch(device, GATHER, {
          ...perElement("index_select_backward_sort", { ...base, n: p2 / 2, block, stride }),
          io: { keys, pos },
        });
      }
    }
  }
  launch(device, GATHER, { ...perElement("index_select_backward_bounds", { ...base, n: k }), io: { keys, bounds } });
  launch(device, GATHER, {
    ...perElement("index_select_backward", { ...base, n: dx.numel }),
    io: {
      dy,
      dx,
      pos,
      bounds,
    },
  });
  // Freed buffers are reused only after the next submit, so the launches above still see them.
  for (const t of [keys, pos, bounds]) t.dispose();
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

// ---- embedding_bag ---------------------------------------------------------------------------

/** Reductions of {@link embeddingBag} (PyTorch's `mode`). */
export type EmbeddingBagMode = "sum" | "mean" | "max";
const BAG_MODES: Record<EmbeddingBagMode, number> = { sum: 0, mean: 1, max: 2 };

/** Attributes of {@link embeddingBagOp}. */
export interface EmbeddingBagOptions {
  /** How a bag's rows combine. Default "mean". */
  mode?: EmbeddingBagMode;
  /** A row left out of every bag (and of mean's count), which gets no gradient; negative counts from V. */
  paddingIdx?: number;
}

function bagMode(mode: unknown): number {
  const m = BAG_MODES[(mode ?? "mean") as EmbeddingBagMode];
  if (m === undefined || typeof mode === "number") {
    throw new RangeError(`embeddingBag: mode must be "sum", "mean" or "max", got ${JSON.stringify(mode)}`);
  }
  return m;
}

/**
 * Bags of rows of `weight` [V, D] reduced by `mode` (inputs `[weight, index, offsets]`, both
 * i32 and 1-D: bag b holds index[offsets[b] .. offsets[b + 1]), the last bag runs to the
 * end). Output [B, D]. Out-of-range indices and row `paddingIdx` are left out; an empty bag
 * gives zeros in every mode (PyTorch's). The gradient of weight is dense and deterministic;
 * max sends it to the first maximum of each bag and column.
 */
export const embeddingBagOp: OpDef<EmbeddingBagOptions> = {
  name: "embeddingBag",
  forward([weight, index, offsets], attrs) {
    checkIndex(weight, index, "embeddingBag");
    checkIndex(weight, offsets, "embeddingBag offsets");
    if (weight.dtype !== "f32") throw new TypeError(`embeddingBag: weight must be f32, got ${weight.dtype} ${fmt(weight.shape)}`);
    if (index.shape.length !== 1 || offsets.shape.length !== 1) {
      throw new RangeError(`embeddingBag: index and offsets must be 1-D, got ${fmt(index.shape)} and ${fmt(offsets.shape)}`);
    }
    const mode = bagMode(attrs.mode);
    const { pad } = embeddingShape(weight.shape, index.shape, attrs.paddingIdx);
    recordIndexCheck(weight.device, index.buffer, index.shape, { ...embeddingRule(weight.shape[0]), op: "embeddingBag" });
    const [v, d] = weight.shape, bags = offsets.shape[0];
    const y = Tensor.empty([bags, d], { device: weight.device }, "embeddingBag");
    const arg = Tensor.empty([Math.max(bags * d, 1)], { device: weight.device, dtype: "i32" }, "embeddingBag.arg");
    const values = { n: bags * d, size: v, k: index.numel, inner: d, pad, mode, bags };
    if (bags * d > 0) {
      launch(weight.device, GATHER, { ...perElement("embedding_bag_forward", values), io: { x: weight, y, idx: index, offs: offsets, arg } });
    }
    return { output: y, saved: [index, offsets, arg] };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null, null, null];
    const [ws, is, os] = ctx.shapes;
    const [index, offsets, arg] = ctx.saved;
    const { pad } = embeddingShape(ws, is, ctx.attrs.paddingIdx);
    const k = is[0], d = ws[1];
    const spread = Tensor.empty([Math.max(k * d, 1)], { device: dy.device }, "embeddingBag.spread");
    const values = { n: k * d, size: ws[0], k, inner: d, pad, mode: bagMode(ctx.attrs.mode), bags: os[0] };
    if (k * d > 0) {
      launch(dy.device, GATHER, {
        ...perElement("embedding_bag_backward_spread", values),
        io: { idx: index, offs: offsets, arg, dy, dx: spread },
      });
    }
    const dw = Tensor.empty(ws, { device: dy.device }, "embeddingBag.backward");
    if (k === 0) dy.device.clear(dw.buffer);
    else selectBackward(spread, index, dw, ws[0], k, d, pad);
    spread.dispose();
    return [dw, null, null];
  },
};

/**
 * Index and offsets of an embedding bag call, as PyTorch's F.embedding_bag takes them: a 2-D
 * index [B, L] (bags of L, offsets none) or a 1-D index with offsets [B] (host values are
 * checked: offsets[0] = 0, ascending, at most the index length; indices against [0, V)).
 * @throws {RangeError} Naming the argument and the value expected.
 */
export function bagInputs(
  weight: Shape,
  index: Indices,
  offsets: Indices | undefined,
  device: Device,
): { index: Tensor; offsets: Tensor } {
  const rule = { ...embeddingRule(weight[0]), op: "embeddingBag" };
  const shape = index instanceof Tensor ? index.shape : [index.length];
  if (shape.length === 2) {
    if (offsets !== undefined) {
      throw new RangeError(`embeddingBag: offsets must be left out for a 2-D input ${fmt(shape)} (each row is a bag)`);
    }
    const [b, l] = shape;
    const offs = fromArray(Int32Array.from({ length: b }, (_, i) => i * l), [b], { device, dtype: "i32" });
    const flat = index instanceof Tensor ? index.reshape([b * l]) : index;
    return { index: toIndexTensor(flat, rule, device), offsets: offs };
  }
  if (shape.length !== 1) throw new RangeError(`embeddingBag: input must be 1-D (with offsets) or 2-D [B, L], got ${fmt(shape)}`);
  if (offsets === undefined) throw new RangeError(`embeddingBag: offsets are required for a 1-D input ${fmt(shape)}`);
  if (!(offsets instanceof Tensor)) {
    for (let b = 0; b < offsets.length; b++) {
      const o = offsets[b], prev = b === 0 ? 0 : offsets[b - 1];
      if (!Number.isInteger(o) || (b === 0 ? o !== 0 : o < prev) || o > shape[0]) {
        throw new RangeError(
          `embeddingBag: offsets must start at 0 and ascend up to the input length ${shape[0]}, got ${o} at position ${b}`,
        );
      }
    }
  }
  const offs = offsets instanceof Tensor ? offsets : fromArray(Int32Array.from(offsets), [offsets.length], { device, dtype: "i32" });
  return { index: toIndexTensor(index, rule, device), offsets: offs };
}

/**
 * Sums, means or maxima of bags of rows of `weight` [V, D], as torch.nn.functional.embedding_bag:
 * `[B, D]` for a 2-D index [B, L] or a 1-D index with `offsets` [B]. Empty bags give zeros.
 * @throws {TypeError} When an index is not i32. @throws {RangeError} For a bad mode, paddingIdx,
 * offsets or host index.
 */
export const embeddingBag = (
  weight: Tensor,
  index: Indices,
  offsets?: Indices,
  options: EmbeddingBagOptions = {},
): Tensor => {
  const r = bagInputs(weight.shape, index, offsets, weight.device);
  return embeddingBagOp.forward([weight, r.index, r.offsets], options).output;
};
