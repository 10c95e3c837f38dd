import { batchNormRef, layerNormRef } from "../../reference/norm.ts";
import { assertRelClose } from "../../util/assert.ts";
import { mulberry32, randn, uniform } from "../../util/random.ts";
import { numGrad } from "../../util/numerical_gradient.ts";

Deno.test("layerNorm reference gradients (x, weight, bias) match central differences", () => {
  const rng = mulberry32(21);
  const rows = 5, len = 7, eps = 1e-5;
  const x = Float64Array.from(randn(rows * len, rng, 2)), dy = Float64Array.from(randn(rows * len, rng));
  const w = Float64Array.from(randn(len, rng)), b = Float64Array.from(randn(len, rng));
  const got = layerNormRef(x, rows, len, w, b, eps, dy);
  assertRelClose(got.dx, numGrad((v) => layerNormRef(v, rows, len, w, b, eps, dy).y, x, dy), 1e-5, "dx");
  assertRelClose(got.dw, numGrad((v) => layerNormRef(x, rows, len, v, b, eps, dy).y, w, dy), 1e-5, "dw");
  assertRelClose(got.db, numGrad((v) => layerNormRef(x, rows, len, w, v, eps, dy).y, b, dy), 1e-5, "db");
  const plain = layerNormRef(x, rows, len, undefined, undefined, eps, dy);
  assertRelClose(
    plain.dx,
    numGrad((v) => layerNormRef(v, rows, len, undefined, undefined, eps, dy).y, x, dy),
    1e-5,
    "dx plain",
  );
});

for (const training of [true, false]) {
  Deno.test(`batchNorm reference gradients (x, weight, bias) match central differences, training ${training}`, () => {
    const rng = mulberry32(training ? 22 : 23);
    const n = 3, c = 4, s = 5;
    const opts = { training, momentum: 0.1, eps: 1e-5 };
    const x = Float64Array.from(randn(n * c * s, rng, 2)), dy = Float64Array.from(randn(n * c * s, rng));
    const w = Float64Array.from(randn(c, rng)), b = Float64Array.from(randn(c, rng));
    const rm = Float64Array.from(randn(c, rng)), rv = Float64Array.from(uniform(c, rng, 0.5, 2));
    const got = batchNormRef(x, n, c, s, rm, rv, w, b, opts, dy);
    assertRelClose(got.dx, numGrad((v) => batchNormRef(v, n, c, s, rm, rv, w, b, opts, dy).y, x, dy), 1e-5, "dx");
    assertRelClose(got.dw, numGrad((v) => batchNormRef(x, n, c, s, rm, rv, v, b, opts, dy).y, w, dy), 1e-5, "dw");
    assertRelClose(got.db, numGrad((v) => batchNormRef(x, n, c, s, rm, rv, w, v, opts, dy).y, b, dy), 1e-5, "db");
  });
}
