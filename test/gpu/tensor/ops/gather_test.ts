import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import * as I from "../../../../src/tensor/ops/gather.ts";
import { embeddingRef, gatherRef, indexSelectRef, oneHotRef } from "../../../reference/shape.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randint, randn } from "../../../util/random.ts";

/** [x shape, dim, index count]: more indices than the dim's size in most cases, so indices repeat. */
const SELECTS: [number[], number, number][] = [
  [[33, 7], 0, 129],
  [[7, 257], -1, 7],
  [[5, 33, 3], 1, 33],
  [[1, 1, 7], 1, 5],
  [[129], 0, 257],
  // k > 1024: the backward's sort runs one launch per bitonic pass, not in one workgroup.
  [[65, 3], 0, 1500],
];

gpuTest("indexSelect forward and backward match f64 reference with repeated indices", async () => {
  const rng = mulberry32(21);
  for (const [shape, dim, k] of SELECTS) {
    const d = dim < 0 ? dim + shape.length : dim;
    const x = randn(count(shape), rng), index = randint(k, shape[d], rng);
    const out = shape.map((n, i) => (i === d ? k : n));
    const dy = randn(count(out), rng);
    const want = indexSelectRef(x, shape, dim, index, dy);
    const { output, grads } = forwardBackward(
      I.indexSelectOp,
      [fromArray(x, shape), fromArray(index)],
      { dim },
      fromArray(dy, out),
    );
    const tag = `indexSelect [${shape}] dim ${dim} with ${k} indices`;
    assertEquals(output.shape, out, `${tag} shape`);
    assertRelClose(await output.toArray(), want.y, 0, `${tag} y`);
    assertEquals(grads[1], null, `${tag} no index gradient`);
    assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `${tag} dx`);
  }
});

gpuTest("indexSelect gives zeros and no gradient for out-of-range indices", async () => {
  const rng = mulberry32(22);
  const shape = [7, 33],
    x = randn(count(shape), rng),
    index = Int32Array.from([3, -1, 7, 3, 6]),
    dy = randn(5 * 33, rng);
  const want = indexSelectRef(x, shape, 0, index, dy);
  const { output, grads } = forwardBackward(
    I.indexSelectOp,
    [fromArray(x, shape), fromArray(index)],
    { dim: 0 },
    fromArray(dy, [5, 33]),
  );
  assertRelClose(await output.toArray(), want.y, 0, "y");
  assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, "dx");
  const none = forwardBackward(
    I.indexSelectOp,
    [fromArray(x, shape), fromArray(new Int32Array(0))],
    { dim: 1 },
    fromArray([], [7, 0]),
  );
  assertEquals(none.output.shape, [7, 0], "empty index shape");
  assertRelClose(await none.grads[0]!.toArray(), new Float64Array(7 * 33), 0, "empty index dx");
});

/** [x shape, dim, index shape]: index sizes may be smaller than x's off `dim`, larger along it. */
const GATHERS: [number[], number, number[]][] = [
  [[7, 33], 1, [7, 129]],
  [[33, 7], 0, [129, 5]],
  [[5, 7, 3], -2, [5, 33, 2]],
  [[257], 0, [33]],
  [[2, 3, 1, 4, 5, 3], 4, [2, 1, 1, 3, 7, 3]],
  [[7, 1], -1, [7, 1]],
];

gpuTest("gather forward and backward match f64 reference with repeated indices", async () => {
  const rng = mulberry32(23);
  for (const [shape, dim, ishape] of GATHERS) {
    const d = dim < 0 ? dim + shape.length : dim;
    const x = randn(count(shape), rng), index = randint(count(ishape), shape[d], rng), dy = randn(count(ishape), rng);
    const want = gatherRef(x, shape, dim, index, ishape, dy);
    const { output, grads } = forwardBackward(
      I.gatherOp,
      [fromArray(x, shape), fromArray(index, ishape)],
      { dim },
      fromArray(dy, ishape),
    );
    const tag = `gather [${shape}] dim ${dim} index [${ishape}]`;
    assertEquals(output.shape, ishape, `${tag} shape`);
    assertRelClose(await output.toArray(), want.y, 0, `${tag} y`);
    assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `${tag} dx`);
  }
  const xi = Int32Array.from({ length: 7 * 5 }, (_, i) => -3 * i);
  const gi = Int32Array.from([4, 0, 4, 2, 1, 3, 0]);
  const yi = I.gather(fromArray(xi, [7, 5]), 1, fromArray(gi, [7, 1]));
  assertEquals([...await yi.toArray()], [...gi].map((c, r) => -3 * (r * 5 + c)), "gather of i32 values");
});

gpuTest("oneHot matches reference; out-of-range indices give all-zero rows", async () => {
  const rng = mulberry32(24);
  const index = randint(7 * 33, 12, rng).map((v) => v - 1); // -1 and 10 fall outside 10 classes
  const y = I.oneHot(fromArray(index, [7, 33]), 10);
  assertEquals([y.shape, y.dtype], [[7, 33, 10], "f32"], "shape and dtype");
  assertRelClose(await y.toArray(), oneHotRef(index, 10), 0, "y");
  assert([...index].some((v) => v < 0) && [...index].some((v) => v >= 10), "the input has out-of-range indices");
});

gpuTest(
  "embedding forward and backward match f64 reference; repeated indices sum; paddingIdx row gets none",
  async () => {
    const rng = mulberry32(25);
    const v = 33, dd = 7, ishape = [5, 129];
    const w = randn(v * dd, rng), index = randint(count(ishape), v, rng), dy = randn(count(ishape) * dd, rng);
    for (const paddingIdx of [undefined, 3, -1]) {
      const want = embeddingRef(w, v, dd, index, dy, paddingIdx);
      const { output, grads } = forwardBackward(I.embeddingOp, [fromArray(w, [v, dd]), fromArray(index, ishape)], {
        paddingIdx,
      }, fromArray(dy, [...ishape, dd]));
      const tag = `embedding paddingIdx ${paddingIdx}`;
      assertEquals(output.shape, [...ishape, dd], `${tag} shape`);
      assertRelClose(await output.toArray(), want.y, 0, `${tag} y`);
      const dw = await grads[0]!.toArray();
      assertRelClose(dw, want.dx, 1e-4, `${tag} dw`);
      if (paddingIdx !== undefined) {
        const row = (paddingIdx + v) % v;
        assert([...index].includes(row), `${tag}: the padding row is used`);
        assertEquals([...dw.slice(row * dd, (row + 1) * dd)], new Array(dd).fill(0), `${tag} padding row`);
      }
    }
  },
);

gpuTest("index ops reject an index that is not i32 and bad shapes, naming op, dtype and shapes", () => {
  const x = fromArray(new Float32Array(12), [3, 4]);
  const fi = fromArray([0, 1], [2]);
  assertThrows(() => I.indexSelect(x, 0, fi), TypeError, "indexSelect", "i32", "f32");
  assertThrows(() => I.gather(x, 0, fromArray([0, 1], [1, 2])), TypeError, "gather", "i32", "f32");
  assertThrows(() => I.oneHot(fi, 3), TypeError, "oneHot", "i32", "f32");
  assertThrows(() => I.embedding(x, fi), TypeError, "embedding", "i32", "f32");
  const ii = fromArray(Int32Array.from([0, 1]), [2]);
  assertThrows(() => I.indexSelect(x, 2, ii), RangeError, "indexSelect", "dim 2", "[3,4]");
  assertThrows(
    () => I.gather(x, 1, fromArray(Int32Array.from([0, 1, 0, 1, 0, 1, 0, 1]), [4, 2])),
    RangeError,
    "gather",
    "[4,2]",
    "[3,4]",
  );
  assertThrows(() => I.oneHot(ii, 0), RangeError, "oneHot", "numClasses", "0");
  assertThrows(() => I.embedding(x, ii, 3), RangeError, "embedding", "paddingIdx", "3");
});
