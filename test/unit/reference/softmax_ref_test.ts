import { softmaxRef } from "../../reference/softmax.ts";
import { assertRelClose } from "../../util/assert.ts";
import { mulberry32, randn } from "../../util/random.ts";
import { numGrad } from "../../util/numerical_gradient.ts";

for (const log of [false, true]) {
  Deno.test(`${log ? "logSoftmax" : "softmax"} reference gradient matches central differences (last and middle dim)`, () => {
    const rng = mulberry32(log ? 5 : 4);
    for (const [shape, dim] of [[[3, 7], -1], [[2, 5, 3], 1], [[4, 2, 3], 0]] as [number[], number][]) {
      const n = shape.reduce((a, b) => a * b, 1);
      const x = Float64Array.from(randn(n, rng, 2)), dy = Float64Array.from(randn(n, rng));
      const want = numGrad((v) => softmaxRef(v, shape, dim, dy, log).y, x, dy, 1e-5);
      assertRelClose(softmaxRef(x, shape, dim, dy, log).dx, want, 1e-6, `dx [${shape}] dim ${dim}`);
    }
  });
}

Deno.test("softmax reference rows sum to 1 and log-softmax is its log", () => {
  const x = Float64Array.of(1, 2, 3, 1000, 999, -1000);
  const dy = new Float64Array(6);
  const p = softmaxRef(x, [2, 3], -1, dy).y, lp = softmaxRef(x, [2, 3], -1, dy, true).y;
  assertRelClose([p[0] + p[1] + p[2], p[3] + p[4] + p[5]], [1, 1], 1e-12, "row sums");
  assertRelClose(lp.map(Math.exp), p, 1e-12, "exp(log_softmax)");
});
