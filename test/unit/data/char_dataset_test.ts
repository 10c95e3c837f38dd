import { CharDataSet } from "../../../src/data/char_dataset.ts";
import { CharVocab, MAX_VOCAB_SIZE } from "../../../src/data/char_vocab.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";

Deno.test("CharVocab.fromText: distinct characters sorted by code point; encode and decode invert each other", () => {
  const text = "the quick brown fox, THE LAZY DOG!\nzz";
  const v = CharVocab.fromText(text);
  const want = [...new Set(text)].sort((a, b) => a.codePointAt(0)! - b.codePointAt(0)!);
  assertEquals(v.itos, want, "itos");
  assertEquals(v.size, want.length, "size");
  want.forEach((ch, id) => assertEquals(v.stoi.get(ch), id, `stoi ${JSON.stringify(ch)}`));
  const ids = v.encode(text);
  assertEquals(ids.length, text.length, "one id per character");
  for (let k = 0; k < text.length; k++) assertEquals(v.itos[ids[k]], text[k], `id ${k}`);
  assertEquals(v.decode(ids), text, "round trip");
  assertEquals(CharVocab.fromText("zyx").itos, CharVocab.fromText("xyz").itos, "order-free");
});

Deno.test("CharVocab: an astral character is one id, sorted after the BMP; a lone surrogate is its own id", () => {
  const text = "a😀b\u{10000}é\ud800c";
  const v = CharVocab.fromText(text);
  assertEquals(v.itos, ["a", "b", "c", "é", "\ud800", "\u{10000}", "😀"], "code-point order");
  assertEquals(v.encode(text).length, 7, "7 code points");
  assertEquals(v.decode(v.encode(text)), text, "round trip");
});

Deno.test("CharVocab refuses unknown characters, bad ids, repeats and empty tables, naming them", () => {
  const v = CharVocab.fromText("abc");
  assertThrows(() => v.encode("abxc", "sample"), RangeError, "sample", '"x"', "offset 2");
  assertThrows(() => v.decode([0, 3]), RangeError, "id 3", "[0, 3)");
  assertThrows(() => new CharVocab(["a", "b", "a"]), RangeError, '"a"', "ids 0 and 2");
  assertThrows(() => new CharVocab(["ab"]), TypeError, "entry 0", '"ab"');
  assertThrows(() => CharVocab.fromText(""), RangeError, `1 to ${MAX_VOCAB_SIZE}`, "got 0");
});

Deno.test("CharDataSet windows: floor((n-1)/L) sequences, input [iL, iL+L), target shifted by one", () => {
  const text = "It was the best of times, it was the worst of times.\n";
  const v = CharVocab.fromText(text);
  for (const L of [1, 7, 13, 52]) {
    const ds = CharDataSet.fromText(text, v, { seqLen: L });
    const n = Math.floor((text.length - 1) / L);
    assertEquals(ds.len(), n, `len at L=${L}`);
    assertEquals(
      ds.fields,
      [{ name: "input", dtype: "i32", shape: [L] }, { name: "target", dtype: "i32", shape: [L] }],
      "fields",
    );
    for (let i = 0; i < n; i++) {
      const [x, y] = ds.get(i);
      assert(x instanceof Int32Array && y instanceof Int32Array, "i32 samples");
      assertEquals(v.decode(x), text.slice(i * L, i * L + L), `L=${L} input ${i}`);
      assertEquals(v.decode(y), text.slice(i * L + 1, i * L + L + 1), `L=${L} target ${i}`);
      assertEquals(ds.text(i), text.slice(i * L, i * L + L), `text(${i})`);
    }
  }
  assertThrows(() => CharDataSet.fromText(text, v, { seqLen: 53 }), RangeError, "seqLen 53", "at least 54", "has 53");
});

Deno.test("CharDataSet getBatch stacks get() rows into i32 [b, L], purely; limit keeps the first sequences", () => {
  const text = "abcdefghijklmnopqrstuvwxyz0123456789".repeat(5);
  const v = CharVocab.fromText(text);
  const ds = CharDataSet.fromText(text, v, { seqLen: 11 });
  const idxs = [ds.len() - 1, 0, 7, 0];
  const [x, y] = ds.getBatch(idxs);
  assertEquals([x.shape, y.shape], [[4, 11], [4, 11]], "shapes");
  assert(x.data instanceof Int32Array && y.data instanceof Int32Array, "i32 batch");
  idxs.forEach((i, row) => {
    const [xi, yi] = ds.get(i);
    assertEquals([...x.data.subarray(row * 11, row * 11 + 11)], [...xi], `row ${row} input`);
    assertEquals([...y.data.subarray(row * 11, row * 11 + 11)], [...yi], `row ${row} target`);
  });
  assertEquals([...ds.getBatch([3])[1].data], [...ds.getBatch([3])[1].data], "pure");
  assertEquals(ds.getBatch([]).map((f) => f.shape), [[0, 11], [0, 11]], "empty batch");
  const cut = CharDataSet.fromText(text, v, { seqLen: 11, limit: 4 });
  assertEquals(cut.len(), 4, "limited");
  assertEquals(cut.ids.length, 45, "keeps only what 4 windows read");
  assertEquals([...cut.getBatch([3])[1].data], [...ds.getBatch([3])[1].data], "same sample limited");
  assertThrows(() => ds.getBatch([ds.len()]), RangeError, "CharDataSet.getBatch", `index ${ds.len()}`);
});

Deno.test("CharDataSet refuses a bad seqLen or limit and text outside the vocabulary, naming the knob and value", () => {
  const v = CharVocab.fromText("abc");
  for (const seqLen of [0, -1, 2.5, NaN]) {
    assertThrows(() => CharDataSet.fromText("abcabc", v, { seqLen }), RangeError, "seqLen", String(seqLen));
  }
  for (const limit of [0, 6, 1.5]) {
    assertThrows(
      () => CharDataSet.fromText("abcabc", v, { seqLen: 1, limit, source: "toy" }),
      RangeError,
      "limit",
      "[1, 5]",
      "toy",
      String(limit),
    );
  }
  assertThrows(() => CharDataSet.fromText("abd", v, { seqLen: 1, source: "toy" }), RangeError, "toy", '"d"');
});
