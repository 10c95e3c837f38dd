import { clipGradNorm, clipGradValue } from "../../../src/optim/mod.ts";
import { clipGradNormRef, clipGradValueRef } from "../../reference/optim.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { parametersOf, problem, release, setGrads } from "./harness.ts";

// [257, 129] has 33,153 elements: 130 workgroups of 256, so its partials are capped (64)
// and each workgroup strides over several blocks.
const SHAPES = [[7], [33, 7], [3, 5, 3], [257, 129], [1]];

const CASES: [number, number][] = [
  [1, 2], // clips
  [1e4, 2], // leaves the gradients as they are
  [0.5, 1],
  [0.3, Infinity],
  [2, 3],
];

for (const [k, [maxNorm, normType]] of CASES.entries()) {
  gpuTest(
    `clipGradNorm(maxNorm ${maxNorm}, p ${normType}) matches the reference without a readback`,
    async (device) => {
      const pr = problem(500 + k, 1, 1, SHAPES);
      const params = parametersOf(pr);
      setGrads(params, pr.grads[0]);
      const submits = device.submits;
      const norm = clipGradNorm(params, maxNorm, normType);
      assertEquals(device.submits, submits, "submits during clipGradNorm (nothing flushed, nothing read)");
      assertEquals(norm.shape, [], "norm is a scalar");
      const want = clipGradNormRef(pr.grads[0], maxNorm, normType);
      assertRelClose([await norm.item()], [want.norm], 1e-4, "total norm");
      for (let j = 0; j < params.length; j++) {
        assertRelClose(await params[j].grad!.toF32(), want.grads[j], 1e-4, `clipped grad ${j} ${SHAPES[j]}`);
      }
      release(params);
    },
  );
}

gpuTest("clipGradNorm skips parameters without a gradient and returns 0 when none has one", async () => {
  const pr = problem(510, 1, 1, [[5], [9]]);
  const params = parametersOf(pr);
  assertEquals(await clipGradNorm(params, 1).item(), 0, "norm of no gradients");
  setGrads(params, pr.grads[0]);
  params[0].zeroGrad();
  const want = clipGradNormRef([pr.grads[0][1]], 0.5);
  assertRelClose([await clipGradNorm(params, 0.5).item()], [want.norm], 1e-4, "norm of the one gradient");
  assertRelClose(await params[1].grad!.toF32(), want.grads[0], 1e-4, "clipped grad");
  release(params);
});

gpuTest("clipGradValue clamps every gradient in place without a readback", async (device) => {
  const pr = problem(511, 1, 2, SHAPES);
  const params = parametersOf(pr);
  setGrads(params, pr.grads[0]);
  const submits = device.submits;
  clipGradValue(params, 0.7);
  assertEquals(device.submits, submits, "submits during clipGradValue");
  const want = clipGradValueRef(pr.grads[0], 0.7);
  for (let j = 0; j < params.length; j++) assertRelClose(await params[j].grad!.toF32(), want[j], 1e-6, `grad ${j}`);
  release(params);
});

gpuTest("clipping rejects out-of-range arguments naming them", () => {
  const params = parametersOf(problem(512, 1, 1, [[3]]));
  assertThrows(() => clipGradNorm(params, -1), RangeError, "clipGradNorm", "maxNorm", "-1");
  assertThrows(() => clipGradNorm(params, NaN), RangeError, "maxNorm", "NaN");
  assertThrows(() => clipGradNorm(params, 1, 0), RangeError, "normType", "got 0");
  assertThrows(() => clipGradNorm(params, 1, -2), RangeError, "normType", "-2");
  assertThrows(() => clipGradValue(params, -0.1), RangeError, "clipGradValue", "clipValue", "-0.1");
  release(params);
});
