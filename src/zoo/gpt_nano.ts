/**
 * gpt-nano of flodl's ddp-bench (flodl's ddp-bench/src/models/gpt_nano.rs, after
 * nanoGPT): token + learned position embedding, 4 pre-norm transformer blocks (4 heads,
 * d = 128, feed-forward 512 with exact GELU), a final LayerNorm and a linear head, causal.
 * Dropout 0.1 on the embeddings and on both residual branches, as flodl's.
 *
 * Parameter names are those of bench/ddp-bench/torch_ref.py's `GptNano`, so a state dict
 * moves between the two.
 */
import {
  type Device,
  Dropout,
  Embedding,
  GELU,
  LayerNorm,
  Linear,
  Module,
  MultiheadAttention,
  PositionalEmbedding,
  Sequential,
  type Variable,
} from "../index.ts";

/** Sizes of a gpt-nano; the defaults are flodl's. */
export interface GptNanoOptions {
  /** Embedding width d. Default 128. */
  dModel?: number;
  /** Heads per attention layer (must divide dModel). Default 4. */
  heads?: number;
  /** Transformer blocks. Default 4. */
  layers?: number;
  /** Feed-forward hidden width. Default 512. */
  dFF?: number;
  /** Longest sequence (rows of the position embedding). Default 128, flodl's seq_len. */
  maxLen?: number;
  /** Dropout on embeddings and residual branches. Default 0.1. */
  dropout?: number;
}

/** One pre-norm block: x + drop(attn(ln1 x)), then x + drop(ff_down(gelu(ff_up(ln2 x)))). */
export class GptBlock extends Module {
  /** LayerNorm before attention. */
  readonly ln1: LayerNorm;
  /** Causal self-attention, `heads` heads, batch first. */
  readonly attn: MultiheadAttention;
  /** LayerNorm before the feed-forward. */
  readonly ln2: LayerNorm;
  /** Feed-forward up projection, Linear(d, dFF). */
  readonly ff_up: Linear;
  /** Feed-forward down projection, Linear(dFF, d). */
  readonly ff_down: Linear;
  /** Exact GELU between the projections. */
  readonly act: GELU = new GELU();
  /** Dropout on both residual branches. */
  readonly drop: Dropout;

  /**
   * A block with fresh layers, each initialised as its PyTorch default.
   * @param d Embedding width.
   * @param heads Attention heads (must divide d).
   * @param dFF Feed-forward hidden width.
   * @param dropout Dropout probability of the residual branches.
   * @param device Device of the parameters.
   */
  constructor(d: number, heads: number, dFF: number, dropout: number, device: Device) {
    super();
    this.ln1 = new LayerNorm(d, { device });
    this.attn = new MultiheadAttention(d, heads, { batchFirst: true, device });
    this.ln2 = new LayerNorm(d, { device });
    this.ff_up = new Linear(d, dFF, { device });
    this.ff_down = new Linear(dFF, d, { device });
    this.drop = new Dropout(dropout);
  }

  /** x [B, T, d] → [B, T, d]; position i attends to positions 0..i only. */
  forward(x: Variable): Variable {
    const n1 = this.ln1.forward(x);
    x = x.add(this.drop.forward(this.attn.forward(n1, n1, n1, { causal: true })));
    const n2 = this.ln2.forward(x);
    // x + drop(ff_down(gelu(ff_up(n2)))) in two launches: GELU in ff_up's store, dropout and the
    // residual in ff_down's; GELU's gradient folds into ff_down's dx product.
    return this.ff_down.forwardResidual(this.ff_up.forwardThen(n2, this.act), x, this.drop);
  }
}

/**
 * The model: input ids i32 [B, T] (T ≤ maxLen) → logits [B, T, vocab].
 * @throws {RangeError} From the layers, for sizes that do not fit (heads not dividing dModel, ...),
 *   and from forward when T exceeds maxLen.
 */
export class GptNano extends Module {
  /** Token embedding [vocab, d]. */
  readonly tok_emb: Embedding;
  /** Learned position embedding [maxLen, d]. */
  readonly pos_emb: PositionalEmbedding;
  /** Dropout on the summed embeddings. */
  readonly drop: Dropout;
  /** The {@link GptBlock}s in order. */
  readonly blocks: Sequential;
  /** Final LayerNorm. */
  readonly ln_f: LayerNorm;
  /** Output projection Linear(d, vocab) to the logits. */
  readonly head: Linear;

  /**
   * gpt-nano with fresh weights, each layer initialised as its PyTorch default.
   * @param vocabSize Rows of the token embedding and width of the logits.
   * @param device Device of the parameters.
   * @param options Sizes and dropout; flodl's gpt-nano by default.
   */
  constructor(readonly vocabSize: number, device: Device, options: GptNanoOptions = {}) {
    super();
    const d = options.dModel ?? 128, heads = options.heads ?? 4, layers = options.layers ?? 4;
    const dFF = options.dFF ?? 512, maxLen = options.maxLen ?? 128, p = options.dropout ?? 0.1;
    this.tok_emb = new Embedding(vocabSize, d, { device });
    this.pos_emb = new PositionalEmbedding(maxLen, d, { device });
    this.drop = new Dropout(p);
    this.blocks = new Sequential(...Array.from({ length: layers }, () => new GptBlock(d, heads, dFF, p, device)));
    this.ln_f = new LayerNorm(d, { device });
    this.head = new Linear(d, vocabSize, { device });
  }

  /** ids i32 [B, T] → logits [B, T, vocab]. */
  forward(ids: Variable): Variable {
    const x = this.tok_emb.forward(ids).add(this.pos_emb.forward(ids.shape[1]));
    return this.head.forward(this.ln_f.forward(this.blocks.forward(this.drop.forward(x))));
  }
}
