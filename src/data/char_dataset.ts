import type { CharVocab } from "./char_vocab.ts";
import {
  type BatchDataSet,
  checkIndices,
  type DataSet,
  type FieldSpec,
  type HostArray,
  type HostBatch,
} from "./dataset.ts";

/** Options of {@link CharDataSet.fromText}. */
export interface CharDataSetOptions {
  /** Characters per sequence, an integer ≥ 1. Default {@link CHAR_SEQ_LEN}. */
  seqLen?: number;
  /** Keep only the first `limit` sequences (an integer in [1, number of sequences]). */
  limit?: number;
  /** Names the text in messages ("Brown corpus, train split"). */
  source?: string;
}

/** Default sequence length: flodl's char-rnn and ddp-bench use 128. */
export const CHAR_SEQ_LEN = 128;

/**
 * Next-character prediction over one text, cut into non-overlapping windows as flodl's
 * `Shakespeare::parse`: sequence `i` is input ids `[i·L, i·L + L)` and targets
 * `[i·L + 1, i·L + L + 1)` (the input shifted by one), `L = seqLen`, and there are
 * `floor((chars − 1) / L)` of them (the last target needs one character past the input).
 * Fields: `input` and `target`, both i32 `[L]`; ids index {@link vocab}.
 * Implements both {@link DataSet} and {@link BatchDataSet}; both are pure functions of the index.
 * @example
 * ```ts
 * import { CharDataSet, CharVocab } from "./mod.ts";
 * const text = "abcdefghij";
 * const ds = CharDataSet.fromText(text, CharVocab.fromText(text), { seqLen: 3 });
 * const [x, y] = ds.getBatch([0, 2]);
 * if (ds.len() !== 3 || ds.vocab.decode(x.data) !== "abcghi" || ds.vocab.decode(y.data) !== "bcdhij") throw new Error("windows");
 * ```
 */
export class CharDataSet implements DataSet, BatchDataSet {
  /** `input` and `target`, both i32 `[seqLen]`. */
  readonly fields: readonly FieldSpec[];
  /** The characters of the ids (stoi / itos), to decode samples. */
  readonly vocab: CharVocab;
  /** Characters per sequence. */
  readonly seqLen: number;
  /** The encoded text the windows are cut from: `len() · seqLen + 1` ids. */
  readonly ids: Uint16Array;

  private constructor(ids: Uint16Array, vocab: CharVocab, seqLen: number) {
    this.ids = ids;
    this.vocab = vocab;
    this.seqLen = seqLen;
    this.fields = [
      { name: "input", dtype: "i32", shape: [seqLen] },
      { name: "target", dtype: "i32", shape: [seqLen] },
    ];
  }

  /**
   * Encode `text` with `vocab` and window it.
   * @throws {RangeError} When `seqLen` is not an integer ≥ 1, the text is shorter than
   *   `seqLen + 1` characters, `limit` is not an integer in [1, sequences], or the text has a
   *   character outside `vocab`.
   */
  static fromText(text: string, vocab: CharVocab, options: CharDataSetOptions = {}): CharDataSet {
    const seqLen = options.seqLen ?? CHAR_SEQ_LEN, source = options.source ?? "text";
    if (!Number.isInteger(seqLen) || seqLen < 1) {
      throw new RangeError(`CharDataSet: seqLen must be an integer >= 1, got ${seqLen}`);
    }
    const ids = vocab.encode(text, source);
    const n = Math.floor((ids.length - 1) / seqLen);
    if (n < 1) {
      throw new RangeError(
        `CharDataSet: seqLen ${seqLen} needs at least ${seqLen + 1} characters, ${source} has ${ids.length}`,
      );
    }
    let keep = n;
    if (options.limit !== undefined) {
      const l = options.limit;
      if (!Number.isInteger(l) || l < 1 || l > n) {
        throw new RangeError(`CharDataSet: limit must be an integer in [1, ${n}] for ${source}, got ${l}`);
      }
      keep = l;
    }
    // Copy what the windows read, so the rest of the text can be collected.
    return new CharDataSet(ids.slice(0, keep * seqLen + 1), vocab, seqLen);
  }

  /** Number of sequences: `floor((chars − 1) / seqLen)`, or `limit`. */
  len(): number {
    return (this.ids.length - 1) / this.seqLen;
  }

  /** One sample: `[input i32 [L], target i32 [L]]`. */
  get(index: number): HostArray[] {
    checkIndices([index], this.len(), "CharDataSet.get");
    const L = this.seqLen, input = new Int32Array(L), target = new Int32Array(L);
    input.set(this.ids.subarray(index * L, index * L + L));
    target.set(this.ids.subarray(index * L + 1, index * L + L + 1));
    return [input, target];
  }

  /** A batch: inputs and targets, both i32 `[b, L]`. */
  getBatch(indices: readonly number[]): HostBatch {
    checkIndices(indices, this.len(), "CharDataSet.getBatch");
    const L = this.seqLen, b = indices.length;
    const input = new Int32Array(b * L), target = new Int32Array(b * L);
    indices.forEach((index, row) => {
      input.set(this.ids.subarray(index * L, index * L + L), row * L);
      target.set(this.ids.subarray(index * L + 1, index * L + L + 1), row * L);
    });
    return [{ data: input, shape: [b, L] }, { data: target, shape: [b, L] }];
  }

  /** The text of sequence `index` (its input window). */
  text(index: number): string {
    checkIndices([index], this.len(), "CharDataSet.text");
    return this.vocab.decode(this.ids.subarray(index * this.seqLen, (index + 1) * this.seqLen));
  }
}
