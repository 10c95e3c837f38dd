import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import * as R from "../../../../src/tensor/ops/reduce.ts";
import { reduceRef } from "../../../reference/broadcast.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn } from "../../../util/random.ts";

const CASES: [number[], number[]][] = [
  [[7], [0]],
  [[33, 7], [1]],
  [[33, 7], [0]],
  [[129, 3], [0, 1]],
  [[3, 5, 7, 2], [0, 2, 3]],
  [[2, 3, 4, 5, 3], [1, 3]],
  [[1, 257], [1]],
  [[5, 1, 3], [1]],
  // Many outputs, short ranges: sum/mean take the one-thread-per-output kernel.
  [[64, 257], [0]],
  [[3, 129, 7], [0, 2]],
];

const OPS = { sum: R.sumOp, mean: R.meanOp, var: R.varOp, max: R.maxOp, min: R.minOp };

for (const kind of ["sum", "mean", "var", "max", "min"] as const) {
  gpuTest(`reduce ${kind} over any dims, keepdim or not, matches f64 reference with its gradient`, async () => {
    const rng = mulberry32(kind.length * 101);
    for (const [shape, dims] of CASES) {
      for (const keepdim of [false, true]) {
        const x = randn(count(shape), rng);
        const nOut = count(shape.map((d, i) => (dims.includes(i) ? 1 : d)));
        const dy = randn(nOut, rng);
        const want = reduceRef(kind, x, shape, dims, dy);
        const outShape = keepdim ? shape.map((d, i) => (dims.includes(i) ? 1 : d)) : shape.filter((_, i) => !dims.includes(i));
        const { output, grads } = forwardBackward(OPS[kind], [fromArray(x, shape)], { dims, keepdim }, fromArray(dy, outShape));
        const tag = `${kind} [${shape}] dims [${dims}] keepdim ${keepdim}`;
        assertEquals(output.shape, outShape, `${tag} shape`);
        assertRelClose(await output.toArray(), want.y, 1e-4, `${tag} y`);
        assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `${tag} dx`);
      }
    }
  });
}

gpuTest("argmax and argmin give the first extreme along a dim", async () => {
  const x = fromArray([1, 5, 5, 0, -2, 3, 3, -2], [2, 4]);
  assertEquals([...await R.argmax(x, 1).toArray()], [1, 1], "argmax");
  assertEquals([...await R.argmin(x, 1).toArray()], [3, 0], "argmin");
  assertEquals([...await R.argmax(x).toArray()], [1], "argmax flat");
});

gpuTest("sumTo reduces a broadcast gradient back to the input shape", async () => {
  const g = fromArray([1, 2, 3, 4, 5, 6], [2, 3]);
  assertRelClose(await R.sumTo(g, [3]).toArray(), [5, 7, 9], 0, "to [3]");
  assertRelClose(await R.sumTo(g, [2, 1]).toArray(), [6, 15], 0, "to [2,1]");
  assertRelClose(await R.sumTo(g, []).toArray(), [21], 0, "to []");
});

gpuTest("reductions name the bad dim", () => {
  assertThrows(() => R.sum(fromArray([1, 2]), 2), RangeError, "sum", "dim 2");
  assertThrows(() => R.sum(fromArray([1, 2]), [0, 0]), RangeError, "repeat");
});

gpuTest("long reductions split over workgroups (sum, mean of 200,003 and of [3, 70001] over dim 1) match f64", async () => {
  const rng = mulberry32(404);
  for (const [shape, dims] of [[[200003], [0]], [[3, 70001], [1]], [[70001, 3], [0]]] as [number[], number[]][]) {
    const x = randn(count(shape), rng);
    for (const kind of ["sum", "mean"] as const) {
      const want = reduceRef(kind, x, shape, dims, new Float64Array(count(shape)));
      const got = await (kind === "sum" ? R.sum : R.mean)(fromArray(x, shape), dims).toArray();
      assertRelClose(got, want.y, 1e-4, `${kind} [${shape}] over [${dims}]`);
    }
  }
});
