/**
 * Float64 reference of PyTorch's nn.TransformerDecoder (batch first), forward and every
 * gradient, built from the attention, layer-norm, linear and activation references: each
 * piece gives its output and a closure that takes the output's gradient back to its input's,
 * adding the parameters' gradients under PyTorch's state-dict names. Never imports src/.
 */
import { mhaRef, type SdpaRefOptions } from "./attention.ts";
import { linearRef } from "./matmul.ts";
import { layerNormRef } from "./norm.ts";
import { UNARY_REF } from "./unary.ts";

/** Sizes, layout and masks of {@link transformerDecoderRef} (a nonzero mask entry hides the key). */
export interface DecoderRefOptions {
  b: number;
  /** Target length. */
  t: number;
  /** Memory length. */
  s: number;
  e: number;
  h: number;
  numLayers: number;
  /** A final LayerNorm `norm` after the last layer. */
  finalNorm: boolean;
  normFirst: boolean;
  activation: "relu" | "gelu";
  eps: number;
  /** [t, t] */
  tgtMask?: ArrayLike<number>;
  tgtCausal?: boolean;
  /** [b, t] */
  tgtKeyPaddingMask?: ArrayLike<number>;
  /** [t, s] */
  memoryMask?: ArrayLike<number>;
  /** [b, s] */
  memoryKeyPaddingMask?: ArrayLike<number>;
}

type Back = (dy: Float64Array) => Float64Array;
type Fn = (x: Float64Array) => [Float64Array, Back];

const add = (a: ArrayLike<number>, b: ArrayLike<number>) => Float64Array.from(a, (v, i) => v + b[i]);
const chain = (fs: Fn[]): Fn => (x) => {
  const backs: Back[] = [];
  for (const f of fs) {
    const [y, back] = f(x);
    backs.push(back);
    x = y;
  }
  return [x, (dy) => backs.reduceRight((d, back) => back(d), dy)];
};

/**
 * nn.TransformerDecoder(batch_first=True) on tgt [b, t, e] and memory [b, s, e] with the
 * parameters `state` (PyTorch's names: `layers.{i}.self_attn.in_proj_weight`, ..., `norm.weight`):
 * the output [b, t, e] and, for the output gradient `dy`, the gradients of tgt, memory and every
 * parameter (same names).
 */
export function transformerDecoderRef(
  tgt: ArrayLike<number>,
  memory: ArrayLike<number>,
  state: Record<string, ArrayLike<number>>,
  o: DecoderRefOptions,
  dy: ArrayLike<number>,
): { y: Float64Array; dTgt: Float64Array; dMemory: Float64Array; grads: Record<string, Float64Array> } {
  const { b, t, s, e, h } = o, rows = b * t;
  const grads: Record<string, Float64Array> = {};
  const acc = (name: string, g: ArrayLike<number>) => {
    const sum = (grads[name] ??= new Float64Array(g.length));
    for (let i = 0; i < g.length; i++) sum[i] += g[i];
  };
  const dMemory = new Float64Array(b * s * e);
  const norm = (name: string): Fn => (x) => {
    const run = (d: ArrayLike<number>) => layerNormRef(x, rows, e, state[`${name}.weight`], state[`${name}.bias`], o.eps, d);
    return [run(new Float64Array(x.length)).y, (d) => {
      const g = run(d);
      acc(`${name}.weight`, g.dw);
      acc(`${name}.bias`, g.db);
      return g.dx;
    }];
  };
  const linear = (name: string, inF: number, outF: number): Fn => (x) => {
    const run = (d: ArrayLike<number>) => linearRef(x, [rows, inF], state[`${name}.weight`], [outF, inF], state[`${name}.bias`], d);
    return [run(new Float64Array(rows * outF)).y, (d) => {
      const g = run(d);
      acc(`${name}.weight`, g.dw);
      acc(`${name}.bias`, g.db);
      return g.dx;
    }];
  };
  const act: Fn = (x) => {
    const { f, df } = UNARY_REF[o.activation];
    return [x.map((v) => f(v, 0, 0)), (d) => d.map((g, i) => g * df(x[i], 0, 0))];
  };
  /** Attention from x over `kv` (x itself when undefined, then its three gradients are x's). */
  const attention = (name: string, kv: ArrayLike<number> | undefined, tk: number, masks: SdpaRefOptions): Fn => (x) => {
    const w = {
      inProjWeight: state[`${name}.in_proj_weight`],
      inProjBias: state[`${name}.in_proj_bias`],
      outProjWeight: state[`${name}.out_proj.weight`],
      outProjBias: state[`${name}.out_proj.bias`],
    };
    const run = (d: ArrayLike<number>) => mhaRef(x, kv ?? x, kv ?? x, { b, tq: t, tk, e, h }, w, masks, d);
    return [run(new Float64Array(rows * e)).out, (d) => {
      const g = run(d);
      acc(`${name}.in_proj_weight`, g.dInProjWeight);
      acc(`${name}.in_proj_bias`, g.dInProjBias);
      acc(`${name}.out_proj.weight`, g.dOutProjWeight);
      acc(`${name}.out_proj.bias`, g.dOutProjBias);
      if (kv) {
        for (let i = 0; i < dMemory.length; i++) dMemory[i] += g.dKey[i] + g.dValue[i];
        return g.dQuery;
      }
      return add(add(g.dQuery, g.dKey), g.dValue);
    }];
  };
  /** x + f(norm(x)) pre-norm, norm(x + f(x)) post-norm. */
  const residual = (f: Fn, n: Fn): Fn => (x) => {
    if (o.normFirst) {
      const [nx, nBack] = n(x);
      const [fx, fBack] = f(nx);
      return [add(x, fx), (d) => add(d, nBack(fBack(d)))];
    }
    const [fx, fBack] = f(x);
    const [y, nBack] = n(add(x, fx));
    return [y, (d) => {
      const dr = nBack(d);
      return add(dr, fBack(dr));
    }];
  };
  const ff = state["layers.0.linear1.bias"].length;
  const selfMasks = { attnMask: o.tgtMask, keyPaddingMask: o.tgtKeyPaddingMask, causal: o.tgtCausal };
  const memMasks = { attnMask: o.memoryMask, keyPaddingMask: o.memoryKeyPaddingMask };
  const layers = Array.from({ length: o.numLayers }, (_, i) => {
    const p = `layers.${i}.`;
    return chain([
      residual(attention(`${p}self_attn`, undefined, t, selfMasks), norm(`${p}norm1`)),
      residual(attention(`${p}multihead_attn`, memory, s, memMasks), norm(`${p}norm2`)),
      residual(chain([linear(`${p}linear1`, e, ff), act, linear(`${p}linear2`, ff, e)]), norm(`${p}norm3`)),
    ]);
  });
  const [y, back] = chain(o.finalNorm ? [...layers, norm("norm")] : layers)(Float64Array.from(tgt));
  const dTgt = back(Float64Array.from(dy));
  return { y, dTgt, dMemory, grads };
}

/** [d0, d1, e] to [d1, d0, e] (sequence first to batch first and back). */
export function swapLeadingDims(x: ArrayLike<number>, d0: number, d1: number, e: number): Float64Array {
  const y = new Float64Array(d0 * d1 * e);
  for (let i = 0; i < d0; i++) for (let j = 0; j < d1; j++) for (let c = 0; c < e; c++) y[(j * d0 + i) * e + c] = x[(i * d1 + j) * e + c];
  return y;
}
