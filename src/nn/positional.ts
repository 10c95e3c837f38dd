/**
 * Position information for sequence models: a learned positional embedding (GPT-2's `wpe`) and
 * rotary position embedding (RoPE) on Variables.
 */
import { apply, Variable } from "../autograd/mod.ts";
import * as T from "../tensor/mod.ts";
import { Embedding } from "./embedding.ts";
import type { LayerOptions } from "./layer_options.ts";

/**
 * A learned embedding per position, [maxLen, dim] (GPT-2's `wpe`): an {@link Embedding} looked
 * up at positions offset..offset+T-1, returning [T, dim] to add to token embeddings [B, T, dim]
 * (broadcast over B). Parameter `weight`, init N(0, 1) as Embedding (GPT-2 uses N(0, 0.02²):
 * re-init with `init.normal(pe.weight, 0, 0.02)`).
 * @throws {RangeError} From forward when offset + T > maxLen.
 * @example
 * ```ts
 * import { Device } from "../gpu/mod.ts";
 * import { PositionalEmbedding } from "./positional.ts";
 * await Device.request();
 * const wpe = new PositionalEmbedding(128, 16);
 * const pos = wpe.forward(10); // [10, 16]; tokEmb.add(pos) for tokens [B, 10, 16]
 * console.log(pos.shape);
 * ```
 */
export class PositionalEmbedding extends Embedding {
  /**
   * A [maxLen, dim] table, init N(0, 1), seeded by `options.seed`.
   * @throws {RangeError} When maxLen or dim is not an integer >= 1.
   */
  constructor(
    /** Positions the table holds: forward needs offset + T <= maxLen. */
    readonly maxLen: number,
    dim: number,
    options: LayerOptions = {},
  ) {
    super(maxLen, dim, options);
  }
  /** Embeddings of positions offset..offset+seqLen-1: [seqLen, dim]. */
  override forward(seqLen: number | Variable | T.Indices, offset = 0): Variable {
    if (typeof seqLen !== "number") return super.forward(seqLen);
    if (
      !Number.isInteger(seqLen) || seqLen < 1 || !Number.isInteger(offset) || offset < 0 ||
      offset + seqLen > this.maxLen
    ) {
      throw new RangeError(
        `PositionalEmbedding(${this.maxLen}): positions ${offset}..${
          offset + seqLen - 1
        } must lie in [0, ${this.maxLen}), got seqLen ${seqLen}, offset ${offset}`,
      );
    }
    return super.forward(Int32Array.from({ length: seqLen }, (_, i) => offset + i));
  }
}

/**
 * Rotary position embedding of x [..., T, D] on the tape (see `rotaryEmbedding` in
 * src/tensor/ops/rope.ts): apply to q and k [B, H, T, D] before attention.
 * @throws {RangeError} For an odd D, base <= 1 or a bad offset.
 */
export function rotaryEmbedding(x: Variable, options: T.RopeOptions = {}): Variable {
  const { base, offset, interleaved } = T.ropeAttrs(options);
  const t = x.shape[x.shape.length - 2], d = x.shape[x.shape.length - 1];
  if (x.ndim < 2 || d % 2 !== 0) {
    throw new RangeError(`rotaryEmbedding: x must be [..., T, D] with an even D, got [${x.shape}]`);
  }
  const tab = T.ropeTable(x.data.device, offset + t, d, base);
  return apply(T.ropeOp, [x, new Variable(tab)], { offset, interleaved });
}
