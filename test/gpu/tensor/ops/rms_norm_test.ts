import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import { rmsNorm, rmsNormOp } from "../../../../src/tensor/ops/rms_norm.ts";
import { rmsNormRef } from "../../../reference/norm.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn } from "../../../util/random.ts";

const CASES: [number[], number[]][] = [
  [[7, 33], [33]],
  [[3, 5, 7], [5, 7]],
  [[1, 129], [129]],
  [[33, 3], [3]],
  [[2, 300], [300]], // longer than one workgroup
  // Edge cases of the segmented blocking (as norm_test.ts's layer norm cases). Feature dim
  // 2, not 1: at 1, dx = rstd w dy (1 - x²/(x² + eps)) cancels to ~eps/x² in any precision.
  [[1, 2], [2]],
  [[70, 2], [2]],
  [[13, 9], [9]],
  [[3, 4099], [4099]],
  [[1100, 8], [8]],
];

for (const affine of [true, false]) {
  gpuTest(`rmsNorm (weight: ${affine}) forward and gradients of x and weight match f64 reference`, async () => {
    const rng = mulberry32(180 + Number(affine));
    for (const [shape, ns] of CASES) {
      const len = count(ns), rows = count(shape) / len;
      const x = randn(count(shape), rng, 2), dy = randn(count(shape), rng);
      for (let i = 0; i < x.length; i++) x[i] += 1; // RMS norm does not centre: a mean must not matter
      const w = affine ? randn(len, rng) : undefined;
      const want = rmsNormRef(x, rows, len, w, 1e-5, dy);
      const inputs = [fromArray(x, shape), ...(w ? [fromArray(w, ns)] : [])];
      const { output, grads } = forwardBackward(
        rmsNormOp,
        inputs,
        { normalizedShape: ns, eps: 1e-5 },
        fromArray(dy, shape),
      );
      const tag = `rmsNorm [${shape}] over [${ns}]`;
      assertRelClose(await output.toArray(), want.y, 1e-4, `${tag} y`);
      assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `${tag} dx`);
      if (w) assertRelClose(await grads[1]!.toArray(), want.dw, 1e-4, `${tag} dw`);
      assertEquals(grads.length, inputs.length, `${tag} one gradient per input`);
    }
  });
}

gpuTest("rmsNorm rejects a weight of the wrong shape and a negative eps, naming them", () => {
  const x = fromArray(new Float32Array(12), [3, 4]);
  assertThrows(() => rmsNorm(x, [4], fromArray(new Float32Array(3), [3])), RangeError, "weight", "[3]", "[4]");
  assertThrows(() => rmsNorm(x, [4], undefined, -1), RangeError, "eps", "-1");
  assertThrows(() => rmsNorm(x, [5]), RangeError, "normalizedShape", "[5]");
});
