/**
 * Attention for Variables: the functional scaled-dot-product attention (the fused kernel of
 * src/tensor/ops/attention.ts on the tape) and PyTorch's nn.MultiheadAttention.
 */
import { apply, Parameter, Variable, where } from "../autograd/mod.ts";
import { Device } from "../gpu/mod.ts";
import * as T from "../tensor/mod.ts";
import type { Tensor } from "../tensor/mod.ts";
import { fmt } from "../tensor/mod.ts";
import { dropout, matmul, softmax } from "./functional.ts";
import { xavierUniform, zeros } from "./init.ts";
import { Linear } from "./linear.ts";
import { Module } from "./module.ts";

/** Masks and flags of an attention call; a mask hides a key where it is nonzero (f32 or i32). */
export interface AttentionCallOptions {
  /** [Tq, Tk]: nonzero hides key j from query i (PyTorch's boolean attn_mask). */
  attnMask?: Tensor | Variable;
  /**
   * Added to the scores before the softmax (PyTorch's float attn_mask: ALiBi, relative
   * positions), f32, broadcast to [B, H, Tq, Tk] without being materialized: [Tq, Tk],
   * [B, H, Tq, Tk], dims of 1 such as [1, H, Tq, Tk] or [B, 1, 1, Tk] (MultiheadAttention
   * also takes PyTorch's [B·H, Tq, Tk]). Runs in the fused kernel with the masks; a Variable
   * that requires grad gets its gradient (dS summed over the broadcast dims, one more
   * kernel and a B·H·Tq·Tk buffer in the backward). A -inf entry hides its key as a mask
   * does: a row whose keys are all hidden gives zeros (PyTorch gives NaN), here and in
   * {@link attentionWeights}.
   */
  attnBias?: Tensor | Variable;
  /** [B, Tk]: nonzero marks key j of batch b as padding (PyTorch's key_padding_mask, True = ignore). */
  keyPaddingMask?: Tensor | Variable;
  /** Hide key j from query i when j > i (top-left aligned, as torch's is_causal). */
  causal?: boolean;
}

const asVar = (x: Tensor | Variable): Variable => (x instanceof Variable ? x : new Variable(x));

/**
 * Scaled dot-product attention of q [B, H, Tq, D], k and v [B, H, Tk, D] on the tape, as
 * `torch.nn.functional.scaled_dot_product_attention` with a boolean mask or a float one
 * (`attnBias`), plus a key-padding mask: one fused kernel, gradients for q, k, v and a
 * Variable attnBias. A query row whose keys are all hidden gives 0 (PyTorch gives NaN).
 * @param options.dropoutP Dropout on the attention weights in [0, 1) (default 0); pass 0 in eval.
 * @throws {TypeError} For non-4-D inputs, masks that are not f32/i32 or a bias that is not f32.
 * @throws {RangeError} For mismatched shapes (all named) or dropoutP outside [0, 1).
 * @example
 * ```ts
 * import { Device } from "../gpu/mod.ts";
 * import { randn } from "../tensor/mod.ts";
 * import { Variable } from "../autograd/mod.ts";
 * import { scaledDotProductAttention } from "./attention.ts";
 * await Device.request();
 * const q = new Variable(randn([2, 4, 16, 8]), true);
 * const y = scaledDotProductAttention(q, q, q, { causal: true });
 * y.sum().backward();
 * ```
 */
export function scaledDotProductAttention(
  q: Variable,
  k: Variable,
  v: Variable,
  options: AttentionCallOptions & { dropoutP?: number; scale?: number; seed?: number } = {},
): Variable {
  const { inputs, attrs } = T.attentionCall(q, k, v, maskVars(options));
  return apply(T.attentionOp, inputs, attrs);
}

/**
 * Scaled dot-product attention composed from its steps, as PyTorch's math path, returning
 * the weights too: S = q·kᵀ·scale + attnBias, hidden keys (masks, causal, -inf biases) left
 * out, P = softmax(S) (a row with no visible key gives zeros, as the fused kernel), dropout on
 * P in training, output P·v. `weights` is P after dropout, [B, H, Tq, Tk], as PyTorch returns
 * it. Every step is an op with a gradient (q, k, v and a Variable attnBias). Keeps a
 * B·H·Tq·Tk matrix: for the weights and float biases, not for speed.
 * @throws {RangeError} For inputs that are not [B, H, T, D] alike, or a mask or bias shape that does not fit (named).
 */
export function attentionWeights(
  q: Variable,
  k: Variable,
  v: Variable,
  options: AttentionCallOptions & { dropoutP?: number; scale?: number; seed?: number } = {},
): { output: Variable; weights: Variable } {
  if (q.ndim !== 4 || k.ndim !== 4 || v.ndim !== 4) {
    throw new RangeError(`attention: q, k and v must be [B, H, T, D], got ${fmt(q.shape)}, ${fmt(k.shape)}, ${fmt(v.shape)}`);
  }
  const [b, h, tq, d] = q.shape, tk = k.shape[2];
  if (k.shape[0] !== b || k.shape[1] !== h || k.shape[3] !== d || v.shape[0] !== b || v.shape[1] !== h || v.shape[2] !== tk) {
    throw new RangeError(`attention: k [B, H, Tk, D] and v [B, H, Tk, Dv] must fit q ${fmt(q.shape)}, got k ${fmt(k.shape)}, v ${fmt(v.shape)}`);
  }
  const device = q.data.device;
  let s = matmul(q, k, { transB: true }).mul(options.scale ?? 1 / Math.sqrt(d));
  const bias = options.attnBias && asVar(options.attnBias);
  if (bias) {
    const fits = bias.ndim <= 4 && bias.shape.every((n, i) => n === 1 || n === [b, h, tq, tk][4 - bias.ndim + i]);
    if (!fits) throw new RangeError(`attention: attnBias must broadcast to [B, H, Tq, Tk] = ${fmt([b, h, tq, tk])}, got ${fmt(bias.shape)}`);
    s = s.add(bias);
  }
  // Hidden keys as one 0/1 tensor broadcast to [B, H, Tq, Tk]: masks and causal summed, > 0 hides.
  const hides: Tensor[] = [];
  if (options.attnMask) {
    const m = asVar(options.attnMask).data;
    if (m.shape.length !== 2 || m.shape[0] !== tq || m.shape[1] !== tk) throw new RangeError(`attention: attnMask must be [Tq, Tk] = [${tq}, ${tk}], got ${fmt(m.shape)}`);
    hides.push(T.ne(T.cast(m, "f32"), 0));
  }
  if (options.keyPaddingMask) {
    const m = asVar(options.keyPaddingMask).data;
    if (m.shape.length !== 2 || m.shape[0] !== b || m.shape[1] !== tk) throw new RangeError(`attention: keyPaddingMask must be [B, Tk] = [${b}, ${tk}], got ${fmt(m.shape)}`);
    hides.push(T.reshape(T.ne(T.cast(m, "f32"), 0), [b, 1, 1, tk]));
  }
  if (bias) hides.push(T.eq(bias.data, -Infinity));
  if (options.causal) {
    hides.push(T.fromArray(Float32Array.from({ length: tq * tk }, (_, i) => (i % tk > Math.floor(i / tk) ? 1 : 0)), [tq, tk], { device }));
  }
  let p: Variable;
  if (hides.length) {
    const hidden = T.gt(hides.reduce((a, m) => T.add(a, m)), 0);
    // A finite fill, not -inf: a row with every key hidden then stays finite through the
    // softmax and its backward, and the second where gives it zeros (and no gradient).
    p = where(hidden, 0, softmax(where(hidden, -1e30, s), -1));
  } else {
    p = softmax(s, -1);
  }
  const dropoutP = options.dropoutP ?? 0;
  if (!(dropoutP >= 0 && dropoutP < 1)) throw new RangeError(`attention: dropoutP must be in [0, 1), got ${dropoutP}`);
  if (dropoutP > 0) p = dropout(p, dropoutP, true, options.seed);
  return { output: matmul(p, v), weights: p };
}

/** The call's options with its masks and bias as Variables. */
function maskVars<O extends AttentionCallOptions>(
  options: O,
): Omit<O, "attnMask" | "keyPaddingMask" | "attnBias"> & {
  attnMask?: Variable;
  keyPaddingMask?: Variable;
  attnBias?: Variable;
} {
  return {
    ...options,
    attnMask: options.attnMask && asVar(options.attnMask),
    keyPaddingMask: options.keyPaddingMask && asVar(options.keyPaddingMask),
    attnBias: options.attnBias && asVar(options.attnBias),
  };
}

/** Options of {@link MultiheadAttention}. */
export interface MultiheadAttentionOptions {
  /** Dropout on the attention weights in training (default 0). */
  dropout?: number;
  /** Biases on the input and output projections (default true). */
  bias?: boolean;
  /** Inputs and output are [B, T, E] when true, [T, B, E] when false (PyTorch's default, false). */
  batchFirst?: boolean;
  /** Device for the parameters; default `Device.default`. */
  device?: Device;
  /** Seed of the initialisation; default the global stream. */
  seed?: number;
}

/**
 * Multi-head attention with PyTorch's parameter layout, so its state dicts load:
 * `in_proj_weight` [3E, E] (rows: query, key, value projections), `in_proj_bias` [3E],
 * `out_proj.weight` [E, E], `out_proj.bias` [E]; init as PyTorch (Xavier-uniform input
 * projection, zero biases, Linear's default for out_proj.weight). Heads split E into
 * H slices of D = E / H; attention runs in the fused kernel, float masks (`attnBias`) included.
 *
 * `forward(query, key = query, value = key, { attnMask, keyPaddingMask, causal, attnBias })`
 * returns the attention output only (PyTorch's `need_weights=False`: the weights are never
 * formed);
 * {@link forwardWithWeights} is `need_weights=True`. Unsupported PyTorch options: kdim/vdim ≠
 * E, add_bias_kv, add_zero_attn, 3-D boolean masks (a 3-D float mask is an `attnBias`).
 * @throws {RangeError} From the constructor when embedDim is not divisible by numHeads or
 *   dropout is outside [0, 1); from forward for inputs whose last dim is not embedDim.
 * @example
 * ```ts
 * import { Device } from "../gpu/mod.ts";
 * import { randn } from "../tensor/mod.ts";
 * import { Variable } from "../autograd/mod.ts";
 * import { MultiheadAttention } from "./attention.ts";
 * await Device.request();
 * const mha = new MultiheadAttention(16, 4, { batchFirst: true });
 * const x = new Variable(randn([2, 10, 16]));
 * const y = mha.forward(x, x, x, { causal: true }); // [2, 10, 16]
 * console.log(y.shape);
 * ```
 */
export class MultiheadAttention extends Module {
  /** [3·embedDim, embedDim]: the query, key and value projections stacked (`in_proj_weight`), Xavier-uniform. */
  readonly inProjWeight: Parameter;
  /** [3·embedDim] (`in_proj_bias`), zeros; absent with `bias: false`. */
  readonly inProjBias?: Parameter;
  /** The output projection Linear(E, E) (`out_proj`): Linear's default weight init, zero bias. */
  readonly outProj: Linear;
  /** Width D of one head, embedDim / numHeads. */
  readonly headDim: number;
  /** Dropout probability on the attention weights in training (`options.dropout`, default 0). */
  readonly dropout: number;
  /** Inputs and output are [B, T, E] when true, [T, B, E] when false (the default). */
  readonly batchFirst: boolean;

  /**
   * Attention of `numHeads` heads over width `embedDim`, initialised as PyTorch (seeded by `options.seed`).
   * @throws {RangeError} When embedDim is not an integer >= 1, numHeads does not divide it, or
   *   dropout is outside [0, 1).
   */
  constructor(
    /** Width E of queries, keys, values and output (PyTorch's `embed_dim`). */
    readonly embedDim: number,
    /** Heads H (PyTorch's `num_heads`); each attends over embedDim / H features. */
    readonly numHeads: number,
    options: MultiheadAttentionOptions = {},
  ) {
    super();
    if (!Number.isInteger(embedDim) || embedDim < 1) {
      throw new RangeError(`MultiheadAttention: embedDim must be an integer >= 1, got ${embedDim}`);
    }
    if (!Number.isInteger(numHeads) || numHeads < 1 || embedDim % numHeads !== 0) {
      throw new RangeError(
        `MultiheadAttention: numHeads must be an integer >= 1 dividing embedDim ${embedDim}, got ${numHeads}`,
      );
    }
    const dropout = options.dropout ?? 0;
    if (!(dropout >= 0 && dropout < 1)) {
      throw new RangeError(`MultiheadAttention: dropout must be in [0, 1), got ${dropout}`);
    }
    this.dropout = dropout;
    this.batchFirst = options.batchFirst ?? false;
    this.headDim = embedDim / numHeads;
    const device = options.device ?? Device.default;
    const seed = options.seed;
    // Registered under PyTorch's names, in its order: in_proj_weight, in_proj_bias, out_proj.
    this.inProjWeight = this.registerParameter(
      "in_proj_weight",
      new Parameter(T.zeros([3 * embedDim, embedDim], { device }), "in_proj_weight"),
    );
    xavierUniform(this.inProjWeight, 1, seed);
    if (options.bias !== false) {
      this.inProjBias = this.registerParameter(
        "in_proj_bias",
        new Parameter(T.zeros([3 * embedDim], { device }), "in_proj_bias"),
      );
    }
    const linearSeed = seed === undefined ? undefined : (seed + 2) >>> 0;
    this.outProj = this.registerModule(
      "out_proj",
      new Linear(embedDim, embedDim, { device, bias: options.bias !== false, seed: linearSeed }),
    );
    if (this.outProj.bias) zeros(this.outProj.bias);
  }

  /** One of the three input projections: rows [part·E, (part+1)·E) of in_proj. */
  #project(x: Variable, part: number): Variable {
    const e = this.embedDim;
    const w = this.inProjWeight.narrow(0, part * e, e);
    const b = this.inProjBias?.narrow(0, part * e, e);
    return apply(T.linearOp, b ? [x, w, b] : [x, w], undefined);
  }

  /** [B, T, E] to [B, H, T, D]. */
  #heads(x: Variable): Variable {
    const [b, t] = x.shape;
    return x.reshape([b, t, this.numHeads, this.headDim]).permute([0, 2, 1, 3]);
  }

  #checkInput(name: string, x: Variable): void {
    if (x.ndim !== 3 || x.shape[2] !== this.embedDim) {
      const layout = this.batchFirst ? "[B, T, E]" : "[T, B, E]";
      throw new RangeError(
        `MultiheadAttention(${this.embedDim}, ${this.numHeads}): ${name} must be ${layout} with E = ${this.embedDim}, got [${x.shape}]`,
      );
    }
  }

  /**
   * Attention of `query` over `key`/`value` ([B, T, E] with batchFirst, else [T, B, E]).
   * Self-attention: `forward(x)` or `forward(x, x, x, { causal: true })`.
   */
  forward(query: Variable, key: Variable = query, value: Variable = key, options: AttentionCallOptions = {}): Variable {
    return this.#attend(query, key, value, options).output;
  }

  /**
   * {@link forward} with PyTorch's `need_weights=True`: also the attention weights (after
   * dropout, as PyTorch), averaged over the heads to [B, Tq, Tk] (`averageAttnWeights`, the
   * default) or per head [B, H, Tq, Tk], batch first whatever `batchFirst`. Runs the composed
   * path ({@link attentionWeights}); the weights carry gradients.
   */
  forwardWithWeights(
    query: Variable,
    key: Variable = query,
    value: Variable = key,
    options: AttentionCallOptions & { averageAttnWeights?: boolean } = {},
  ): { output: Variable; weights: Variable } {
    const r = this.#attend(query, key, value, options, true);
    return { output: r.output, weights: options.averageAttnWeights === false ? r.weights! : r.weights!.mean(1) };
  }

  #attend(query: Variable, key: Variable, value: Variable, options: AttentionCallOptions, withWeights = false): { output: Variable; weights?: Variable } {
    this.#checkInput("query", query);
    this.#checkInput("key", key);
    this.#checkInput("value", value);
    const toBatchFirst = (x: Variable) => (this.batchFirst ? x : x.transpose(0, 1));
    const qb = toBatchFirst(query);
    const kb = key === query ? qb : toBatchFirst(key);
    const vb = value === key ? kb : toBatchFirst(value);
    const dropoutP = this.training ? this.dropout : 0;
    let o: Variable, weights: Variable | undefined;
    let bias = options.attnBias && asVar(options.attnBias);
    if (bias?.ndim === 3) {
      // PyTorch's per-head float mask [B·H, Tq, Tk].
      const [b, tq] = qb.shape, tk = kb.shape[1];
      if (bias.shape[0] !== b * this.numHeads) {
        throw new RangeError(`MultiheadAttention: a 3-D attnBias must be [B·H, Tq, Tk] = [${b * this.numHeads}, ${tq}, ${tk}], got ${fmt(bias.shape)}`);
      }
      bias = bias.reshape([b, this.numHeads, tq, tk]);
    }
    options = { ...options, attnBias: bias };
    if (withWeights) {
      const q = this.#heads(this.#project(qb, 0));
      const k = this.#heads(this.#project(kb, 1));
      const v = this.#heads(this.#project(vb, 2));
      ({ output: o, weights } = attentionWeights(q, k, v, { ...options, dropoutP }));
    } else if (query === key && key === value) {
      // Self-attention: one projection by the whole of in_proj, [B, T, 3E], one permute to
      // [3, B, H, T, D], and attention on it packed (one gradient, nothing to accumulate).
      const [b, t] = qb.shape;
      const w = this.inProjWeight, bias = this.inProjBias;
      const qkv = apply(T.linearOp, bias ? [qb, w, bias] : [qb, w], undefined);
      const heads = qkv.reshape([b, t, 3, this.numHeads, this.headDim]).permute([2, 0, 3, 1, 4]);
      const { inputs, attrs } = T.packedAttentionCall(heads, { ...maskVars(options), dropoutP });
      o = apply(T.attentionOp, inputs, attrs);
    } else {
      const q = this.#heads(this.#project(qb, 0));
      const k = this.#heads(this.#project(kb, 1));
      const v = this.#heads(this.#project(vb, 2));
      o = scaledDotProductAttention(q, k, v, { ...options, dropoutP });
    }
    const [b, , t] = o.shape;
    const merged = o.permute([0, 2, 1, 3]).reshape([b, t, this.embedDim]);
    const out = this.outProj.forward(merged);
    return { output: this.batchFirst ? out : out.transpose(0, 1), weights };
  }

  /** embedDim, numHeads, dropout and batchFirst, for the module tree's printout. */
  override extraRepr(): string {
    return `embedDim=${this.embedDim}, numHeads=${this.numHeads}, dropout=${this.dropout}, batchFirst=${this.batchFirst}`;
  }
}
