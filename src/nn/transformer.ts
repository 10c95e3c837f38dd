/**
 * PyTorch's transformer layers, built from this project's MultiheadAttention, Linear,
 * LayerNorm and Dropout under PyTorch's member names, so `nn.TransformerEncoderLayer`,
 * `nn.TransformerEncoder`, `nn.TransformerDecoderLayer` and `nn.TransformerDecoder` state
 * dicts load by name.
 */
import type { Variable } from "../autograd/mod.ts";
import type { Device } from "../gpu/mod.ts";
import type { Tensor } from "../tensor/mod.ts";
import { type AttentionCallOptions, MultiheadAttention } from "./attention.ts";
import { Sequential } from "./container.ts";
import { Dropout } from "./dropout.ts";
import { LayerNorm } from "./layer_norm.ts";
import { Linear } from "./linear.ts";
import { Module } from "./module.ts";

/** Options of {@link TransformerEncoderLayer} and {@link TransformerDecoderLayer} (PyTorch's keyword arguments). */
export interface TransformerLayerOptions {
  /** Width of the feed-forward block. Default 2048. */
  dimFeedforward?: number;
  /** Dropout after attention, inside and after the feed-forward block, in training. Default 0.1. */
  dropout?: number;
  /** The feed-forward activation. Default "relu". */
  activation?: "relu" | "gelu";
  /** LayerNorm's eps. Default 1e-5. */
  layerNormEps?: number;
  /** Inputs and outputs are [B, T, E] when true, [T, B, E] when false (PyTorch's default). */
  batchFirst?: boolean;
  /** Pre-norm: each block normalizes its input (x + f(norm(x))) instead of its sum (norm(x + f(x))). Default false. */
  normFirst?: boolean;
  /** Device for the parameters; default `Device.default`. */
  device?: Device;
}

/** Masks of a self-attention block (PyTorch's src_mask / src_key_padding_mask; is_causal as `causal`). */
export interface SelfAttentionMasks {
  /** [T, T]: nonzero hides key j from query i (a float additive mask is the attention's `attnBias`, not taken here). */
  mask?: Tensor | Variable;
  /** [B, T]: nonzero marks padding. */
  keyPaddingMask?: Tensor | Variable;
  /** Hide later positions. */
  causal?: boolean;
}

/** Masks of a decoder layer's two attention blocks. */
export interface DecoderMasks {
  /** [T, T]: nonzero hides target key j from target query i in self-attention (PyTorch's tgt_mask, boolean). */
  tgtMask?: Tensor | Variable;
  /** [B, T]: nonzero marks a padding position of the target (PyTorch's tgt_key_padding_mask). */
  tgtKeyPaddingMask?: Tensor | Variable;
  /** Causal self-attention on the target (PyTorch 2's tgt_is_causal). */
  tgtCausal?: boolean;
  /** [T, S]: nonzero hides memory position j from target query i (PyTorch's memory_mask, boolean). */
  memoryMask?: Tensor | Variable;
  /** [B, S]: nonzero marks a padding position of the memory (PyTorch's memory_key_padding_mask). */
  memoryKeyPaddingMask?: Tensor | Variable;
}

function checkOptions(name: string, dModel: number, nhead: number, o: TransformerLayerOptions): Required<Omit<TransformerLayerOptions, "device">> {
  const r = {
    dimFeedforward: o.dimFeedforward ?? 2048,
    dropout: o.dropout ?? 0.1,
    activation: o.activation ?? "relu",
    layerNormEps: o.layerNormEps ?? 1e-5,
    batchFirst: o.batchFirst ?? false,
    normFirst: o.normFirst ?? false,
  } as const;
  if (!Number.isInteger(dModel) || dModel < 1) throw new RangeError(`${name}: dModel must be a positive integer, got ${dModel}`);
  if (!Number.isInteger(r.dimFeedforward) || r.dimFeedforward < 1) throw new RangeError(`${name}: dimFeedforward must be a positive integer, got ${r.dimFeedforward}`);
  if (!(r.dropout >= 0 && r.dropout < 1)) throw new RangeError(`${name}: dropout must be in [0, 1), got ${r.dropout}`);
  if (r.activation !== "relu" && r.activation !== "gelu") throw new RangeError(`${name}: activation must be "relu" or "gelu", got ${JSON.stringify(r.activation)}`);
  if (!Number.isInteger(nhead) || nhead < 1 || dModel % nhead !== 0) throw new RangeError(`${name}: nhead must be a positive integer dividing dModel ${dModel}, got ${nhead}`);
  return r;
}

/** The feed-forward block's members and its forward, shared by both layers. */
export abstract class TransformerLayerBase extends Module {
  /** The feed-forward block's first Linear(dModel, dimFeedforward) (`linear1`). */
  readonly linear1: Linear;
  /** Dropout inside the feed-forward block, after the activation (`dropout`). */
  readonly dropout: Dropout;
  /** The feed-forward block's second Linear(dimFeedforward, dModel) (`linear2`). */
  readonly linear2: Linear;
  /** The options with their defaults filled in (all but `device`), checked. */
  readonly settings: Required<Omit<TransformerLayerOptions, "device">>;
  /** The attention blocks, registered under `attentions`' names. */
  protected readonly blocks: MultiheadAttention[];
  readonly #device?: Device;

  /**
   * Check the options (errors named after `name`), then register the attention blocks named
   * `attentions`, then linear1, dropout and linear2, in PyTorch's order.
   * @throws {RangeError} For a size that is not a positive integer, nhead not dividing dModel,
   * dropout outside [0, 1) or another activation.
   */
  protected constructor(
    name: string,
    /** Width E of the inputs and outputs (PyTorch's `d_model`). */
    readonly dModel: number,
    /** Attention heads (PyTorch's `nhead`); must divide dModel. */
    readonly nhead: number,
    options: TransformerLayerOptions,
    attentions: readonly string[],
  ) {
    super();
    this.settings = checkOptions(name, dModel, nhead, options);
    const { dimFeedforward, dropout } = this.settings, device = options.device;
    this.#device = device;
    this.blocks = attentions.map((a) => this.attention(a)); // PyTorch registers the attention blocks first
    this.linear1 = this.registerModule("linear1", new Linear(dModel, dimFeedforward, { device }));
    this.dropout = this.registerModule("dropout", new Dropout(dropout));
    this.linear2 = this.registerModule("linear2", new Linear(dimFeedforward, dModel, { device }));
  }

  /** A MultiheadAttention(dModel, nhead) with the layer's dropout and batchFirst, registered as `name`. */
  protected attention(name: string): MultiheadAttention {
    const { dropout, batchFirst } = this.settings;
    return this.registerModule(name, new MultiheadAttention(this.dModel, this.nhead, { dropout, batchFirst, device: this.#device }));
  }

  /** A LayerNorm(dModel) with the layer's layerNormEps, registered as `name`. */
  protected norm(name: string): LayerNorm {
    return this.registerModule(name, new LayerNorm(this.dModel, { eps: this.settings.layerNormEps, device: this.#device }));
  }

  /** linear2(dropout(activation(linear1(x)))): [..., dModel] to [..., dModel]. */
  protected feedForward(x: Variable): Variable {
    const h = this.linear1.forward(x);
    return this.linear2.forward(this.dropout.forward(this.settings.activation === "gelu" ? h.gelu() : h.relu()));
  }
}

/**
 * PyTorch's nn.TransformerEncoderLayer: self-attention then a feed-forward block, each with
 * dropout and a residual, post-norm (`norm1(x + sa(x))`) or pre-norm with `normFirst`.
 * Members (state-dict keys): self_attn (in_proj_weight, in_proj_bias, out_proj), linear1,
 * linear2, norm1, norm2; init as each of those layers.
 * @throws {RangeError} For a size that is not a positive integer, nhead not dividing dModel,
 * dropout outside [0, 1) or another activation.
 */
export class TransformerEncoderLayer extends TransformerLayerBase {
  /** LayerNorm(dModel) of the self-attention block (`norm1`). */
  readonly norm1: LayerNorm;
  /** LayerNorm(dModel) of the feed-forward block (`norm2`). */
  readonly norm2: LayerNorm;
  /** Dropout on the self-attention's output, before the residual add (`dropout1`). */
  readonly dropout1: Dropout;
  /** Dropout on the feed-forward block's output, before the residual add (`dropout2`). */
  readonly dropout2: Dropout;

  /**
   * An encoder layer of width `dModel` with `nhead` heads; options default to PyTorch's
   * (dimFeedforward 2048, dropout 0.1, relu, eps 1e-5, [T, B, E], post-norm).
   * @throws {RangeError} For a size that is not a positive integer, nhead not dividing dModel,
   * dropout outside [0, 1) or another activation.
   */
  constructor(dModel: number, nhead: number, options: TransformerLayerOptions = {}) {
    super("TransformerEncoderLayer", dModel, nhead, options, ["self_attn"]);
    this.norm1 = this.norm("norm1");
    this.norm2 = this.norm("norm2");
    this.dropout1 = this.registerModule("dropout1", new Dropout(this.settings.dropout));
    this.dropout2 = this.registerModule("dropout2", new Dropout(this.settings.dropout));
  }

  /** The self-attention block (`self_attn`). */
  get selfAttn(): MultiheadAttention {
    return this.blocks[0];
  }

  /** `src` [T, B, E] ([B, T, E] with batchFirst) to the same shape. */
  forward(src: Variable, masks: SelfAttentionMasks = {}): Variable {
    const call: AttentionCallOptions = { attnMask: masks.mask, keyPaddingMask: masks.keyPaddingMask, causal: masks.causal };
    const sa = (x: Variable) => this.dropout1.forward(this.selfAttn.forward(x, x, x, call));
    const ff = (x: Variable) => this.dropout2.forward(this.feedForward(x));
    if (this.settings.normFirst) {
      const x = src.add(sa(this.norm1.forward(src)));
      return x.add(ff(this.norm2.forward(x)));
    }
    const x = this.norm1.forward(src.add(sa(src)));
    return this.norm2.forward(x.add(ff(x)));
  }
}

/**
 * PyTorch's nn.TransformerDecoderLayer: self-attention on the target, attention over the
 * memory, then the feed-forward block, each with dropout and a residual (post-norm, or
 * pre-norm with `normFirst`). Members: self_attn, multihead_attn, linear1, linear2, norm1,
 * norm2, norm3.
 * @throws {RangeError} As {@link TransformerEncoderLayer}.
 */
export class TransformerDecoderLayer extends TransformerLayerBase {
  /** LayerNorm(dModel) of the self-attention block (`norm1`). */
  readonly norm1: LayerNorm;
  /** LayerNorm(dModel) of the attention over the memory (`norm2`). */
  readonly norm2: LayerNorm;
  /** LayerNorm(dModel) of the feed-forward block (`norm3`). */
  readonly norm3: LayerNorm;
  /** Dropout on the self-attention's output, before the residual add (`dropout1`). */
  readonly dropout1: Dropout;
  /** Dropout on the memory attention's output, before the residual add (`dropout2`). */
  readonly dropout2: Dropout;
  /** Dropout on the feed-forward block's output, before the residual add (`dropout3`). */
  readonly dropout3: Dropout;

  /**
   * A decoder layer of width `dModel` with `nhead` heads; options default to PyTorch's
   * (dimFeedforward 2048, dropout 0.1, relu, eps 1e-5, [T, B, E], post-norm).
   * @throws {RangeError} As {@link TransformerEncoderLayer}.
   */
  constructor(dModel: number, nhead: number, options: TransformerLayerOptions = {}) {
    super("TransformerDecoderLayer", dModel, nhead, options, ["self_attn", "multihead_attn"]);
    this.norm1 = this.norm("norm1");
    this.norm2 = this.norm("norm2");
    this.norm3 = this.norm("norm3");
    this.dropout1 = this.registerModule("dropout1", new Dropout(this.settings.dropout));
    this.dropout2 = this.registerModule("dropout2", new Dropout(this.settings.dropout));
    this.dropout3 = this.registerModule("dropout3", new Dropout(this.settings.dropout));
  }

  /** The target's self-attention block (`self_attn`). */
  get selfAttn(): MultiheadAttention {
    return this.blocks[0];
  }

  /** The attention over the memory (`multihead_attn`). */
  get multiheadAttn(): MultiheadAttention {
    return this.blocks[1];
  }

  /** `tgt` [T, B, E] attending to `memory` [S, B, E] ([B, ·, E] with batchFirst): tgt's shape. */
  forward(tgt: Variable, memory: Variable, masks: DecoderMasks = {}): Variable {
    const sa = (x: Variable) =>
      this.dropout1.forward(this.selfAttn.forward(x, x, x, { attnMask: masks.tgtMask, keyPaddingMask: masks.tgtKeyPaddingMask, causal: masks.tgtCausal }));
    const mha = (x: Variable) =>
      this.dropout2.forward(this.multiheadAttn.forward(x, memory, memory, { attnMask: masks.memoryMask, keyPaddingMask: masks.memoryKeyPaddingMask }));
    const ff = (x: Variable) => this.dropout3.forward(this.feedForward(x));
    if (this.settings.normFirst) {
      let x = tgt.add(sa(this.norm1.forward(tgt)));
      x = x.add(mha(this.norm2.forward(x)));
      return x.add(ff(this.norm3.forward(x)));
    }
    let x = this.norm1.forward(tgt.add(sa(tgt)));
    x = this.norm2.forward(x.add(mha(x)));
    return this.norm3.forward(x.add(ff(x)));
  }
}

/** `numLayers` layers made by `make` with `layer`'s options and device, each loaded from `layer`'s state dict. */
function clones<L extends TransformerLayerBase>(name: string, layer: L, numLayers: number, make: (o: TransformerLayerOptions) => L): L[] {
  if (!Number.isInteger(numLayers) || numLayers < 1) throw new RangeError(`${name}: numLayers must be a positive integer, got ${numLayers}`);
  const state = layer.stateDict();
  return Array.from({ length: numLayers }, () => {
    const copy = make({ ...layer.settings, device: layer.device() });
    copy.loadStateDict(state);
    return copy;
  });
}

/**
 * PyTorch's nn.TransformerEncoder: `numLayers` copies of `layer` (as PyTorch, every copy
 * starts from `layer`'s values) under `layers.{i}`, then an optional final `norm`.
 * @throws {RangeError} When numLayers is not a positive integer.
 */
export class TransformerEncoder extends Module {
  /** The numLayers copies of the layer, in order (`layers.0`, `layers.1`, ...). */
  readonly layers: Sequential;
  /** The final LayerNorm after the last layer (`norm`), when one was given. */
  readonly norm?: LayerNorm;

  /**
   * `numLayers` copies of `layer`, each loaded from its state dict at construction (so they
   * start equal but train apart), on its device; `options.norm` follows the last.
   * @throws {RangeError} When numLayers is not a positive integer.
   */
  constructor(layer: TransformerEncoderLayer, numLayers: number, options: { norm?: LayerNorm } = {}) {
    super();
    const copies = clones("TransformerEncoder", layer, numLayers, (o) => new TransformerEncoderLayer(layer.dModel, layer.nhead, o));
    this.layers = this.registerModule("layers", new Sequential(...copies));
    if (options.norm) this.norm = this.registerModule("norm", options.norm);
  }

  /** Every layer in turn with the same masks, then `norm`. */
  forward(src: Variable, masks: SelfAttentionMasks = {}): Variable {
    let x = src;
    for (let i = 0; i < this.layers.length; i++) x = (this.layers.at(i) as TransformerEncoderLayer).forward(x, masks);
    return this.norm ? this.norm.forward(x) : x;
  }
}

/**
 * PyTorch's nn.TransformerDecoder: `numLayers` copies of `layer` (as PyTorch, every copy
 * starts from `layer`'s values) under `layers.{i}`, then an optional final `norm`.
 * @throws {RangeError} When numLayers is not a positive integer.
 */
export class TransformerDecoder extends Module {
  /** The numLayers copies of the layer, in order (`layers.0`, `layers.1`, ...). */
  readonly layers: Sequential;
  /** The final LayerNorm after the last layer (`norm`), when one was given. */
  readonly norm?: LayerNorm;

  /**
   * `numLayers` copies of `layer`, each loaded from its state dict at construction (so they
   * start equal but train apart), on its device; `options.norm` follows the last.
   * @throws {RangeError} When numLayers is not a positive integer.
   */
  constructor(layer: TransformerDecoderLayer, numLayers: number, options: { norm?: LayerNorm } = {}) {
    super();
    const copies = clones("TransformerDecoder", layer, numLayers, (o) => new TransformerDecoderLayer(layer.dModel, layer.nhead, o));
    this.layers = this.registerModule("layers", new Sequential(...copies));
    if (options.norm) this.norm = this.registerModule("norm", options.norm);
  }

  /**
   * Every layer in turn on `tgt` [T, B, E] with the same `memory` [S, B, E] ([B, ·, E] with
   * batchFirst) and the same masks, then `norm`: tgt's shape.
   */
  forward(tgt: Variable, memory: Variable, masks: DecoderMasks = {}): Variable {
    let x = tgt;
    for (let i = 0; i < this.layers.length; i++) x = (this.layers.at(i) as TransformerDecoderLayer).forward(x, memory, masks);
    return this.norm ? this.norm.forward(x) : x;
  }
}
