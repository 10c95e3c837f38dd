import { Device, type Kernel, kernel, launch, type Layout, layout, tuning } from "../../gpu/mod.ts";
import { fromArray, nextSeed } from "../creation.ts";
import { matmul } from "./matmul.ts";
import type { OpDef } from "../op.ts";
import { fmt } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { attentionBiasStrides, attentionDims, checkDropout } from "./attention_shape.ts";
import { mul } from "./binary.ts";
import { sumTo } from "./reduce.ts";

export { attentionBiasStrides, attentionDims } from "./attention_shape.ts";

/** Mirrors `struct Params` in shaders/attention.wgsl. */
export const ATTENTION_PARAMS: Layout<{
  rows: "u32"; heads: "u32"; tq: "u32"; tk: "u32"; d: "u32"; scale: "f32"; causal: "u32"; has_mask: "u32";
  has_kpm: "u32"; seed: "u32"; p_drop: "f32"; keep_scale: "f32"; nq: "u32"; has_bias: "u32"; bias_b: "u32";
  bias_h: "u32"; bias_i: "u32"; bias_j: "u32";
}> = layout("attention", "Params", {
  rows: "u32",
  heads: "u32",
  tq: "u32",
  tk: "u32",
  d: "u32",
  scale: "f32",
  causal: "u32",
  has_mask: "u32",
  has_kpm: "u32",
  seed: "u32",
  p_drop: "f32",
  keep_scale: "f32",
  nq: "u32",
  has_bias: "u32",
  bias_b: "u32",
  bias_h: "u32",
  bias_i: "u32",
  bias_j: "u32",
});
/** Storage bindings of shaders/attention.wgsl. */
export const ATTENTION: Kernel<typeof ATTENTION_PARAMS, {
  q: [number, "read"]; k: [number, "read"]; v: [number, "read"]; o: [number, "read_write"];
  lse: [number, "read_write"]; attn_mask: [number, "read"]; kpm: [number, "read"]; dout: [number, "read"];
  bias: [number, "read"]; dq: [number, "read_write"]; dk: [number, "read_write"];
  dv: [number, "read_write"]; sp: [number, "read_write"]; pz: [number, "read_write"];
  ds_out: [number, "read_write"];
}> = kernel(ATTENTION_PARAMS, {
  q: [1, "read"],
  k: [2, "read"],
  v: [3, "read"],
  o: [4, "read_write"],
  lse: [5, "read_write"],
  attn_mask: [6, "read"],
  kpm: [7, "read"],
  dout: [8, "read"],
  bias: [9, "read"],
  dq: [10, "read_write"],
  dk: [11, "read_write"],
  dv: [12, "read_write"],
  sp: [13, "read_write"],
  pz: [14, "read_write"],
  ds_out: [15, "read_write"],
});

/**
 * Attributes of {@link attentionOp}; inputs are [q, k, v, attnMask?, keyPaddingMask?,
 * attnBias?] (the flags say which follow, in that order).
 */
export interface AttentionAttrs {
  /** Hide key j from query i when j > i (top-left aligned, as torch's `is_causal`). */
  causal: boolean;
  /** Score multiplier; default 1/√D. */
  scale?: number;
  /** An attention mask [Tq, Tk] follows v among the inputs (nonzero = hidden). */
  attnMask: boolean;
  /** A key-padding mask [B, Tk] follows (nonzero = padding, hidden from every query). */
  keyPaddingMask: boolean;
  /**
   * An additive f32 bias follows, broadcast to [B, H, Tq, Tk] ({@link attentionBiasStrides});
   * -inf hides a key. Its gradient is dS summed over the broadcast dims.
   */
  attnBias?: boolean;
  /** Dropout probability on the attention weights, in [0, 1); 0 = none. */
  dropoutP: number;
  /** Dropout mask seed (u32); the backward regenerates the same mask from it. */
  seed: number;
  /** Which implementation runs; default {@link attentionKernel}'s choice for the device. */
  kernel?: AttentionKernel;
  /**
   * inputs[0] is q, k and v stacked, [3, B, H, T, D] (self-attention's one projection), in
   * place of three inputs; its gradient is one tensor of that shape.
   */
  packed?: boolean;
}

/**
 * The two implementations: `fused` (shaders/attention.wgsl's tiled kernels, no [Tq, Tk]
 * matrix) and `scores` (S = Q·Kᵀ and the products with it through the matmul, only the row
 * softmax and its backward in attention kernels; saves P, B·H·Tq·Tk floats).
 */
export type AttentionKernel = "fused" | "scores";

/**
 * The implementation a device runs by default: `scores` where the matmul's register kernel
 * runs (CPU adapters, on which the fused kernels reach a tenth of its rate: bench/README.md
 * "gpt-nano step"), Tk is a multiple of 4 (its row kernels read four keys at a time) and P
 * stays under {@link tuning.ATTENTION_SCORES_MAX_BYTES}; else `fused`.
 */
export function attentionKernel(device: Device, b: number, h: number, tq: number, tk: number): AttentionKernel {
  const fits = tk % 4 === 0 && b * h * tq * tk * 4 <= tuning.ATTENTION_SCORES_MAX_BYTES;
  return device.matmul.bk === 0 && fits ? "scores" : "fused";
}

const zeroWords = new WeakMap<Device, Tensor[]>();

/**
 * A kept one-word zero tensor of the device: bound where a mask (slot 0) or the scores
 * path's dropped probabilities (slot 1) are absent; the kernels never touch it then. Two
 * slots: a dispatch may not bind one buffer both read-only and writable.
 */
function noMask(device: Device, slot: 0 | 1 = 0): Tensor {
  const words = zeroWords.get(device) ?? [];
  zeroWords.set(device, words);
  let t = words[slot];
  if (!t || t.released) {
    t = fromArray(new Int32Array(1), [1], { device }).keep();
    words[slot] = t;
  }
  return t;
}

/**
 * One workgroup per block of ATTENTION_WG query (or key) rows of one head: `rows` is
 * B·H·len, `len` the row count of a head (Tq, or Tk for the dK/dV kernel).
 */
function rowLaunch(entry: string, params: Record<string, number>, len: number) {
  const wg = tuning.ATTENTION_WG;
  const blocks = (params.rows / len) * Math.ceil(len / wg);
  return { entry, params, groups: Device.grid(blocks, 1), overrides: { WG: wg } };
}

/**
 * Scaled-dot-product attention (shaders/attention.wgsl), in one of two implementations
 * ({@link AttentionKernel}, the device's default from {@link attentionKernel}):
 * - fused: scores, max-subtracted softmax and the weighted sum of values in one kernel, a
 *   workgroup per block of query rows sharing each staged block of K and V (FlashAttention's
 *   tiling), never writing the [Tq, Tk] weights. Saves q, k, v, the masks, the bias and the
 *   per-row logsumexp [B, H, Tq]; the backward recomputes the weights from them in two
 *   kernels (dQ, then dK and dV), and a third writes dS [B, H, Tq, Tk] when the bias needs a
 *   gradient (summed to the bias's shape).
 * - scores: S = Q·Kᵀ by the matmul, the masked, biased softmax in place, O = P·V; saves P
 *   (and P·z with dropout). The backward is three or four products and one row kernel.
 * Both hide the same keys, add the same bias and draw the same dropout multipliers.
 */
export const attentionOp: OpDef<AttentionAttrs> = {
  name: "scaledDotProductAttention",
  forward(inputs, attrs) {
    const op = "scaledDotProductAttention";
    const packed = !!attrs.packed, n = packed ? 1 : 3;
    const hasBias = !!attrs.attnBias;
    if (inputs.length !== n + Number(attrs.attnMask) + Number(attrs.keyPaddingMask) + Number(hasBias)) {
      throw new RangeError(
        `${op}: got ${inputs.length} inputs, attrs say packed ${packed}, attnMask ${attrs.attnMask}, keyPaddingMask ${attrs.keyPaddingMask}, attnBias ${hasBias}`,
      );
    }
    const [q, k, v] = packed ? unpack(inputs[0], op) : inputs;
    const mask = attrs.attnMask ? inputs[n] : undefined;
    const kpm = attrs.keyPaddingMask ? inputs[n + Number(attrs.attnMask)] : undefined;
    const bias = hasBias ? inputs[inputs.length - 1] : undefined;
    for (const [name, t] of [["q", q], ["k", k], ["v", v], ["attnBias", bias]] as const) {
      if (t && t.dtype !== "f32") throw new TypeError(`${op}: ${name} must be f32, got ${t.dtype}`);
      if (t) q.sameDevice(t, op);
    }
    for (const [name, t] of [["attnMask", mask], ["keyPaddingMask", kpm]] as const) {
      if (t && t.dtype !== "f32" && t.dtype !== "i32") {
        throw new TypeError(`${op}: ${name} must be f32 or i32, got ${t.dtype}`);
      }
      if (t) q.sameDevice(t, op);
    }
    const { b, h, tq, tk, d } = attentionDims(q.shape, k.shape, v.shape, mask?.shape, kpm?.shape);
    const strides = bias && attentionBiasStrides(bias.shape, { b, h, tq, tk });
    checkDropout(attrs.dropoutP, attrs.seed);
    const scale = attrs.scale ?? 1 / Math.sqrt(d);
    if (!Number.isFinite(scale)) throw new RangeError(`${op}: scale must be finite, got ${scale}`);
    const dev = q.device;
    const m = mask ?? noMask(dev), pad = kpm ?? noMask(dev), bb = bias ?? noMask(dev);
    const dims = { rows: b * h * tq, nq: b * h * tq, heads: h, tq, tk, d, scale };
    const values = paramsOf(attrs, dims, !!mask, !!kpm, strides);
    if ((attrs.kernel ?? attentionKernel(dev, b, h, tq, tk)) === "scores") {
      if (tk % 4 !== 0) throw new RangeError(`${op}: kernel "scores" needs Tk a multiple of 4, got Tk = ${tk}`);
      const s = matmul(q, k, { transB: true });
      const pz = attrs.dropoutP > 0 ? Tensor.empty(s.shape, { device: dev }, `${op}.dropped`) : undefined;
      launch(dev, ATTENTION, {
        ...segLaunch("attention_probs", values, tk),
        io: { sp: s, pz: pz ?? noMask(dev, 1), attn_mask: m, kpm: pad, bias: bb },
      });
      return { output: matmul(pz ?? s, v), saved: [q, k, v, s, m, pad, bb, ...(pz ? [pz] : [])] };
    }
    const o = Tensor.empty(q.shape, { device: dev }, op);
    // The rows' logsumexp, then room for the backward's delta (shaders/attention.wgsl).
    const lse = Tensor.empty([2, b, h, tq], { device: dev }, `${op}.lse`);
    launch(dev, ATTENTION, {
      ...rowLaunch("attention_forward", values, tq),
      io: { q, k, v, o, lse, attn_mask: m, kpm: pad, bias: bb },
    });
    return { output: o, saved: [q, k, v, lse, m, pad, bb] };
  },
  backward(dout, ctx) {
    // stat: the rows' logsumexp and delta [2, B, H, Tq] (fused) or P [B, H, Tq, Tk] (scores,
    // then P·z last when dropout is on).
    const [q, k, v, stat, m, pad, bias, dropped] = ctx.saved;
    const a = ctx.attrs;
    const grads: (Tensor | null)[] = ctx.shapes.map(() => null);
    const needs = a.packed ? [0, 0, 0].map(() => ctx.needs[0]) : ctx.needs.slice(0, 3);
    const needBias = !!a.attnBias && ctx.needs[ctx.needs.length - 1];
    if (!needs.some((x) => x) && !needBias) return grads;
    const saved = { q, k, v, stat, m, pad, bias, dropped };
    const g = attentionGrads(dout, saved, a, ctx.output, needs, needBias);
    if (needBias) grads[grads.length - 1] = g[3];
    if (!a.packed) {
      for (let i = 0; i < 3; i++) grads[i] = g[i];
      return grads;
    }
    if (!needs[0]) return grads;
    const dqkv = Tensor.empty([3, ...q.shape], { device: dout.device }, "scaledDotProductAttention.backward");
    g.slice(0, 3).forEach((x, i) => {
      dout.device.copy(x!.buffer, x!.byteOffset, dqkv.buffer, dqkv.byteOffset + i * x!.byteLength, x!.byteLength);
      x!.dispose();
    });
    grads[0] = dqkv;
    return grads;
  },
};

/**
 * q, k and v of a packed [3, B, H, T, D] input: views where the device allows a binding at
 * their byte offset, else copies (buffer copies, not kernels).
 */
function unpack(qkv: Tensor, op: string): Tensor[] {
  if (qkv.shape.length !== 5 || qkv.shape[0] !== 3) {
    throw new RangeError(`${op}: packed q, k, v must be [3, B, H, T, D], got ${fmt(qkv.shape)}`);
  }
  const shape = qkv.shape.slice(1), n = qkv.numel / 3, dev = qkv.device;
  const align = dev.limits.minStorageBufferOffsetAlignment;
  return ["q", "k", "v"].map((name, i) => {
    if ((qkv.byteOffset + i * n * 4) % align === 0) return Tensor.view(qkv, i * n, shape, `${op}.${name}`);
    const t = Tensor.empty(shape, { device: dev, dtype: qkv.dtype }, `${op}.${name}`);
    dev.copy(qkv.buffer, qkv.byteOffset + i * n * 4, t.buffer, t.byteOffset, n * 4);
    return t;
  });
}

/** What the forward saved (see its return). */
interface Saved {
  q: Tensor;
  k: Tensor;
  v: Tensor;
  stat: Tensor;
  m: Tensor;
  pad: Tensor;
  bias: Tensor;
  dropped?: Tensor;
}

/** dQ, dK, dV and the bias gradient (null where not needed) from what the forward saved. */
function attentionGrads(
  dout: Tensor,
  { q, k, v, stat, m, pad, bias, dropped }: Saved,
  a: AttentionAttrs,
  output: Tensor,
  needs: boolean[],
  needBias: boolean,
): (Tensor | null)[] {
  const grads: (Tensor | null)[] = [null, null, null, null];
  const [b, h, tq, d] = q.shape;
  const tk = k.shape[2];
  const dev = dout.device;
  const scale = a.scale ?? 1 / Math.sqrt(d);
  const base = { heads: h, tq, tk, d, scale, nq: b * h * tq };
  if ((a.kernel ?? attentionKernel(dev, b, h, tq, tk)) === "scores") {
    const dpz = matmul(dout, v, { transB: true });
    if (needs[2]) grads[2] = matmul(dropped ?? stat, dout, { transA: true });
    // dS without the scale when the bias takes it (dBias = dS summed); dQ, dK scaled after.
    const values = paramsOf(a, { ...base, rows: b * h * tq, scale: needBias ? 1 : scale }, false, false);
    launch(dev, ATTENTION, { ...segLaunch("attention_probs_backward", values, tk), io: { sp: stat, pz: dpz } });
    const scaled = (x: Tensor) => {
      if (!needBias) return x;
      const y = mul(x, scale);
      x.dispose();
      return y;
    };
    if (needs[0]) grads[0] = scaled(matmul(dpz, k));
    if (needs[1]) grads[1] = scaled(matmul(dpz, q, { transA: true }));
    if (needBias) grads[3] = sumTo(dpz, bias.shape);
    if (grads[3] !== dpz) dpz.dispose();
    return grads;
  }
  const dq = Tensor.empty(q.shape, { device: dev }, "scaledDotProductAttention.backward");
  const io = { q, k, v, lse: stat, attn_mask: m, kpm: pad, bias, dout };
  const strides = a.attnBias ? attentionBiasStrides(bias.shape, { b, h, tq, tk }) : undefined;
  const rowsQ = paramsOf(a, { ...base, rows: b * h * tq }, a.attnMask, a.keyPaddingMask, strides);
  // dQ first: it also writes delta, which the dK/dV and dS kernels read.
  launch(dev, ATTENTION, { ...rowLaunch("attention_backward_dq", rowsQ, tq), io: { ...io, o: output, dq } });
  if (needs[1] || needs[2]) {
    const dk = Tensor.empty(k.shape, { device: dev }, "scaledDotProductAttention.backward");
    const dv = Tensor.empty(v.shape, { device: dev }, "scaledDotProductAttention.backward");
    const rowsK = { ...rowsQ, rows: b * h * tk };
    launch(dev, ATTENTION, { ...rowLaunch("attention_backward_dkv", rowsK, tk), io: { ...io, dk, dv } });
    if (needs[1]) grads[1] = dk;
    else dk.dispose();
    if (needs[2]) grads[2] = dv;
    else dv.dispose();
  }
  if (needBias) {
    const ds = Tensor.empty([b, h, tq, tk], { device: dev }, "scaledDotProductAttention.dS");
    launch(dev, ATTENTION, { ...rowLaunch("attention_backward_dbias", rowsQ, tq), io: { ...io, ds_out: ds } });
    grads[3] = sumTo(ds, bias.shape);
    if (grads[3] !== ds) ds.dispose();
  }
  if (needs[0]) grads[0] = dq;
  else dq.dispose();
  return grads;
}

/** One segment of threads per row of Tk (4 keys a thread), several rows per workgroup ({@link tuning.segmentBlocking}). */
function segLaunch(entry: string, params: Record<string, number>, tk: number) {
  const { WG, SEG, perGroup } = tuning.segmentBlocking(tk / 4);
  return { entry, params, groups: Device.grid(params.rows, perGroup), overrides: { WG, SEG } };
}

function paramsOf(
  attrs: AttentionAttrs,
  dims: { rows: number; nq: number; heads: number; tq: number; tk: number; d: number; scale: number },
  hasMask: boolean,
  hasKpm: boolean,
  bias?: { bias_b: number; bias_h: number; bias_i: number; bias_j: number },
): Record<string, number> {
  return {
    ...dims,
    causal: attrs.causal ? 1 : 0,
    has_mask: hasMask ? 1 : 0,
    has_kpm: hasKpm ? 1 : 0,
    seed: attrs.seed,
    p_drop: attrs.dropoutP,
    keep_scale: 1 / (1 - attrs.dropoutP),
    has_bias: bias ? 1 : 0,
    bias_b: bias?.bias_b ?? 0,
    bias_h: bias?.bias_h ?? 0,
    bias_i: bias?.bias_i ?? 0,
    bias_j: bias?.bias_j ?? 0,
  };
}

/** Options of {@link scaledDotProductAttention}. */
export interface AttentionOptions {
  /** Mask [Tq, Tk], f32 or i32: a nonzero entry hides key j from query i (PyTorch's boolean attn_mask). */
  attnMask?: Tensor;
  /** Mask [B, Tk], f32 or i32: a nonzero entry marks key j of batch b as padding (PyTorch's key_padding_mask). */
  keyPaddingMask?: Tensor;
  /**
   * f32 added to the scores (PyTorch's float attn_mask: ALiBi, relative positions), broadcast
   * to [B, H, Tq, Tk] without being materialized ({@link attentionBiasStrides}): [Tq, Tk],
   * [B, H, Tq, Tk], dims of 1 such as [1, H, Tq, Tk] or [B, 1, 1, Tk]. A -inf entry hides the
   * key as a mask does; the masks and causal hide theirs as well.
   */
  attnBias?: Tensor;
  /** Hide future keys: j > i (default false). */
  causal?: boolean;
  /** Dropout probability on the attention weights, in [0, 1) (default 0). */
  dropoutP?: number;
  /** Dropout mask seed; default the next seed of the global stream when dropout is on. */
  seed?: number;
  /** Score multiplier (default 1/√D). */
  scale?: number;
  /** Which implementation runs (default: {@link attentionKernel}'s choice for the device). */
  kernel?: AttentionKernel;
}

/**
 * Scaled dot-product attention on [B, H, T, D] tensors, as
 * `torch.nn.functional.scaled_dot_product_attention` with a boolean mask and/or a float one
 * (`attnBias`): softmax(q·kᵀ·scale + attnBias, hidden keys removed)·v, in one fused tiled
 * kernel. A query row whose keys are all hidden (masks, causal, -inf biases) gives 0
 * (PyTorch gives NaN).
 * @throws {TypeError} For non-4-D q, k, v, non-f32 values or bias, or a mask that is not f32/i32.
 * @throws {RangeError} For mismatched shapes (all shown), dropoutP outside [0, 1) or a bad seed.
 * @example
 * ```ts
 * import { Device } from "../../gpu/mod.ts";
 * import { randn } from "../creation.ts";
 * import { scaledDotProductAttention } from "./attention.ts";
 * await Device.request();
 * const q = randn([1, 2, 5, 4]), k = randn([1, 2, 5, 4]), v = randn([1, 2, 5, 4]);
 * const o = scaledDotProductAttention(q, k, v, { causal: true }); // [1, 2, 5, 4]
 * console.log(o.shape);
 * ```
 */
export function scaledDotProductAttention(q: Tensor, k: Tensor, v: Tensor, options: AttentionOptions = {}): Tensor {
  const { inputs, attrs } = attentionCall(q, k, v, options);
  return attentionOp.forward(inputs, attrs).output;
}

/** Inputs and attrs of {@link attentionOp} for a call (shared by the Variable form). */
export function attentionCall<T>(q: T, k: T, v: T, options: CallOptions<T>): { inputs: T[]; attrs: AttentionAttrs } {
  return call([q, k, v], false, options);
}

/**
 * Inputs and attrs of {@link attentionOp} for q, k and v stacked in one [3, B, H, T, D] input
 * (self-attention's one projection): its gradient is one tensor, no accumulation of three.
 */
export function packedAttentionCall<T>(qkv: T, options: CallOptions<T>): { inputs: T[]; attrs: AttentionAttrs } {
  return call([qkv], true, options);
}

type CallOptions<T> = Omit<AttentionOptions, "attnMask" | "keyPaddingMask" | "attnBias"> & {
  attnMask?: T;
  keyPaddingMask?: T;
  attnBias?: T;
};

function call<T>(qkv: T[], packed: boolean, options: CallOptions<T>): { inputs: T[]; attrs: AttentionAttrs } {
  const dropoutP = options.dropoutP ?? 0;
  const inputs = [...qkv];
  if (options.attnMask) inputs.push(options.attnMask);
  if (options.keyPaddingMask) inputs.push(options.keyPaddingMask);
  if (options.attnBias) inputs.push(options.attnBias);
  return {
    inputs,
    attrs: {
      causal: options.causal ?? false,
      scale: options.scale,
      attnMask: !!options.attnMask,
      keyPaddingMask: !!options.keyPaddingMask,
      attnBias: !!options.attnBias,
      dropoutP,
      // Only attention that draws a mask advances the global stream (as dropout()).
      seed: options.seed ?? (dropoutP > 0 ? nextSeed() : 0),
      kernel: options.kernel,
      packed,
    },
  };
}
