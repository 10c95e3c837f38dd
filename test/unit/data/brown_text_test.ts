import { brownText, brownWord, joinBrownWords } from "../../../src/data/brown_text.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

Deno.test("brownWord keeps everything before the last slash: words may hold one (1/2, and/or)", () => {
  assertEquals(brownWord("The/at"), "The", "plain");
  assertEquals(brownWord("Atlanta's/np$"), "Atlanta's", "possessive tag");
  assertEquals(brownWord("wasn't/bedz*"), "wasn't", "negated tag");
  assertEquals(brownWord("1/2/cd"), "1/2", "fraction");
  assertEquals(brownWord("and/or/cc"), "and/or", "and/or");
  assertEquals(brownWord("1/8''/nn"), "1/8''", "inches stay as written");
  assertEquals(brownWord("//in"), "/", "a slash as the word");
  assertThrows(
    () => brownWord("tagless", '"ca01" line 3 token'),
    TypeError,
    '"ca01" line 3 token "tagless"',
    "word/tag",
  );
  assertThrows(() => brownWord("/nn"), TypeError, '"/nn"');
});

Deno.test('joinBrownWords: a space between words, none before closers or after openers, quotes as "', () => {
  const s = (line: string) => line.split(" ");
  assertEquals(joinBrownWords([s("Hello , world .")]), "Hello, world.\n", "comma and period");
  assertEquals(
    joinBrownWords([s("`` No evidence '' , he said ; then : why ? !")]),
    '"No evidence", he said; then: why?!\n',
    "quotes",
  );
  assertEquals(joinBrownWords([s("( 1 ) a [ b ] { c } d")]), "(1) a [b] {c} d\n", "brackets");
  assertEquals(joinBrownWords([s("Merger proposed")]), "Merger proposed\n", "a headline without a period");
  assertEquals(joinBrownWords([s("a -- b")]), "a -- b\n", "dashes keep their spaces");
  assertEquals(joinBrownWords([s("( `` x '' )")]), '("x")\n', "nested openers and closers");
});

Deno.test("joinBrownWords: one line per sentence; a lone ' opens then closes across the paragraph's sentences", () => {
  const got = joinBrownWords([["He", "said", "'", "go"], ["now", "'", "."], ["'", "Yes", "'", "."]]);
  assertEquals(got, "He said 'go\nnow'.\n'Yes'.\n", "alternating single quotes");
  assertEquals(joinBrownWords([]), "", "no sentences");
  assertEquals(joinBrownWords([["''", "."]]), '".\n', "a closer at a line start gets no space");
});

Deno.test("brownText: tags stripped, sentences one per line, paragraphs split by one blank line", () => {
  const tagged = [
    "",
    "",
    "\tThe/at Fulton/np-tl jury/nn said/vbd ``/`` no/at ''/'' ./.",
    "It/pps was/bedz 1/2/cd done/vbn ,/, and/or/cc not/* ./.",
    "",
    "",
    "\tMerger/nn-hl proposed/vbn-hl ",
    "",
    "\t(/( 2/cd )/) Then/rb ?/. ",
    "",
  ].join("\n");
  assertEquals(
    brownText(tagged),
    'The Fulton jury said "no".\nIt was 1/2 done, and/or not.\n\nMerger proposed\n\n(2) Then?\n',
    "plain text",
  );
  assertEquals(brownText(tagged.replaceAll("\n", "\r\n")), brownText(tagged), "CRLF files read the same");
  assertEquals(brownText("\n\n  \t\n"), "", "no paragraphs");
  assertThrows(() => brownText("\n\tThe/at\nbad ./.\n", "ca99"), TypeError, '"ca99" line 3 token "bad"');
});
