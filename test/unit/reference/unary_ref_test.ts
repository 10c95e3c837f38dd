/** The float64 references' derivatives agree with central differences of their forwards. */
import { BINARY_REF } from "../../reference/broadcast.ts";
import { erf, preluRef, UNARY_REF } from "../../reference/unary.ts";
import { assert, assertRelClose } from "../../util/assert.ts";
import { numDeriv } from "../../util/numerical_gradient.ts";

const POINTS = [-3.1, -1.3, -0.4, 0.3, 0.9, 2.2, 4.7];
const PARAMS: Record<string, [number, number]> = { affine: [-1.5, 0.25], leakyRelu: [0.1, 0], softplus: [2, 3], clamp: [-0.5, 0.7], powScalar: [3, 0], elu: [0.7, 0] };

Deno.test("unary references: f' matches central differences of f", () => {
  for (const [name, r] of Object.entries(UNARY_REF)) {
    const [a, b] = PARAMS[name] ?? [0, 0];
    const xs = ["log", "sqrt", "rsqrt"].includes(name) ? POINTS.map(Math.abs) : POINTS;
    const got = xs.map((x) => r.df(x, a, b));
    const want = xs.map((x) => numDeriv((t) => r.f(t, a, b), x));
    assertRelClose(got, want, 1e-6, `${name}'`);
  }
});

Deno.test("binary references: partial derivatives match central differences", () => {
  for (const [name, r] of Object.entries(BINARY_REF)) {
    for (const [x, y] of [[0.7, 1.9], [2.3, -0.6], [1.4, 0.3]]) {
      if ((name === "pow" || name === "div") && (x <= 0 || y === 0)) continue;
      assertRelClose([r.da(x, y)], [numDeriv((t) => r.f(t, y), x)], 1e-6, `${name} da at ${x},${y}`);
      assertRelClose([r.db(x, y)], [numDeriv((t) => r.f(x, t), y)], 1e-6, `${name} db at ${x},${y}`);
    }
  }
});

Deno.test("reference erf matches known values to 1e-12", () => {
  const known: [number, number][] = [[0.5, 0.5204998778130465], [1, 0.8427007929497149], [2, 0.9953222650189527], [3.5, 0.9999992569016276]];
  for (const [x, v] of known) assert(Math.abs(erf(x) - v) < 1e-12 && Math.abs(erf(-x) + v) < 1e-12, `erf(${x})`);
});

Deno.test("prelu reference: dx and dw match central differences of the summed output", () => {
  const shape = [2, 3, 2];
  const x = [-1.2, 0.4, 2.1, -0.3, -2.2, 0.8, 1.1, -0.6, -1.9, 0.2, 0.5, -0.9];
  const w = [0.25, -0.4, 1.3];
  const dy = x.map((_, i) => 0.3 + 0.1 * i);
  const loss = (xs: number[], ws: number[]) => preluRef(xs, shape, ws, dy).y.reduce((s, v, i) => s + v * dy[i], 0);
  const { dx, dw } = preluRef(x, shape, w, dy);
  const at = (a: number[], i: number, t: number) => a.map((v, j) => (j === i ? t : v));
  assertRelClose(dx, x.map((v, i) => numDeriv((t) => loss(at(x, i, t), w), v)), 1e-6, "prelu dx");
  assertRelClose(dw, w.map((v, i) => numDeriv((t) => loss(x, at(w, i, t)), v)), 1e-6, "prelu dw");
  const shared = preluRef(x, shape, [0.1], dy).dw[0];
  assertRelClose([shared], [numDeriv((t) => preluRef(x, shape, [t], dy).y.reduce((s, v, i) => s + v * dy[i], 0), 0.1)], 1e-6, "prelu shared dw");
});
