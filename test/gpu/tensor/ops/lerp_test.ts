import { fromArray, lerpWithNorms } from "../../../../src/tensor/mod.ts";
import { assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { mulberry32, randn } from "../../../util/random.ts";

gpuTest("lerpWithNorms blends and measures Σ(pre−post)², Σpre², Σpost² against f64 (odd and long sizes)", async () => {
  const rng = mulberry32(21);
  for (const n of [1, 7, 257, 4097, 100003]) {
    for (const alpha of [1, 0.5, 0.125]) {
      const a = randn(n, rng), b = randn(n, rng);
      const { out, norms } = lerpWithNorms(fromArray(a), fromArray(b), alpha);
      const want = new Float64Array(n);
      let dd = 0, aa = 0, bb = 0;
      for (let i = 0; i < n; i++) {
        want[i] = (1 - alpha) * a[i] + alpha * b[i];
        dd += (a[i] - b[i]) ** 2;
        aa += a[i] ** 2;
        bb += b[i] ** 2;
      }
      const got = await out.toArray();
      if (alpha === 1) assertRelClose(got, b, 0, `n ${n}: alpha 1 copies post exactly`);
      else assertRelClose(got, want, 1e-6, `n ${n} alpha ${alpha} blend`);
      assertRelClose(await norms.toArray(), [dd, aa, bb], 1e-4, `n ${n} norms`);
    }
  }
});

gpuTest("lerpWithNorms names both shapes and the bad alpha", () => {
  assertThrows(() => lerpWithNorms(fromArray([1, 2]), fromArray([1, 2, 3]), 1), RangeError, "[2]", "[3]");
  assertThrows(() => lerpWithNorms(fromArray([1]), fromArray([1]), 1.5), RangeError, "alpha", "1.5");
});
