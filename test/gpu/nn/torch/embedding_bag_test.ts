/**
 * embeddingBag (src/tensor/ops/embedding_bag.ts, F.embeddingBag, nn.EmbeddingBag): output and the
 * weight gradient match the f64 reference (test/reference/embedding_bag.ts) for each mode,
 * with a padding row, repeated indices and empty bags (zeros, as PyTorch), and PyTorch's own
 * values through the tape; the module's init and refusals naming the argument.
 */
import { EmbeddingBag, F, fromArray, Variable } from "../../../../src/index.ts";
import { ops } from "../../../../src/engine.ts";
import { embeddingBagRef } from "../../../reference/embedding_bag.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { mulberry32, randint, randn } from "../../../util/random.ts";
import { golden, values } from "./golden.ts";

for (const mode of ["sum", "mean", "max"] as const) {
  for (const pad of [-1, 4]) {
    gpuTest(`embeddingBag ${mode}, paddingIdx ${pad}: output and weight gradient match the f64 reference`, async () => {
      const rng = mulberry32(2806 + pad + mode.length);
      const V = 11, D = 7;
      const w = randn(V * D, rng), index = randint(23, V, rng);
      const offsets = [0, 5, 5, 9, 16, 16, 22]; // bags 1 and 4 empty, the last one of 1
      const dy = randn(offsets.length * D, rng);
      const want = embeddingBagRef(w, [V, D], index, offsets, mode, pad, dy);
      const opts = { mode, paddingIdx: pad < 0 ? undefined : pad };
      const r = ops.bagInputs([V, D], index, offsets, ops.fromArray([0], [1]).device);
      const { output, grads } = ops.forwardBackward(
        ops.embeddingBagOp,
        [fromArray(w, [V, D]), r.index, r.offsets],
        opts,
        fromArray(dy, [offsets.length, D]),
      );
      assertEquals(output.shape, [offsets.length, D], "output shape");
      assertRelClose(await output.toArray(), want.y, 1e-5, "y");
      assertRelClose(await grads[0]!.toArray(), want.dw, 1e-5, "dw");
    });
  }
}

for (const g of golden.embeddingBag) {
  gpuTest(`F.embeddingBag matches PyTorch golden values: ${g.name}`, async () => {
    const w = new Variable(fromArray(values(g.w), g.w.shape), true);
    const index = fromArray(Int32Array.from(g.index.data), g.index.shape, { dtype: "i32" });
    const y = F.embeddingBag(w, index, g.offsets, g.options as ops.EmbeddingBagOptions);
    y.backward(fromArray(values(g.dy), g.dy.shape));
    assertEquals(y.shape, g.y.shape, `${g.name} shape`);
    assertRelClose(await y.data.toArray(), values(g.y), 1e-5, `${g.name} y`);
    assertRelClose(await w.grad!.toArray(), values(g.dw), 1e-5, `${g.name} dw`);
  });
}

gpuTest("EmbeddingBag: mean by default, N(0, 1) init with the padding row zeroed, [B, D] out", async () => {
  const m = new EmbeddingBag(6, 3, { paddingIdx: 1, seed: 4 });
  assertEquals(m.mode, "mean", "default mode");
  const w = await m.weight.data.toArray();
  assertRelClose(w.slice(3, 6), [0, 0, 0], 0, "padding row");
  assert(w.some((v) => Math.abs(v) > 0.5), "other rows drawn");
  const y = m.forward([0, 1, 2, 3], [0, 2]);
  assertEquals(y.shape, [2, 3], "1-D with offsets");
  const got = await y.data.toArray();
  assertRelClose(got.slice(0, 3), w.slice(0, 3), 1e-6, "the padding row is left out of the mean");
  assertEquals(m.forward(fromArray(new Int32Array(8), [4, 2], { dtype: "i32" })).shape, [4, 3], "2-D input");
});

gpuTest("embeddingBag refuses bad modes, offsets and indices, naming the argument and the value", () => {
  const m = new EmbeddingBag(5, 2, { mode: "sum" });
  assertThrows(
    () => new EmbeddingBag(5, 2, { mode: "median" as "sum" }),
    RangeError,
    "EmbeddingBag",
    "mode",
    '"median"',
  );
  assertThrows(() => new EmbeddingBag(5, 2, { paddingIdx: 5 }), RangeError, "paddingIdx", "-5..4", "5");
  assertThrows(() => m.forward([1, 2, 3], [1]), RangeError, "offsets", "start at 0", "got 1 at position 0");
  assertThrows(() => m.forward([1, 2, 3], [0, 2, 1]), RangeError, "offsets", "ascend", "got 1 at position 2");
  assertThrows(() => m.forward([1, 2, 3], [0, 4]), RangeError, "offsets", "input length 3", "got 4");
  assertThrows(() => m.forward([1, 2, 3]), RangeError, "offsets are required", "[3]");
  assertThrows(() => m.forward([1, 7], [0]), RangeError, "embeddingBag", "index 7", "[0, 5)");
});
