/** The shape/indexing references' gradients agree with central differences of their forward (f64, no GPU). */
import {
  catRef,
  embeddingRef,
  expandRef,
  gatherRef,
  indexSelectRef,
  narrowRef,
  oneHotRef,
  permuteRef,
  stackRef,
} from "../../reference/shape.ts";
import { assert, assertEquals, assertRelClose } from "../../util/assert.ts";
import { numGrad } from "../../util/numerical_gradient.ts";
import { count, mulberry32, randint, randn } from "../../util/random.ts";

const rng = mulberry32(1234);

Deno.test("permuteRef gradient matches central differences on a 4-D tensor", () => {
  const shape = [2, 3, 1, 4], dims = [3, 0, -2, 1];
  const x = randn(count(shape), rng), dy = randn(count(shape), rng);
  const r = permuteRef(x, shape, dims, dy);
  assertEquals(r.shape, [4, 2, 1, 3], "shape");
  assertRelClose(r.dx, numGrad((v) => permuteRef(v, shape, dims, dy).y, x, dy, 1e-3), 1e-8, "dx");
});

Deno.test("expandRef gradient matches central differences with a new leading dim and size-1 dims", () => {
  const from = [3, 1, 2], to = [2, 3, 4, 2];
  const x = randn(count(from), rng), dy = randn(count(to), rng);
  const r = expandRef(x, from, to, dy);
  assertRelClose(r.dx, numGrad((v) => expandRef(v, from, to, dy).y, x, dy, 1e-3), 1e-8, "dx");
});

Deno.test("narrowRef gradient matches central differences", () => {
  const shape = [3, 5, 2];
  const x = randn(count(shape), rng), dy = randn(3 * 2 * 2, rng);
  const r = narrowRef(x, shape, -2, 1, 2, dy);
  assertEquals(r.shape, [3, 2, 2], "shape");
  assertRelClose(r.dx, numGrad((v) => narrowRef(v, shape, -2, 1, 2, dy).y, x, dy, 1e-3), 1e-8, "dx");
});

Deno.test("catRef and stackRef gradients match central differences for each input", () => {
  const shapes = [[2, 1, 3], [2, 4, 3], [2, 2, 3]];
  const xs = shapes.map((s) => randn(count(s), rng));
  const dy = randn(2 * 7 * 3, rng);
  const r = catRef(xs, shapes, 1, dy);
  assertEquals(r.shape, [2, 7, 3], "cat shape");
  shapes.forEach((_, k) => {
    const f = (v: Float64Array) => catRef(xs.map((x, j) => (j === k ? v : x)), shapes, 1, dy).y;
    assertRelClose(r.dxs[k], numGrad(f, xs[k], dy, 1e-3), 1e-8, `cat dx${k}`);
  });
  const same = [randn(6, rng), randn(6, rng)], dys = randn(12, rng);
  const s = stackRef(same, [2, 3], -1, dys);
  assertEquals(s.shape, [2, 3, 2], "stack shape");
  same.forEach((_, k) => {
    const f = (v: Float64Array) => stackRef(same.map((x, j) => (j === k ? v : x)), [2, 3], -1, dys).y;
    assertRelClose(s.dxs[k], numGrad(f, same[k], dys, 1e-3), 1e-8, `stack dx${k}`);
  });
});

Deno.test("indexSelectRef and gatherRef gradients match central differences with repeated indices", () => {
  const shape = [4, 3, 2];
  const x = randn(count(shape), rng);
  const index = Int32Array.from([2, 0, 2, 2, 1]);
  const dy = randn(4 * 5 * 2, rng);
  const r = indexSelectRef(x, shape, 1, index, dy);
  assertRelClose(r.dx, numGrad((v) => indexSelectRef(v, shape, 1, index, dy).y, x, dy, 1e-3), 1e-8, "indexSelect dx");
  const ishape = [3, 5, 2];
  const gi = randint(count(ishape), 3, rng);
  const gdy = randn(count(ishape), rng);
  const g = gatherRef(x, shape, 1, gi, ishape, gdy);
  assertRelClose(g.dx, numGrad((v) => gatherRef(v, shape, 1, gi, ishape, gdy).y, x, gdy, 1e-3), 1e-8, "gather dx");
});

Deno.test("embeddingRef gradient matches central differences; the padding row gets none", () => {
  const v = 5, d = 3, index = Int32Array.from([1, 4, 1, 0, 4, 4]);
  const w = randn(v * d, rng), dy = randn(index.length * d, rng);
  const r = embeddingRef(w, v, d, index, dy);
  assertRelClose(r.dx, numGrad((u) => embeddingRef(u, v, d, index, dy).y, w, dy, 1e-3), 1e-8, "dx");
  const p = embeddingRef(w, v, d, index, dy, -1);
  assertRelClose(p.y, r.y, 0, "padding does not change the forward");
  for (let i = 0; i < v * d; i++) assertEquals(p.dx[i], i >= 4 * d ? 0 : r.dx[i], `dx[${i}]`);
  assert(r.dx.slice(4 * d).some((g) => g !== 0), "row 4 has a gradient without padding");
});

Deno.test("oneHotRef sets one 1 per row and none for out-of-range indices", () => {
  const y = oneHotRef(Int32Array.from([2, 0, 3, -1]), 3);
  assertEquals([...y], [0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0], "y");
});
