import { Device, type Kernel, kernel, launch, type Layout, layout, tuning } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { fmt, normDim, type Shape, stridesOf } from "../shape.ts";
import { Tensor } from "../tensor.ts";

/** Mirrors `struct Params` in shaders/reduce.wgsl. */
export const REDUCE_PARAMS: Layout<{
  n_out: "u32"; len: "u32"; scale: "f32"; correction: "f32"; k0: "u32"; k1: "u32"; k2: "u32"; k3: "u32";
  ks0: "u32"; ks1: "u32"; ks2: "u32"; ks3: "u32"; r0: "u32"; r1: "u32"; r2: "u32"; r3: "u32"; rs0: "u32";
  rs1: "u32"; rs2: "u32"; rs3: "u32"; chunks: "u32";
}> = layout("reduce", "Params", {
  n_out: "u32",
  len: "u32",
  scale: "f32",
  correction: "f32",
  k0: "u32",
  k1: "u32",
  k2: "u32",
  k3: "u32",
  ks0: "u32",
  ks1: "u32",
  ks2: "u32",
  ks3: "u32",
  r0: "u32",
  r1: "u32",
  r2: "u32",
  r3: "u32",
  rs0: "u32",
  rs1: "u32",
  rs2: "u32",
  rs3: "u32",
  chunks: "u32",
});
/** Storage bindings of shaders/reduce.wgsl. */
export const REDUCE: Kernel<typeof REDUCE_PARAMS, {
  x: [number, "read"]; y: [number, "read_write"]; idx: [number, "read_write"]; dy: [number, "read"];
  dx: [number, "read_write"]; mean: [number, "read"]; sel: [number, "read"];
}> = kernel(REDUCE_PARAMS, {
  x: [1, "read"],
  y: [2, "read_write"],
  idx: [3, "read_write"],
  dy: [4, "read"],
  dx: [5, "read_write"],
  mean: [6, "read"],
  sel: [7, "read"],
});

/**
 * A reduction longer than this with few outputs is split over several workgroups per
 * output, then the partial sums are added in a second pass (elements).
 */
const SPLIT_LEN = 16384;
/** Elements each partial sum covers when split. */
const SPLIT_SPAN = 4096;
/**
 * Sums at most this long, with at least {@link SERIAL_MIN_OUT} outputs, run one thread per
 * output (`sum_serial`) instead of one workgroup per output.
 */
const SERIAL_LEN = 256;
const SERIAL_MIN_OUT = 64;
/** Threads per workgroup of `sum_serial`. */
const SERIAL_WG = 64;

/** Which dims to reduce: one dim, several, or all (undefined). */
export type Dims = number | readonly number[] | undefined;

/** How a reduction walks its input: merged kept and reduced dim groups (pure; unit-tested). */
export interface ReducePlan {
  /** Output shape with reduced dims kept as 1. */
  keptShape: number[];
  /** Output shape without reduced dims. */
  squeezedShape: number[];
  /** Reduced dims, normalized and sorted. */
  dims: number[];
  /** Output elements: the product of the kept sizes. */
  nOut: number;
  /** Elements reduced into each output: the product of the reduced sizes. */
  len: number;
  /** Kept dim groups, outermost first, padded at the front to 4 (size 1, stride 0): sizes and element strides. */
  kept: { sizes: number[]; strides: number[] };
  /** Reduced dim groups, outermost first, padded at the front to 4 (size 1, stride 0): sizes and element strides. */
  reduced: { sizes: number[]; strides: number[] };
}

/** Normalize `dims` for a tensor of `ndim` dims (all dims when undefined); throws on repeats. */
export function normDims(dims: Dims, ndim: number, op: string): number[] {
  const list = dims === undefined ? [...Array(ndim).keys()] : typeof dims === "number" ? [dims] : [...dims];
  const out = list.map((d) => normDim(d, ndim, op)).sort((a, b) => a - b);
  if (new Set(out).size !== out.length) throw new RangeError(`${op}: dims ${JSON.stringify(dims)} repeat a dim`);
  return out;
}

/** Plan a reduction of a contiguous `shape` over `dims`: at most 4 kept and 4 reduced groups. */
export function reducePlan(shape: Shape, dims: Dims, op = "reduce"): ReducePlan {
  const ds = normDims(dims, shape.length, op);
  const strides = stridesOf(shape);
  const groups: { red: boolean; size: number; stride: number }[] = [];
  for (let i = 0; i < shape.length; i++) {
    if (shape[i] === 1) continue;
    const red = ds.includes(i);
    const last = groups[groups.length - 1];
    if (last && last.red === red) {
      last.size *= shape[i];
      last.stride = strides[i];
    } else groups.push({ red, size: shape[i], stride: strides[i] });
  }
  const pick = (red: boolean) => {
    const g = groups.filter((x) => x.red === red);
    if (g.length > 4) {
      throw new RangeError(`${op}: cannot reduce dims ${JSON.stringify(ds)} of ${fmt(shape)} (too fragmented)`);
    }
    while (g.length < 4) g.unshift({ red, size: 1, stride: 0 });
    return { sizes: g.map((x) => x.size), strides: g.map((x) => x.stride) };
  };
  const kept = pick(false);
  const reduced = pick(true);
  const keptShape = shape.map((d, i) => (ds.includes(i) ? 1 : d));
  const squeezedShape = shape.filter((_, i) => !ds.includes(i));
  const nOut = kept.sizes.reduce((a, b) => a * b, 1);
  const len = reduced.sizes.reduce((a, b) => a * b, 1);
  return { keptShape, squeezedShape, dims: ds, nOut, len, kept, reduced };
}

/** Entry, params, grid and workgroup size of one reduction launch over `plan` (chunks > 1: partial sums). */
function planned(entry: string, plan: ReducePlan, scale = 1, correction = 0, chunks = 1) {
  const serial = entry === "sum_serial";
  const [k0, k1, k2, k3] = plan.kept.sizes;
  const [ks0, ks1, ks2, ks3] = plan.kept.strides;
  const [r0, r1, r2, r3] = plan.reduced.sizes;
  const [rs0, rs1, rs2, rs3] = plan.reduced.strides;
  return {
    entry,
    overrides: { WG: serial ? SERIAL_WG : tuning.reduceWg(plan.len) },
    params: {
      n_out: plan.nOut,
      len: plan.len,
      scale,
      correction,
      k0,
      k1,
      k2,
      k3,
      ks0,
      ks1,
      ks2,
      ks3,
      r0,
      r1,
      r2,
      r3,
      rs0,
      rs1,
      rs2,
      rs3,
      chunks,
    },
    groups: serial ? Device.grid(plan.nOut, SERIAL_WG) : Device.grid(plan.nOut * chunks, 1),
  };
}

/** Attributes of sum / mean / var / max / min. */
export interface ReduceAttrs {
  /** The dims to reduce (negative counts from the end); undefined: all (PyTorch's `dim`). */
  dims?: Dims;
  /** Keep each reduced dim as size 1 (PyTorch's `keepdim`); default false. */
  keepdim?: boolean;
  /** var only: subtract from the count (1 = unbiased). */
  correction?: number;
  /** sum only: write the result into this tensor of the output's size (a leaf's gradient home). */
  out?: Tensor;
}

function outShape(plan: ReducePlan, attrs: ReduceAttrs): number[] {
  return attrs.keepdim ? plan.keptShape : plan.squeezedShape;
}

function f32(x: Tensor, op: string): void {
  if (x.dtype !== "f32") throw new TypeError(`${op}: expects an f32 tensor, got ${x.dtype}`);
}

function defineSum(name: "sum" | "mean"): OpDef<ReduceAttrs> {
  const scaleOf = (plan: ReducePlan) => (name === "mean" ? 1 / Math.max(plan.len, 1) : 1);
  return {
    name,
    forward([x], attrs) {
      f32(x, name);
      const plan = reducePlan(x.shape, attrs.dims, name);
      const shape = outShape(plan, attrs);
      const y = attrs.out && attrs.out.numel === shape.reduce((a, b) => a * b, 1) ? attrs.out : Tensor.empty(shape, { device: x.device }, name);
      if (plan.len === 0) x.device.clear(y.buffer, y.byteOffset, y.byteLength);
      else if (plan.len > SPLIT_LEN && plan.nOut < 64) {
        // Two passes: partial sums over slices of each output's range, then their sum.
        const chunks = Math.ceil(plan.len / SPLIT_SPAN);
        const part = Tensor.empty([plan.nOut, chunks], { device: x.device }, `${name}.partial`);
        launch(x.device, REDUCE, { ...planned("sum_forward", plan, scaleOf(plan), 0, chunks), io: { x, y: part } });
        launch(x.device, REDUCE, { ...planned("sum_forward", reducePlan(part.shape, 1, name)), io: { x: part, y } });
      } else {
        const serial = plan.len <= SERIAL_LEN && plan.nOut >= SERIAL_MIN_OUT;
        launch(x.device, REDUCE, {
          ...planned(serial ? "sum_serial" : "sum_forward", plan, scaleOf(plan)),
          io: { x, y },
        });
      }
      return { output: y };
    },
    backward(dy, ctx) {
      if (!ctx.needs[0]) return [null];
      const plan = reducePlan(ctx.shapes[0], ctx.attrs.dims, name);
      const dx = Tensor.empty(ctx.shapes[0], { device: dy.device }, `${name}.backward`);
      launch(dy.device, REDUCE, { ...planned("sum_backward", plan, scaleOf(plan)), io: { dy, dx } });
      return [dx];
    },
  };
}

/** Sum over dims (all when omitted). */
export const sumOp: OpDef<ReduceAttrs> = defineSum("sum");
/** Mean over dims (all when omitted). */
export const meanOp: OpDef<ReduceAttrs> = defineSum("mean");

/** Variance over dims with `correction` (default 1, unbiased, as `torch.var`). */
export const varOp: OpDef<ReduceAttrs> = {
  name: "var",
  forward([x], attrs) {
    f32(x, "var");
    const plan = reducePlan(x.shape, attrs.dims, "var");
    const m = meanOp.forward([x], { dims: attrs.dims, keepdim: false }).output;
    const y = Tensor.empty(outShape(plan, attrs), { device: x.device }, "var");
    launch(x.device, REDUCE, { ...planned("var_forward", plan, 1, attrs.correction ?? 1), io: { x, y, mean: m } });
    return { output: y, saved: [x, m] };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null];
    const [x, m] = ctx.saved;
    const plan = reducePlan(x.shape, ctx.attrs.dims, "var");
    const dx = Tensor.empty(x.shape, { device: dy.device }, "var.backward");
    launch(dy.device, REDUCE, {
      ...planned("var_backward", plan, 1, ctx.attrs.correction ?? 1),
      io: { x, dy, dx, mean: m },
    });
    return [dx];
  },
};

/** Max (or min) and its index along dims; the gradient goes to the selected element. */
function defineExtreme(name: "max" | "min"): OpDef<ReduceAttrs> {
  const scale = name === "max" ? 1 : -1;
  return {
    name,
    forward([x], attrs) {
      f32(x, name);
      const plan = reducePlan(x.shape, attrs.dims, name);
      if (plan.len === 0) throw new RangeError(`${name}: cannot reduce an empty dimension of ${fmt(x.shape)}`);
      const shape = outShape(plan, attrs);
      const y = Tensor.empty(shape, { device: x.device }, name);
      const idx = Tensor.empty(shape, { device: x.device, dtype: "i32" }, `arg${name}`);
      launch(x.device, REDUCE, { ...planned("max_forward", plan, scale), io: { x, y, idx } });
      return { output: y, saved: [idx] };
    },
    backward(dy, ctx) {
      if (!ctx.needs[0]) return [null];
      const plan = reducePlan(ctx.shapes[0], ctx.attrs.dims, name);
      const dx = Tensor.empty(ctx.shapes[0], { device: dy.device }, `${name}.backward`);
      launch(dy.device, REDUCE, { ...planned("max_backward", plan), io: { dy, dx, sel: ctx.saved[0] } });
      return [dx];
    },
  };
}

/** Max over dims. */
export const maxOp: OpDef<ReduceAttrs> = defineExtreme("max");
/** Min over dims. */
export const minOp: OpDef<ReduceAttrs> = defineExtreme("min");

/** Sum over `dims` (all when omitted). */
export const sum = (x: Tensor, dims?: Dims, keepdim = false): Tensor => sumOp.forward([x], { dims, keepdim }).output;
/** Mean over `dims` (all when omitted). */
export const mean = (x: Tensor, dims?: Dims, keepdim = false): Tensor => meanOp.forward([x], { dims, keepdim }).output;
/** Variance over `dims` with `correction` (1 = unbiased, PyTorch's default). */
export const variance = (x: Tensor, dims?: Dims, keepdim = false, correction = 1): Tensor =>
  varOp.forward([x], { dims, keepdim, correction }).output;
/** Max over `dims`. */
export const max = (x: Tensor, dims?: Dims, keepdim = false): Tensor => maxOp.forward([x], { dims, keepdim }).output;
/** Min over `dims`. */
export const min = (x: Tensor, dims?: Dims, keepdim = false): Tensor => minOp.forward([x], { dims, keepdim }).output;
/** Index (i32) of the first max along `dim` (over all elements, flattened, when omitted). */
export function argmax(x: Tensor, dim?: number, keepdim = false): Tensor {
  const flat = dim === undefined ? x.reshape([x.numel]) : x;
  const res = maxOp.forward([flat], { dims: dim ?? 0, keepdim });
  return res.saved![0];
}
/** Index (i32) of the first min along `dim`. */
export function argmin(x: Tensor, dim?: number, keepdim = false): Tensor {
  const flat = dim === undefined ? x.reshape([x.numel]) : x;
  return minOp.forward([flat], { dims: dim ?? 0, keepdim }).saved![0];
}

/**
 * Sum a gradient of a broadcast result down to `shape` (the input's shape before
 * broadcasting): over the leading extra dims and the dims where `shape` has 1.
 */
export function sumTo(g: Tensor, shape: Shape): Tensor {
  if (g.shape.length === shape.length && g.shape.every((d, i) => d === shape[i])) return g;
  const lead = g.ndim - shape.length;
  const dims: number[] = [];
  for (let i = 0; i < g.ndim; i++) {
    if (i < lead || (shape[i - lead] === 1 && g.shape[i] !== 1)) dims.push(i);
  }
  const s = dims.length ? sum(g, dims, false) : g;
  return s.reshape(shape);
}
