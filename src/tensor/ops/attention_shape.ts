/** Shape and option rules of scaled-dot-product attention (pure; unit-testable without an adapter). */
import { broadcastStrides, fmt, type Shape } from "../shape.ts";

/** Shapes of an attention call (pure; unit-testable): q [B,H,Tq,D], k and v [B,H,Tk,D]. */
export function attentionDims(
  q: Shape,
  k: Shape,
  v: Shape,
  attnMask?: Shape,
  keyPaddingMask?: Shape,
): { b: number; h: number; tq: number; tk: number; d: number } {
  const op = "scaledDotProductAttention";
  if (q.length !== 4 || k.length !== 4 || v.length !== 4) {
    throw new TypeError(`${op}: q, k, v must be [B, H, T, D], got q=${fmt(q)} k=${fmt(k)} v=${fmt(v)}`);
  }
  const [b, h, tq, d] = q;
  const tk = k[2];
  if (k[0] !== b || k[1] !== h || k[3] !== d || v[0] !== b || v[1] !== h || v[2] !== tk || v[3] !== d) {
    throw new RangeError(
      `${op}: need q [B,H,Tq,D], k and v [B,H,Tk,D] with the same B, H, D and Tk, got q=${fmt(q)} k=${fmt(k)} v=${
        fmt(v)
      }`,
    );
  }
  if (attnMask && (attnMask.length !== 2 || attnMask[0] !== tq || attnMask[1] !== tk)) {
    throw new RangeError(`${op}: attnMask must be [Tq, Tk] = [${tq}, ${tk}], got ${fmt(attnMask)}`);
  }
  if (keyPaddingMask && (keyPaddingMask.length !== 2 || keyPaddingMask[0] !== b || keyPaddingMask[1] !== tk)) {
    throw new RangeError(`${op}: keyPaddingMask must be [B, Tk] = [${b}, ${tk}], got ${fmt(keyPaddingMask)}`);
  }
  return { b, h, tq, tk, d };
}

/** @throws {RangeError} For dropoutP outside [0, 1) or a seed that is not a u32. */
export function checkDropout(p: number, seed: number): void {
  const op = "scaledDotProductAttention";
  if (typeof p !== "number" || !(p >= 0 && p < 1)) throw new RangeError(`${op}: dropoutP must be in [0, 1), got ${p}`);
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new RangeError(`${op}: seed must be an integer in [0, 2^32), got ${seed}`);
  }
}

/**
 * The strides (in elements) that read an additive bias of shape `bias` as [B, H, Tq, Tk]:
 * 0 on the dims it broadcasts over. Shapes fit as in broadcasting, right-aligned: [Tq, Tk],
 * [H, Tq, Tk], [B, H, Tq, Tk], any dim of them 1 (e.g. ALiBi's [1, H, Tq, Tk], a per-key [B, 1, 1, Tk]).
 * @throws {RangeError} For a shape that does not broadcast to [B, H, Tq, Tk] (both shown).
 */
export function attentionBiasStrides(
  bias: Shape,
  dims: { b: number; h: number; tq: number; tk: number },
): { bias_b: number; bias_h: number; bias_i: number; bias_j: number } {
  const full = [dims.b, dims.h, dims.tq, dims.tk];
  const lead = 4 - bias.length;
  if (lead < 0 || bias.some((n, i) => n !== 1 && n !== full[lead + i])) {
    throw new RangeError(
      `scaledDotProductAttention: attnBias must broadcast to [B, H, Tq, Tk] = ${fmt(full)}, got ${fmt(bias)}`,
    );
  }
  const [bias_b, bias_h, bias_i, bias_j] = broadcastStrides(bias, full);
  return { bias_b, bias_h, bias_i, bias_j };
}
