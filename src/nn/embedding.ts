/** Lookup tables indexed by i32 tensors (PyTorch names): Embedding and EmbeddingBag. */
import { apply, Parameter, Variable } from "../autograd/mod.ts";
import { Device } from "../gpu/mod.ts";
import * as T from "../tensor/mod.ts";
import { checkPositiveInt, type LayerOptions } from "./layer_options.ts";
import { Module } from "./module.ts";

/**
 * PyTorch's init of an embedding table: N(0, 1) [num, dim], row `paddingIdx` (checked, negative
 * counts from the end) zeros.
 */
function initTable(num: number, dim: number, device: Device, seed: number | undefined, paddingIdx: number | undefined): T.Tensor {
  const { pad } = T.embeddingShape([num, dim], [0], paddingIdx);
  const w = T.randn([num, dim], { device, seed });
  if (pad < 0) return w;
  const keep = T.fromArray(Float32Array.from({ length: num }, (_, i) => (i === pad ? 0 : 1)), [num, 1], { device });
  return T.mul(w, keep);
}

/**
 * A lookup table [num, dim] indexed by i32 tensors (PyTorch's nn.Embedding, init N(0, 1) with
 * row paddingIdx zeroed).
 */
export class Embedding extends Module {
  /** The table [numEmbeddings, embeddingDim] (PyTorch's `weight`), init N(0, 1), row paddingIdx zeros. */
  readonly weight: Parameter;
  /**
   * A table of `numEmbeddings` rows of `embeddingDim`, seeded by `options.seed`. `paddingIdx`
   * (negative counts from the end): a row zeroed at init and given no gradient, as PyTorch's
   * padding_idx (a value loaded into it later is looked up as it is).
   * @throws {RangeError} When a size is not an integer >= 1 or paddingIdx is not an integer in
   * [-numEmbeddings, numEmbeddings).
   */
  constructor(
    /** Rows of the table: indices lie in [0, numEmbeddings). */
    readonly numEmbeddings: number,
    /** Length of each row, the last dim of the output. */
    readonly embeddingDim: number,
    options: LayerOptions & { paddingIdx?: number } = {},
  ) {
    super();
    checkPositiveInt("Embedding", "numEmbeddings", numEmbeddings);
    checkPositiveInt("Embedding", "embeddingDim", embeddingDim);
    const device = options.device ?? Device.default;
    this.weight = new Parameter(initTable(numEmbeddings, embeddingDim, device, options.seed, options.paddingIdx), "weight");
    this.paddingIdx = options.paddingIdx;
  }
  /** The row zeroed at init that gets no gradient, as given (negative counts from the end); undefined: none. */
  readonly paddingIdx?: number;
  /**
   * Look up `index` (an i32 tensor, a Variable over one, or 1-D host values, checked against
   * [0, numEmbeddings) before the upload; tensors are checked in checked mode, `setIndexChecks`).
   * @throws {RangeError} For a host index out of range: `embedding: index 12 at position 3 is out of range [0, 10)`.
   */
  forward(index: Variable | T.Indices): Variable {
    const idx = index instanceof Variable
      ? index
      : new Variable(T.toIndexTensor(index, T.embeddingRule(this.numEmbeddings), this.weight.data.device));
    return apply(T.embeddingOp, [this.weight, idx], { paddingIdx: this.paddingIdx });
  }
}

/** Options of {@link EmbeddingBag}. */
export interface EmbeddingBagLayerOptions extends LayerOptions {
  /** "mean" (default), "sum" or "max". */
  mode?: T.EmbeddingBagMode;
  /** A row left out of every bag; initialised to zeros and never updated by its gradient. */
  paddingIdx?: number;
}

/**
 * Sums, means or maxima of bags of embedding rows (PyTorch's nn.EmbeddingBag: weight
 * [num, dim] init N(0, 1) with row paddingIdx zeroed). forward(input [B, L]) or
 * forward(input [K], offsets [B]) gives [B, dim]; empty bags give zeros, as PyTorch.
 */
export class EmbeddingBag extends Module {
  /** The table [numEmbeddings, embeddingDim] (PyTorch's `weight`), init N(0, 1), row paddingIdx zeros. */
  readonly weight: Parameter;
  /** How a bag's rows combine: "sum", "mean" (the default) or "max". */
  readonly mode: T.EmbeddingBagMode;
  /** The row left out of every bag, as given; undefined: none. */
  readonly paddingIdx?: number;
  /**
   * A table of `numEmbeddings` rows of `embeddingDim`, seeded by `options.seed`.
   * @throws {RangeError} When a size is not an integer >= 1, mode is unknown or paddingIdx is out of range.
   */
  constructor(
    /** Rows of the table: indices lie in [0, numEmbeddings). */
    readonly numEmbeddings: number,
    /** Length of each row, the last dim of the output. */
    readonly embeddingDim: number,
    options: EmbeddingBagLayerOptions = {},
  ) {
    super();
    checkPositiveInt("EmbeddingBag", "numEmbeddings", numEmbeddings);
    checkPositiveInt("EmbeddingBag", "embeddingDim", embeddingDim);
    this.mode = options.mode ?? "mean";
    if (!["sum", "mean", "max"].includes(this.mode)) {
      throw new RangeError(`EmbeddingBag: mode must be "sum", "mean" or "max", got ${JSON.stringify(options.mode)}`);
    }
    const device = options.device ?? Device.default;
    this.weight = new Parameter(initTable(numEmbeddings, embeddingDim, device, options.seed, options.paddingIdx), "weight");
    this.paddingIdx = options.paddingIdx;
  }
  /**
   * Bags of `input` (an i32 tensor or Variable, [B, L], or 1-D with `offsets` [B]; host values
   * are checked before the upload).
   * @throws {RangeError} For a bad index or offsets, naming the value and its position.
   */
  forward(input: Variable | T.Indices, offsets?: Variable | T.Indices): Variable {
    const raw = (v: Variable | T.Indices | undefined) => (v instanceof Variable ? v.data : v);
    const r = T.bagInputs(this.weight.shape, raw(input)!, raw(offsets), this.weight.data.device);
    return apply(T.embeddingBagOp, [this.weight, new Variable(r.index), new Variable(r.offsets)], {
      mode: this.mode,
      paddingIdx: this.paddingIdx,
    });
  }
  /** `num, dim, mode=…` and padding_idx when set, for the module tree's printout. */
  override extraRepr(): string {
    return `${this.numEmbeddings}, ${this.embeddingDim}, mode=${this.mode}` +
      (this.paddingIdx === undefined ? "" : `, padding_idx=${this.paddingIdx}`);
  }
}
