import { linearRef, matmulRef } from "../../reference/matmul.ts";
import { assertRelClose } from "../../util/assert.ts";
import { mulberry32, randn } from "../../util/random.ts";
import { numGrad } from "../../util/numerical_gradient.ts";

const count = (s: number[]) => s.reduce((a, b) => a * b, 1);

const CASES: [number[], number[], boolean, boolean][] = [
  [[3, 4], [4, 5], false, false],
  [[4, 3], [4, 5], true, false],
  [[3, 4], [5, 4], false, true],
  [[4, 3], [5, 4], true, true],
  [[2, 1, 3, 2], [3, 2, 4], false, false],
  [[2, 3, 2], [3, 4], true, false],
];

for (const [sa, sb, ta, tb] of CASES) {
  Deno.test(`matmul reference gradients match central differences: [${sa}]${ta ? "ᵀ" : ""}·[${sb}]${tb ? "ᵀ" : ""}`, () => {
    const rng = mulberry32(count(sa) * 7 + count(sb));
    const a = Float64Array.from(randn(count(sa), rng)), b = Float64Array.from(randn(count(sb), rng));
    const shape = matmulRef(a, sa, b, sb, new Float64Array(0), ta, tb).shape;
    const dc = Float64Array.from(randn(count(shape), rng));
    const ref = matmulRef(a, sa, b, sb, dc, ta, tb);
    assertRelClose(ref.da, numGrad((v) => matmulRef(v, sa, b, sb, dc, ta, tb).c, a, dc, 1e-5), 1e-7, "da");
    assertRelClose(ref.db, numGrad((v) => matmulRef(a, sa, v, sb, dc, ta, tb).c, b, dc, 1e-5), 1e-7, "db");
  });
}

Deno.test("matmul reference forward agrees with a hand-computed 2×2 product and its transposes", () => {
  const a = [1, 2, 3, 4], b = [5, 6, 7, 8], none = new Float64Array(0);
  assertRelClose(matmulRef(a, [2, 2], b, [2, 2], none).c, [19, 22, 43, 50], 0, "a·b");
  assertRelClose(matmulRef(a, [2, 2], b, [2, 2], none, true).c, [26, 30, 38, 44], 0, "aᵀ·b");
  assertRelClose(matmulRef(a, [2, 2], b, [2, 2], none, false, true).c, [17, 23, 39, 53], 0, "a·bᵀ");
});

Deno.test("linear reference gradients match central differences, with and without bias", () => {
  const rng = mulberry32(11);
  const sx = [2, 3, 4], sw = [5, 4];
  const x = Float64Array.from(randn(24, rng)),
    w = Float64Array.from(randn(20, rng)),
    b = Float64Array.from(randn(5, rng));
  const dy = Float64Array.from(randn(30, rng));
  for (const bias of [b, undefined]) {
    const ref = linearRef(x, sx, w, sw, bias, dy);
    assertRelClose(ref.dx, numGrad((v) => linearRef(v, sx, w, sw, bias, dy).y, x, dy, 1e-5), 1e-7, "dx");
    assertRelClose(ref.dw, numGrad((v) => linearRef(x, sx, v, sw, bias, dy).y, w, dy, 1e-5), 1e-7, "dw");
  }
  const ref = linearRef(x, sx, w, sw, b, dy);
  assertRelClose(ref.db, numGrad((v) => linearRef(x, sx, w, sw, v, dy).y, b, dy, 1e-5), 1e-7, "db");
});
