/**
 * nn.Embedding's paddingIdx as PyTorch's padding_idx (src/nn/embedding.ts): the row is zeros at
 * init (`nn.Embedding(10, 3, padding_idx=0).weight[0]` is zeros) while every other row is the
 * same N(0, 1) draw as without it, a negative index counts from the end, the row gets no
 * gradient (the rest match the f64 reference), a value loaded into it is looked up as it is,
 * and an out-of-range paddingIdx is refused at construction, naming it.
 */
import { Embedding, fromArray, Variable } from "../../../src/index.ts";
import { embeddingRef } from "../../reference/shape.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randint, randn } from "../../util/random.ts";

const rows = (w: ArrayLike<number>, d: number, r: number) => Array.from(w).slice(r * d, (r + 1) * d);

for (const [paddingIdx, row] of [[0, 0], [4, 4], [-1, 9]]) {
  gpuTest(`Embedding(10, 3, paddingIdx ${paddingIdx}): row ${row} zeros at init, the others N(0, 1) as without it`, async () => {
    const plain = await new Embedding(10, 3, { seed: 7 }).weight.data.toArray();
    const padded = new Embedding(10, 3, { seed: 7, paddingIdx });
    const w = await padded.weight.data.toArray();
    assertEquals(rows(w, 3, row), [0, 0, 0], `row ${row}`);
    assert(rows(plain, 3, row).some((v) => v !== 0), "the draw there was not zero");
    for (let r = 0; r < 10; r++) if (r !== row) assertEquals(rows(w, 3, r), rows(plain, 3, r), `row ${r} as without paddingIdx`);
    assertEquals(padded.paddingIdx, paddingIdx, "paddingIdx as given");
  });
}

gpuTest("Embedding with paddingIdx: the padding row gets no gradient, the others match the f64 reference", async () => {
  const rng = mulberry32(2831);
  const emb = new Embedding(7, 5, { seed: 3, paddingIdx: 2 });
  const index = randint(12, 7, rng);
  index[0] = index[5] = 2; // the padding row looked up twice
  const dy = randn(12 * 5, rng);
  const y = emb.forward(fromArray(index, [3, 4], { dtype: "i32" }));
  y.backward(fromArray(dy, [3, 4, 5]));
  const want = embeddingRef(await emb.weight.data.toArray(), 7, 5, index, dy, 2);
  assertEquals(y.shape, [3, 4, 5], "shape");
  assertRelClose(await y.toArray(), want.y, 0, "output");
  assertEquals(rows(await y.toArray(), 5, 0), [0, 0, 0, 0, 0], "the padding row looks up zeros");
  const dw = await emb.weight.grad!.toArray();
  assertEquals(rows(dw, 5, 2), [0, 0, 0, 0, 0], "no gradient for the padding row");
  assertRelClose(dw, want.dx, 1e-6, "weight gradient");
});

gpuTest("Embedding: a value loaded into the padding row is looked up; a paddingIdx out of range is refused", async () => {
  const emb = new Embedding(4, 2, { paddingIdx: 1 });
  const table = [1, 2, 3, 4, 5, 6, 7, 8];
  emb.loadStateDict(new Map([["weight", fromArray(table, [4, 2])]]));
  assertEquals(Array.from(await emb.forward(new Variable(fromArray(new Int32Array([1, 3]), [2], { dtype: "i32" }))).toArray()), [3, 4, 7, 8], "rows 1, 3");
  assertThrows(() => new Embedding(4, 2, { paddingIdx: 4 }), RangeError, "paddingIdx", "-4..3", "4");
  assertThrows(() => new Embedding(4, 2, { paddingIdx: -5 }), RangeError, "paddingIdx", "-5");
  assertThrows(() => new Embedding(4, 2, { paddingIdx: 1.5 }), RangeError, "paddingIdx", "1.5");
});
