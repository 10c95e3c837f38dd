import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import * as B from "../../../../src/tensor/ops/binary.ts";
import { binaryRef } from "../../../reference/broadcast.ts";
import { assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn, uniform } from "../../../util/random.ts";

const PAIRS: [number[], number[]][] = [
  [[7], [7]],
  [[33, 7], [7]],
  [[33, 1], [1, 7]],
  [[129], []],
  [[3, 1, 5], [4, 1]],
  [[1], [257]],
  [[2, 3, 1, 2, 1, 3], [3, 2, 2, 1]],
];

const OPS: Record<string, typeof B.addOp> = {
  add: B.addOp, sub: B.subOp, mul: B.mulOp, div: B.divOp, pow: B.powOp, maximum: B.maximumOp, minimum: B.minimumOp,
};

for (const name of Object.keys(OPS)) {
  gpuTest(`binary ${name} with broadcasting matches f64 reference (output and both gradients)`, async () => {
    const rng = mulberry32(name.charCodeAt(0) * 13 + name.length);
    for (const [sa, sb] of PAIRS) {
      const positive = name === "pow" || name === "div";
      const a = positive ? uniform(count(sa), rng, 0.2, 3) : randn(count(sa), rng);
      const b = name === "pow" ? uniform(count(sb), rng, -2, 2) : name === "div" ? uniform(count(sb), rng, 0.5, 3) : randn(count(sb), rng);
      const want = binaryRef(name, a, sa, b, sb, new Float64Array(0));
      const dy = randn(want.y.length, rng);
      const ref = binaryRef(name, a, sa, b, sb, dy);
      const { output, grads } = forwardBackward(OPS[name], [fromArray(a, sa), fromArray(b, sb)], undefined, fromArray(dy, ref.shape));
      const tag = `${name} [${sa}]x[${sb}]`;
      assertRelClose(await output.toArray(), ref.y, 1e-4, `${tag} y`);
      assertRelClose(await grads[0]!.toArray(), ref.da, 1e-4, `${tag} da`);
      assertRelClose(await grads[1]!.toArray(), ref.db, 1e-4, `${tag} db`);
    }
  });
}

gpuTest("maximum and minimum split the gradient at ties, as PyTorch", async () => {
  const a = fromArray([1, 2, 3]), b = fromArray([1, 5, 0]), dy = fromArray([1, 1, 1]);
  const { grads } = forwardBackward(B.maximumOp, [a, b], undefined, dy);
  assertRelClose(await grads[0]!.toArray(), [0.5, 0, 1], 0, "max da");
  assertRelClose(await grads[1]!.toArray(), [0.5, 1, 0], 0, "max db");
});

gpuTest("comparisons give 0/1 and where selects with broadcasting", async () => {
  const a = fromArray([1, 2, 3, 4], [2, 2]), b = fromArray([2, 2], [2]);
  assertRelClose(await B.lt(a, b).toArray(), [1, 0, 0, 0], 0, "lt");
  assertRelClose(await B.le(a, b).toArray(), [1, 1, 0, 0], 0, "le");
  assertRelClose(await B.gt(a, b).toArray(), [0, 0, 1, 1], 0, "gt");
  assertRelClose(await B.ge(a, b).toArray(), [0, 1, 1, 1], 0, "ge");
  assertRelClose(await B.eq(a, b).toArray(), [0, 1, 0, 0], 0, "eq");
  assertRelClose(await B.ne(a, b).toArray(), [1, 0, 1, 1], 0, "ne");
  const cond = fromArray(new Int32Array([1, 0]), [2]);
  assertRelClose(await B.where(cond, a, -1).toArray(), [1, -1, 3, -1], 0, "where");
  const { grads } = forwardBackward(B.whereOp, [a, fromArray([9], [1]), fromArray([0, 1], [2])], undefined, fromArray([1, 2, 3, 4], [2, 2]));
  assertRelClose(await grads[0]!.toArray(), [0, 2, 0, 4], 0, "where da");
  assertRelClose(await grads[1]!.toArray(), [4], 0, "where db");
});

gpuTest("binary ops name both shapes when they do not broadcast", () => {
  assertThrows(() => B.add(fromArray([1, 2, 3]), fromArray([1, 2])), RangeError, "add", "[3]", "[2]");
});
