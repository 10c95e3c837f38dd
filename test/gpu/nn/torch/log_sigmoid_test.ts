/**
 * logSigmoid (src/tensor/ops/unary.ts, F.logSigmoid, nn.LogSigmoid): forward and gradient
 * match the f64 reference on odd shapes, through the op and through the tape, stay exact in
 * both tails where log(sigmoid(x)) would give -inf or lose every digit, and refuse non-f32.
 */
import { F, fromArray, LogSigmoid, Variable } from "../../../../src/index.ts";
import { ops } from "../../../../src/engine.ts";
import { unaryRef } from "../../../reference/unary.ts";
import { assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn } from "../../../util/random.ts";

gpuTest("logSigmoid forward and backward match the f64 reference on odd shapes", async () => {
  const rng = mulberry32(28);
  for (const shape of [[7], [33, 7], [5, 3, 9]]) {
    const n = count(shape);
    const x = randn(n, rng, 4), dy = randn(n, rng);
    const want = unaryRef("logSigmoid", x, dy);
    const { output, grads } = ops.forwardBackward(ops.logSigmoidOp, [fromArray(x, shape)], {}, fromArray(dy, shape));
    assertRelClose(await output.toArray(), want.y, 1e-4, `logSigmoid y ${shape}`);
    assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `logSigmoid dx ${shape}`);
  }
});

gpuTest("logSigmoid keeps each value's own relative accuracy in both tails (|x| up to 1e3)", async () => {
  const x = new Float32Array([-1000, -90, -30, -1e-3, 0, 1e-3, 15, 30, 90, 1000]);
  const y = await ops.logSigmoid(fromArray(x)).toArray();
  const want = unaryRef("logSigmoid", x, x).y;
  // Each value against itself: at x = 30 the answer is -9.4e-14, far below the others' scale.
  for (let i = 0; i < x.length; i++) assertRelClose([y[i]], [want[i]], 1e-5, `logSigmoid(${x[i]})`);
});

gpuTest("LogSigmoid and F.logSigmoid record the op: the tape's input gradient is sigmoid(-x)·dy", async () => {
  const rng = mulberry32(29);
  const shape = [3, 11], n = count(shape);
  const x = randn(n, rng, 3), dy = randn(n, rng);
  const want = unaryRef("logSigmoid", x, dy);
  for (
    const [label, f] of [["LogSigmoid", (v: Variable) => new LogSigmoid().forward(v)], [
      "F.logSigmoid",
      F.logSigmoid,
    ]] as const
  ) {
    const input = new Variable(fromArray(x, shape), true);
    const y = f(input);
    y.backward(fromArray(dy, shape));
    assertRelClose(await y.data.toArray(), want.y, 1e-4, `${label} y`);
    assertRelClose(await input.grad!.toArray(), want.dx, 1e-4, `${label} dx`);
  }
});

gpuTest("logSigmoid refuses a non-f32 input, naming the op and the dtype", () => {
  assertThrows(
    () => ops.logSigmoid(fromArray(new Int32Array([1, 2]), [2], { dtype: "i32" })),
    TypeError,
    "logSigmoid",
    "i32",
  );
});
