/**
 * `embeddingBag` (PyTorch's F.embedding_bag): bags of rows of a table reduced by sum, mean or
 * max, forward and backward. It runs the index ops' kernel family (shaders/gather.wgsl) and,
 * for the table's gradient, the same deterministic scatter-add as `embedding`
 * (gather_launch.ts's `selectBackward`).
 */
import { type Device, launch } from "../../gpu/mod.ts";
import { fromArray } from "../creation.ts";
import { recordIndexCheck } from "../index_check.ts";
import type { OpDef } from "../op.ts";
import { fmt, type Shape } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { embeddingRule, embeddingShape, type Indices, toIndexTensor } from "./gather.ts";
import { GATHER } from "./gather_kernel.ts";
import { checkIndex, perElement, selectBackward } from "./gather_launch.ts";

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
