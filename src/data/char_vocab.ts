/**
 * A character vocabulary: the distinct characters of a text, sorted by code point, each
 * numbered by its rank (flodl's `Shakespeare::parse` builds the same table: `char_to_idx`,
 * `idx_to_char`). Sorting makes the numbering a function of the character set alone, so two
 * loads of the same corpus agree whatever order the files arrive in.
 */

/** Most characters a vocabulary holds: ids are stored as u16 (half the memory of i32). */
export const MAX_VOCAB_SIZE = 65536;

/**
 * Characters ↔ ids. `itos[id]` is the character of `id`; `stoi.get(ch)` is its id.
 * A character is one Unicode code point (not one UTF-16 unit), so astral characters are one id.
 * @example
 * ```ts
 * import { CharVocab } from "./char_vocab.ts";
 * const v = CharVocab.fromText("hello world");
 * if (v.itos.join("") !== " dehlorw" || v.decode(v.encode("hello")) !== "hello") throw new Error("vocab");
 * ```
 */
export class CharVocab {
  /** Character of each id, in code-point order. */
  readonly itos: readonly string[];
  /** Id of each character. */
  readonly stoi: ReadonlyMap<string, number>;

  /**
   * A vocabulary over the given characters, numbered in the order given.
   * @throws {TypeError} When an entry is not exactly one code point.
   * @throws {RangeError} When a character repeats, or there are none or more than {@link MAX_VOCAB_SIZE}.
   */
  constructor(chars: readonly string[]) {
    if (chars.length === 0 || chars.length > MAX_VOCAB_SIZE) {
      throw new RangeError(`CharVocab: needs 1 to ${MAX_VOCAB_SIZE} characters, got ${chars.length}`);
    }
    const stoi = new Map<string, number>();
    chars.forEach((ch, id) => {
      if (typeof ch !== "string" || [...ch].length !== 1) {
        throw new TypeError(`CharVocab: entry ${id} must be one character, got ${JSON.stringify(ch)}`);
      }
      if (stoi.has(ch)) {
        throw new RangeError(`CharVocab: ${JSON.stringify(ch)} is listed twice (ids ${stoi.get(ch)} and ${id})`);
      }
      stoi.set(ch, id);
    });
    this.itos = Object.freeze([...chars]);
    this.stoi = stoi;
  }

  /**
   * The distinct characters of `text`, sorted by code point.
   * @throws {RangeError} When `text` is empty or has more than {@link MAX_VOCAB_SIZE} distinct characters.
   */
  static fromText(text: string): CharVocab {
    // NOTE: a flag per UTF-16 unit is ~5x faster than a Set over 6 M characters; astral
    // characters (surrogate pairs) go through the Set.
    const seen = new Uint8Array(65536), astral = new Set<string>();
    for (let k = 0; k < text.length; k++) {
      const c = text.charCodeAt(k);
      if (c >= 0xd800 && c <= 0xdbff && k + 1 < text.length) {
        const d = text.charCodeAt(k + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          astral.add(text.slice(k, k + 2));
          k++;
          continue;
        }
      }
      seen[c] = 1;
    }
    const chars: string[] = [];
    seen.forEach((s, c) => s && chars.push(String.fromCharCode(c)));
    return new CharVocab([...chars, ...[...astral].sort((a, b) => a.codePointAt(0)! - b.codePointAt(0)!)]);
  }

  /** Number of characters (the model's embedding rows and output classes). */
  get size(): number {
    return this.itos.length;
  }

  /**
   * Ids of the characters of `text`.
   * @param what Names the text in the error.
   * @throws {RangeError} Naming the first character outside the vocabulary and its offset.
   */
  encode(text: string, what = "text"): Uint16Array<ArrayBuffer> {
    const out = new Uint16Array(text.length); // ≥ the code-point count
    const bmp = this.#bmpIds();
    let n = 0;
    for (let k = 0; k < text.length; k++) {
      let id = bmp[text.charCodeAt(k)], width = 1;
      if (id < 0) { // outside the vocabulary, or the first half of a surrogate pair
        const ch = String.fromCodePoint(text.codePointAt(k)!);
        id = this.stoi.get(ch) ?? -1;
        width = ch.length;
        if (id < 0) {
          throw new RangeError(
            `CharVocab.encode: ${what} has ${JSON.stringify(ch)} at offset ${k}, not in the vocabulary`,
          );
        }
      }
      out[n++] = id;
      k += width - 1;
    }
    return n === out.length ? out : out.slice(0, n);
  }

  #bmp?: Int32Array;
  /** Id of each UTF-16 unit that is a character of the vocabulary, else -1 (a lookup ~5x faster than the Map). */
  #bmpIds(): Int32Array {
    if (!this.#bmp) {
      this.#bmp = new Int32Array(65536).fill(-1);
      this.itos.forEach((ch, id) => {
        const c = ch.charCodeAt(0);
        // A high surrogate may start a pair: the slow path decides.
        if (ch.length === 1 && (c < 0xd800 || c > 0xdbff)) this.#bmp![c] = id;
      });
    }
    return this.#bmp;
  }

  /**
   * The text of some ids.
   * @throws {RangeError} When an id is not an integer in [0, size).
   */
  decode(ids: ArrayLike<number>): string {
    let s = "";
    for (let k = 0; k < ids.length; k++) {
      const ch = this.itos[ids[k]];
      if (ch === undefined) throw new RangeError(`CharVocab.decode: id ${ids[k]} at ${k} is outside [0, ${this.size})`);
      s += ch;
    }
    return s;
  }
}
