import { Device, type Kernel, kernel, launch, type Layout, layout } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { broadcastStrides, fmt, inferShape, numel, sameShape, type Shape, stridesOf } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { zeros } from "../creation.ts";
import { sumTo } from "./reduce.ts";

// deno-fmt-ignore
/** Mirrors `struct Params` in shaders/shape.wgsl (one row per WGSL line). */
export const SHAPE_PARAMS: Layout<{
  n: "u32"; src_base: "u32"; dst_base: "u32"; d0: "u32"; d1: "u32"; d2: "u32"; d3: "u32"; d4: "u32";
  d5: "u32"; s0: "u32"; s1: "u32"; s2: "u32"; s3: "u32"; s4: "u32"; s5: "u32"; t0: "u32"; t1: "u32";
  t2: "u32"; t3: "u32"; t4: "u32"; t5: "u32";
}> = layout("shape", "Params", {
  n: "u32", src_base: "u32", dst_base: "u32",
  d0: "u32", d1: "u32", d2: "u32", d3: "u32", d4: "u32", d5: "u32",
  s0: "u32", s1: "u32", s2: "u32", s3: "u32", s4: "u32", s5: "u32",
  t0: "u32", t1: "u32", t2: "u32", t3: "u32", t4: "u32", t5: "u32",
});
/** Storage bindings of shaders/shape.wgsl (raw 32-bit words: any dtype). */
export const SHAPE: Kernel<typeof SHAPE_PARAMS, {
  src: [number, "read"]; dst: [number, "read_write"]; src4: [number, "read"]; dst4: [number, "read_write"];
}> = kernel(SHAPE_PARAMS, {
  src: [1, "read"],
  dst: [2, "read_write"],
  src4: [3, "read"],
  dst4: [4, "read_write"],
});

/** Dims one strided-copy launch can walk (the Params struct has six). */
const MAX_DIMS = 6;

// ---- shape rules (pure, run before any GPU work) ----------------------------------------

/** `dim` counted from the end when negative, for a tensor of `shape` (`extra` = 1 allows `ndim`, for inserts). */
export function dimOf(dim: number, shape: Shape, op: string, extra = 0): number {
  const n = shape.length + extra;
  const d = dim < 0 ? dim + n : dim;
  if (!Number.isInteger(dim) || d < 0 || d >= n) {
    throw new RangeError(`${op}: dim ${dim} is out of range for shape ${fmt(shape)} (expected ${-n}..${n - 1})`);
  }
  return d;
}

/** Output shape of `permute` and the normalized dims. */
export function permuteShape(
  shape: Shape,
  dims: readonly number[],
  op = "permute",
): { shape: number[]; dims: number[] } {
  const ds = dims.length === shape.length ? dims.map((d) => dimOf(d, shape, op)) : [];
  if (ds.length !== shape.length || new Set(ds).size !== ds.length) {
    throw new RangeError(`${op}: dims ${fmt(dims)} must name each of the ${shape.length} dims of ${fmt(shape)} once`);
  }
  return { shape: ds.map((d) => shape[d]), dims: ds };
}

/** The permutation that swaps `dim0` and `dim1` of `shape`. */
export function transposeDims(shape: Shape, dim0: number, dim1: number): number[] {
  const a = dimOf(dim0, shape, "transpose"), b = dimOf(dim1, shape, "transpose");
  const dims = [...shape.keys()];
  [dims[a], dims[b]] = [b, a];
  return dims;
}

/** `shape` without size-1 dims (all of them, or those among `dim`; others are kept, as PyTorch). */
export function squeezeShape(shape: Shape, dim?: number | readonly number[]): number[] {
  if (dim === undefined) return shape.filter((d) => d !== 1);
  const ds = (typeof dim === "number" ? [dim] : dim).map((d) => dimOf(d, shape, "squeeze"));
  return shape.filter((d, i) => !(d === 1 && ds.includes(i)));
}

/** `shape` with a size-1 dim inserted at `dim` (in -(ndim+1)..ndim). */
export function unsqueezeShape(shape: Shape, dim: number): number[] {
  const d = dimOf(dim, shape, "unsqueeze", 1);
  return [...shape.slice(0, d), 1, ...shape.slice(d)];
}

/** `shape` with dims `startDim..endDim` (inclusive) merged into one; a scalar becomes `[1]`. */
export function flattenShape(shape: Shape, startDim = 0, endDim = -1): number[] {
  if (shape.length === 0) return [1];
  const s = dimOf(startDim, shape, "flatten"), e = dimOf(endDim, shape, "flatten");
  if (s > e) throw new RangeError(`flatten: startDim ${startDim} comes after endDim ${endDim} in shape ${fmt(shape)}`);
  return [...shape.slice(0, s), numel(shape.slice(s, e + 1)), ...shape.slice(e + 1)];
}

/** Output shape of `narrow`, with the dim and start normalized (a negative start counts from the end). */
export function narrowShape(
  shape: Shape,
  dim: number,
  start: number,
  length: number,
): { shape: number[]; dim: number; start: number } {
  const d = dimOf(dim, shape, "narrow");
  const size = shape[d];
  const s = start < 0 ? start + size : start;
  if (!Number.isInteger(start) || s < 0 || s > size) {
    throw new RangeError(`narrow: start ${start} is out of range for dim ${dim} of size ${size} in ${fmt(shape)}`);
  }
  if (!Number.isInteger(length) || length < 0 || s + length > size) {
    throw new RangeError(
      `narrow: start ${start} + length ${length} exceeds dim ${dim} of size ${size} in ${fmt(shape)}`,
    );
  }
  return { shape: shape.map((n, i) => (i === d ? length : n)), dim: d, start: s };
}

/** Output shape of `cat` along `dim`: sizes must match except along it. */
export function catShape(shapes: readonly Shape[], dim: number): { shape: number[]; dim: number } {
  if (shapes.length === 0) throw new RangeError("cat: expected at least one tensor, got none");
  const first = shapes[0];
  const d = dimOf(dim, first, "cat");
  let along = 0;
  shapes.forEach((s, i) => {
    if (s.length !== first.length || s.some((n, k) => k !== d && n !== first[k])) {
      throw new RangeError(
        `cat: tensor ${i} has shape ${fmt(s)} but tensor 0 has ${fmt(first)}; sizes must match except along dim ${dim}`,
      );
    }
    along += s[d];
  });
  return { shape: first.map((n, k) => (k === d ? along : n)), dim: d };
}

/** Output shape of `stack` at `dim` (in -(ndim+1)..ndim): every shape must be equal. */
export function stackShape(shapes: readonly Shape[], dim: number): { shape: number[]; dim: number } {
  if (shapes.length === 0) throw new RangeError("stack: expected at least one tensor, got none");
  shapes.forEach((s, i) => {
    if (!sameShape(s, shapes[0])) {
      throw new RangeError(
        `stack: tensor ${i} has shape ${fmt(s)} but tensor 0 has ${fmt(shapes[0])}; all must be equal`,
      );
    }
  });
  const d = dimOf(dim, shapes[0], "stack", 1);
  return { shape: [...shapes[0].slice(0, d), shapes.length, ...shapes[0].slice(d)], dim: d };
}

/**
 * Target shape of `expand` (PyTorch semantics): new dims may lead; -1 keeps a size; a
 * size-1 dim may grow to any size, other dims must stay.
 */
export function expandShape(from: Shape, to: Shape): number[] {
  const lead = to.length - from.length;
  const bad = (why: string) => new RangeError(`expand: cannot expand ${fmt(from)} to ${fmt(to)}: ${why}`);
  if (lead < 0) throw bad(`target has fewer dims (${to.length}) than the tensor (${from.length})`);
  return to.map((t, i) => {
    if (!Number.isInteger(t) || t < -1) throw bad(`size ${t} at dim ${i} is not a size or -1`);
    if (i < lead) {
      if (t === -1) throw bad(`-1 is not allowed in the new leading dim ${i}`);
      return t;
    }
    const f = from[i - lead];
    if (t === -1) return f;
    if (f !== t && f !== 1) throw bad(`dim ${i} has size ${f}, which is not 1`);
    return t;
  });
}

// ---- the strided copy -------------------------------------------------------------------

/** One launch of `shaders/shape.wgsl`: dims that are contiguous in both src and dst merged. */
export interface CopyPlan {
  /** Elements copied. */
  n: number;
  /** Element offset of the first value read in src. */
  srcBase: number;
  /** Element offset of the first value written in dst. */
  dstBase: number;
  /** Merged iteration shape (no size-1 dims). */
  dims: number[];
  /** Source strides (elements) per merged dim. */
  src: number[];
  /** Destination strides (elements) per merged dim. */
  dst: number[];
}

/**
 * Plan a copy of `shape` elements reading `src[srcBase + Σ i·srcStrides]` into
 * `dst[dstBase + Σ i·dstStrides]`, merging adjacent dims the kernel can walk as one.
 * @throws {RangeError} When more than six dims remain after merging.
 */
export function copyPlan(
  shape: Shape,
  srcStrides: readonly number[],
  dstStrides: readonly number[],
  srcBase = 0,
  dstBase = 0,
  op = "copy",
): CopyPlan {
  const dims: number[] = [], src: number[] = [], dst: number[] = [];
  for (let i = 0; i < shape.length; i++) {
    if (shape[i] === 1) continue;
    const k = dims.length - 1;
    if (k >= 0 && src[k] === srcStrides[i] * shape[i] && dst[k] === dstStrides[i] * shape[i]) {
      dims[k] *= shape[i];
      src[k] = srcStrides[i];
      dst[k] = dstStrides[i];
    } else {
      dims.push(shape[i]);
      src.push(srcStrides[i]);
      dst.push(dstStrides[i]);
    }
  }
  if (dims.length > MAX_DIMS) {
    throw new RangeError(
      `${op}: copying ${fmt(shape)} needs ${dims.length} strided dims, at most ${MAX_DIMS} are supported`,
    );
  }
  return { n: numel(shape), srcBase, dstBase, dims, src, dst };
}

/**
 * The same copy in units of 4 words (shaders/shape.wgsl's *_vec4 entries), when the
 * innermost dim is contiguous on both sides with a length that is a multiple of 4 and every
 * other stride and both bases are multiples of 4; else undefined.
 * @example
 * ```ts
 * import { copyPlan, vec4Plan } from "./shape.ts";
 * // [B, T, H, D] → [B, H, T, D] with D = 8: rows of 2 vec4s.
 * const v = vec4Plan(copyPlan([2, 4, 3, 8], [96, 8, 32, 1], [96, 24, 8, 1]));
 * if (v?.n !== 48 || v.dims.at(-1) !== 2) throw new Error("vec4 plan");
 * ```
 */
export function vec4Plan(plan: CopyPlan): CopyPlan | undefined {
  const last = plan.dims.length - 1;
  if (last < 0 || plan.src[last] !== 1 || plan.dst[last] !== 1 || plan.dims[last] % 4 !== 0) return undefined;
  const four = (x: number) => x % 4 === 0;
  if (!four(plan.srcBase) || !four(plan.dstBase)) return undefined;
  if (!plan.src.slice(0, last).every(four) || !plan.dst.slice(0, last).every(four)) return undefined;
  const q = (x: number) => x / 4;
  return {
    n: plan.n / 4,
    srcBase: q(plan.srcBase),
    dstBase: q(plan.dstBase),
    dims: [...plan.dims.slice(0, last), plan.dims[last] / 4],
    src: [...plan.src.slice(0, last).map(q), 1],
    dst: [...plan.dst.slice(0, last).map(q), 1],
  };
}

/** Record a planned copy from `x` into `y`: a buffer copy when contiguous on both sides, else a kernel. */
function copy(entry: string, plan: CopyPlan, x: Tensor, y: Tensor): void {
  if (plan.n === 0) return;
  const device = x.device;
  if (plan.dims.length === 0 || (plan.dims.length === 1 && plan.src[0] === 1 && plan.dst[0] === 1)) {
    device.copy(x.buffer, x.byteOffset + plan.srcBase * 4, y.buffer, y.byteOffset + plan.dstBase * 4, plan.n * 4);
    return;
  }
  const v4 = vec4Plan(plan);
  const p = v4 ?? plan;
  const pad = MAX_DIMS - p.dims.length;
  const values: Record<string, number> = { n: p.n, src_base: p.srcBase, dst_base: p.dstBase };
  for (let i = 0; i < MAX_DIMS; i++) {
    values[`d${i}`] = i < pad ? 1 : p.dims[i - pad];
    values[`s${i}`] = i < pad ? 0 : p.src[i - pad];
    values[`t${i}`] = i < pad ? 0 : p.dst[i - pad];
  }
  const io = v4 ? { src4: x, dst4: y } : { src: x, dst: y };
  launch(device, SHAPE, { entry: v4 ? `${entry}_vec4` : entry, params: values, io, groups: Device.grid(p.n) });
}

const like = (x: Tensor, shape: Shape, origin: string) =>
  Tensor.empty(shape, { device: x.device, dtype: x.dtype }, origin);

// ---- views: reshape, squeeze, unsqueeze, flatten ------------------------------------------

/** A view op: the output shares the input's memory; the gradient is reshaped back. */
function defineView<A>(name: string, rule: (shape: Shape, attrs: A) => number[]): OpDef<A> {
  return {
    name,
    forward: ([x], attrs) => ({ output: x.reshape(rule(x.shape, attrs)) }),
    backward: (dy, ctx) => [ctx.needs[0] ? dy.reshape(ctx.shapes[0]) : null],
  };
}

/** View with another shape (one -1 inferred). */
export const reshapeOp: OpDef<{ shape: Shape }> = defineView<{ shape: Shape }>(
  "reshape",
  (s, a) => inferShape(a.shape, numel(s)),
);
/** View without size-1 dims (all, or those among `dim`). */
export const squeezeOp: OpDef<{ dim?: number | readonly number[] }> = defineView<{ dim?: number | readonly number[] }>(
  "squeeze",
  (s, a) => squeezeShape(s, a.dim),
);
/** View with a size-1 dim inserted at `dim`. */
export const unsqueezeOp: OpDef<{ dim: number }> = defineView<{ dim: number }>(
  "unsqueeze",
  (s, a) => unsqueezeShape(s, a.dim),
);
/** View with dims `startDim..endDim` merged. */
export const flattenOp: OpDef<{ startDim: number; endDim: number }> = defineView<{ startDim: number; endDim: number }>(
  "flatten",
  (s, a) => flattenShape(s, a.startDim, a.endDim),
);

// ---- copies: permute, transpose, expand, narrow, cat, stack --------------------------------

/** Reorder dims: output dim k is input dim `dims[k]`. The gradient is the inverse permutation. */
export const permuteOp: OpDef<{ dims: readonly number[] }> = {
  name: "permute",
  forward([x], { dims }) {
    const r = permuteShape(x.shape, dims);
    const y = like(x, r.shape, "permute");
    const xs = stridesOf(x.shape);
    copy("permute_forward", copyPlan(r.shape, r.dims.map((d) => xs[d]), stridesOf(r.shape), 0, 0, "permute"), x, y);
    return { output: y };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null];
    const { dims } = permuteShape(ctx.shapes[0], ctx.attrs.dims);
    const inverse = new Array<number>(dims.length);
    dims.forEach((d, k) => (inverse[d] = k));
    return [permuteOp.forward([dy], { dims: inverse }).output];
  },
};

/** Swap two dims (a permute; its own inverse). */
export const transposeOp: OpDef<{ dim0: number; dim1: number }> = {
  name: "transpose",
  forward: ([x], a) => permuteOp.forward([x], { dims: transposeDims(x.shape, a.dim0, a.dim1) }),
  backward: (dy, ctx) => [ctx.needs[0] ? transposeOp.forward([dy], ctx.attrs).output : null],
};

/** Materialized broadcast to `shape` (PyTorch `expand`); the gradient sums back. */
export const expandOp: OpDef<{ shape: Shape }> = {
  name: "expand",
  forward([x], { shape }) {
    const to = expandShape(x.shape, shape);
    const y = like(x, to, "expand");
    copy("expand_forward", copyPlan(to, broadcastStrides(x.shape, to), stridesOf(to), 0, 0, "expand"), x, y);
    return { output: y };
  },
  backward: (dy, ctx) => [ctx.needs[0] ? sumTo(dy, ctx.shapes[0]) : null],
};

/** Attributes of {@link narrowOp}. */
export interface NarrowAttrs {
  /** The dim to slice (negative counts from the end). */
  dim: number;
  /** First index kept along `dim` (negative counts from the end), as `torch.narrow`'s `start`. */
  start: number;
  /** Entries kept along `dim`, from `start`; start + length must not pass the dim's size. */
  length: number;
}

/** Copy of `length` entries from `start` along `dim`; the gradient lands in a zero tensor of x's shape. */
export const narrowOp: OpDef<NarrowAttrs> = {
  name: "narrow",
  forward([x], a) {
    const r = narrowShape(x.shape, a.dim, a.start, a.length);
    const y = like(x, r.shape, "narrow");
    const xs = stridesOf(x.shape);
    copy("narrow_forward", copyPlan(r.shape, xs, stridesOf(r.shape), r.start * xs[r.dim], 0, "narrow"), x, y);
    return { output: y };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null];
    const shape = ctx.shapes[0];
    const r = narrowShape(shape, ctx.attrs.dim, ctx.attrs.start, ctx.attrs.length);
    const dx = zeros(shape, { device: dy.device });
    const xs = stridesOf(shape);
    copy("narrow_backward", copyPlan(dy.shape, stridesOf(dy.shape), xs, 0, r.start * xs[r.dim], "narrow"), dy, dx);
    return [dx];
  },
};

function checkAll(inputs: readonly Tensor[], op: string): void {
  inputs.forEach((t, i) => {
    inputs[0].sameDevice(t, op);
    if (t.dtype !== inputs[0].dtype) {
      throw new TypeError(`${op}: tensor ${i} is ${t.dtype} but tensor 0 is ${inputs[0].dtype}; dtypes must match`);
    }
  });
}

/** Join any number of tensors along `dim`; the gradient of each input is its slice of dy. */
export const catOp: OpDef<{ dim: number }> = {
  name: "cat",
  forward(inputs, { dim }) {
    const r = catShape(inputs.map((t) => t.shape), dim);
    checkAll(inputs, "cat");
    const y = like(inputs[0], r.shape, "cat");
    const ys = stridesOf(r.shape);
    let at = 0;
    for (const x of inputs) {
      copy("cat_forward", copyPlan(x.shape, stridesOf(x.shape), ys, 0, at * ys[r.dim], "cat"), x, y);
      at += x.shape[r.dim];
    }
    return { output: y };
  },
  backward(dy, ctx) {
    const d = catShape(ctx.shapes, ctx.attrs.dim).dim;
    let at = 0;
    return ctx.shapes.map((s, i) => {
      const start = at;
      at += s[d];
      return ctx.needs[i] ? narrowOp.forward([dy], { dim: d, start, length: s[d] }).output : null;
    });
  },
};

/** Join equal-shaped tensors along a new dim `dim`; the gradient of each input is its slice of dy. */
export const stackOp: OpDef<{ dim: number }> = {
  name: "stack",
  forward(inputs, { dim }) {
    const r = stackShape(inputs.map((t) => t.shape), dim);
    checkAll(inputs, "stack");
    const views = inputs.map((t) => t.reshape(unsqueezeShape(t.shape, r.dim)));
    const y = catOp.forward(views, { dim: r.dim }).output;
    for (const v of views) v.dispose(); // drops the view's reference only; the inputs keep their memory
    return { output: y };
  },
  backward(dy, ctx) {
    const d = stackShape(ctx.shapes, ctx.attrs.dim).dim;
    return ctx.shapes.map((s, i) =>
      ctx.needs[i] ? narrowOp.forward([dy], { dim: d, start: i, length: 1 }).output.reshape(s) : null
    );
  },
};

// ---- tensor-level functions ---------------------------------------------------------------

/** View of `x` with another shape (one -1 inferred); same as `x.reshape(shape)`. */
export const reshape = (x: Tensor, shape: Shape): Tensor => reshapeOp.forward([x], { shape }).output;
/** View of `x` without size-1 dims: all of them, or those among `dim` (others stay, as PyTorch). */
export const squeeze = (x: Tensor, dim?: number | readonly number[]): Tensor => squeezeOp.forward([x], { dim }).output;
/** View of `x` with a size-1 dim inserted at `dim` (-(ndim+1)..ndim). */
export const unsqueeze = (x: Tensor, dim: number): Tensor => unsqueezeOp.forward([x], { dim }).output;
/** View of `x` with dims `startDim..endDim` (inclusive, default all) merged into one. */
export const flatten = (x: Tensor, startDim = 0, endDim = -1): Tensor =>
  flattenOp.forward([x], { startDim, endDim }).output;
/** Copy of `x` with dims reordered: output dim k is input dim `dims[k]`. Up to 6 strided dims. */
export const permute = (x: Tensor, dims: readonly number[]): Tensor => permuteOp.forward([x], { dims }).output;
/** Copy of `x` with `dim0` and `dim1` swapped. */
export const transpose = (x: Tensor, dim0: number, dim1: number): Tensor =>
  transposeOp.forward([x], { dim0, dim1 }).output;
/** `x` broadcast to `shape` and materialized (-1 keeps a size; new dims may lead), as PyTorch `expand`. */
export const expand = (x: Tensor, shape: Shape): Tensor => expandOp.forward([x], { shape }).output;
/** Copy of entries `start..start+length` of `x` along `dim` (a negative start counts from the end). */
export const narrow = (x: Tensor, dim: number, start: number, length: number): Tensor =>
  narrowOp.forward([x], { dim, start, length }).output;
/** Tensors joined along `dim` (sizes equal except along it; same dtype and device). */
export const cat = (tensors: readonly Tensor[], dim = 0): Tensor => catOp.forward(tensors, { dim }).output;
/** Equal-shaped tensors joined along a new dim `dim`. */
export const stack = (tensors: readonly Tensor[], dim = 0): Tensor => stackOp.forward(tensors, { dim }).output;
