import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import { logSoftmax, logSoftmaxOp, softmax, softmaxOp } from "../../../../src/tensor/ops/softmax.ts";
import { softmaxRef } from "../../../reference/softmax.ts";
import { assert, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn } from "../../../util/random.ts";

/** |got - want| <= tol * max|scale| everywhere (for results that cancel far below their inputs). */
function assertScaledClose(
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  scale: ArrayLike<number>,
  tol: number,
  label: string,
) {
  let s = 0, worst = 0, at = 0;
  for (let i = 0; i < scale.length; i++) s = Math.max(s, Math.abs(scale[i]));
  for (let i = 0; i < want.length; i++) {
    const e = Math.abs(got[i] - want[i]);
    if (!(e <= worst)) [worst, at] = [e, i];
  }
  assert(worst <= tol * s, `${label}: error ${worst} > ${tol} * ${s} at [${at}]: got ${got[at]}, want ${want[at]}`);
}

const CASES: [number[], number][] = [
  [[1, 3], -1],
  [[7, 10], -1],
  [[33, 129], 1],
  [[3, 33, 7], 1], // middle dim: strided rows
  [[5, 7, 3], 0],
  [[257], 0],
  [[2, 300], -1], // longer than one workgroup
  [[7, 1], -1],
];

for (const log of [false, true]) {
  const name = log ? "logSoftmax" : "softmax";
  const op = log ? logSoftmaxOp : softmaxOp;
  gpuTest(`${name} forward and backward match f64 reference on odd shapes and any dim`, async () => {
    const rng = mulberry32(log ? 41 : 40);
    for (const [shape, dim] of CASES) {
      const x = randn(count(shape), rng, 3), dy = randn(count(shape), rng);
      const want = softmaxRef(x, shape, dim, dy, log);
      const { output, grads } = forwardBackward(op, [fromArray(x, shape)], { dim }, fromArray(dy, shape));
      assertRelClose(await output.toArray(), want.y, 1e-4, `${name} y [${shape}] dim ${dim}`);
      assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `${name} dx [${shape}] dim ${dim}`);
    }
  });

  gpuTest(`${name} is stable for logits around 1e3`, async () => {
    const rng = mulberry32(log ? 43 : 42);
    for (const [shape, dim] of [[[7, 129], -1], [[3, 10, 5], 1]] as [number[], number][]) {
      const x = randn(count(shape), rng, 1e3), dy = randn(count(shape), rng);
      const want = softmaxRef(x, shape, dim, dy, log);
      const { output, grads } = forwardBackward(op, [fromArray(x, shape)], { dim }, fromArray(dy, shape));
      const y = await output.toArray();
      assert(y.every(Number.isFinite), `${name} large logits: non-finite output`);
      assertRelClose(y, want.y, 1e-4, `${name} large y [${shape}]`);
      // NOTE: rows are nearly one-hot, so dx = y (dy - sum dy y) cancels to ~1e-5 at the max
      // while f32 carries sum dy y to ~1e-7 |dy|: judge dx against the scale of dy.
      assertScaledClose(await grads[0]!.toArray(), want.dx, dy, 1e-4, `${name} large dx [${shape}]`);
    }
  });
}

gpuTest("softmax and logSoftmax default to the last dim", async () => {
  const x = randn(12, mulberry32(44));
  const want = softmaxRef(x, [3, 4], -1, new Float32Array(12));
  assertRelClose(await softmax(fromArray(x, [3, 4])).toArray(), want.y, 1e-4, "softmax");
  const wantLog = softmaxRef(x, [3, 4], -1, new Float32Array(12), true);
  assertRelClose(await logSoftmax(fromArray(x, [3, 4])).toArray(), wantLog.y, 1e-4, "logSoftmax");
});

gpuTest("softmax rejects a bad dim, a scalar and a non-f32 tensor", () => {
  assertThrows(() => softmax(fromArray([1, 2, 3], [3]), 1), RangeError, "softmax", "dim 1");
  assertThrows(() => logSoftmax(fromArray([1, 2], [2]), -3), RangeError, "logSoftmax", "dim -3");
  assertThrows(() => softmax(fromArray([1], [])), TypeError, "softmax", "scalar");
  assertThrows(() => softmax(fromArray(new Int32Array([1, 2]))), TypeError, "softmax", "i32");
});
