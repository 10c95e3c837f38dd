import { crossEntropyRef, elementwiseLossRef, focalRef, klDivRef, nllRef, type Reduction } from "../../reference/loss.ts";
import { assertRelClose } from "../../util/assert.ts";
import { mulberry32, randint, randn, uniform } from "../../util/random.ts";
import { numGrad } from "../../util/numerical_gradient.ts";

const REDUCTIONS: Reduction[] = ["mean", "sum", "none"];

Deno.test("crossEntropy and nllLoss reference gradients match central differences (smoothing, ignoreIndex, reductions)", () => {
  const rng = mulberry32(11);
  const n = 7, c = 5;
  for (const reduction of REDUCTIONS) {
    for (const labelSmoothing of [0, 0.2]) {
      const x = Float64Array.from(randn(n * c, rng, 2));
      const t = randint(n, c, rng);
      t[2] = -3; // ignoreIndex
      const dy = Float64Array.from(randn(reduction === "none" ? n : 1, rng));
      const opts = { reduction, ignoreIndex: -3, labelSmoothing };
      const ce = crossEntropyRef(x, n, c, t, opts, dy);
      const want = numGrad((v) => crossEntropyRef(v, n, c, t, opts, dy).y, x, dy);
      assertRelClose(ce.dx, want, 1e-6, `crossEntropy dx ${reduction} eps ${labelSmoothing}`);
      const nll = nllRef(x, n, c, t, opts, dy);
      assertRelClose(nll.dx, numGrad((v) => nllRef(v, n, c, t, opts, dy).y, x, dy), 1e-6, `nll dx ${reduction}`);
    }
  }
});

Deno.test("crossEntropy reference equals nll of log-softmax and ignores rows in the mean", () => {
  const x = Float64Array.of(1, 2, 3, 0, 0, 0), t = Int32Array.of(2, -100);
  const lse = Math.log(Math.exp(1) + Math.exp(2) + Math.exp(3));
  const y = crossEntropyRef(x, 2, 3, t, { reduction: "mean" }, [1]).y;
  assertRelClose(y, [lse - 3], 1e-12, "mean over the one row not ignored");
});

Deno.test("elementwise loss references: both gradients match central differences", () => {
  const rng = mulberry32(12);
  const n = 9;
  for (const name of ["mse", "l1", "smoothL1", "bce", "bceWithLogits"]) {
    for (const reduction of REDUCTIONS) {
      const a = Float64Array.from(name === "bce" ? uniform(n, rng, 0.05, 0.95) : randn(n, rng, 2));
      const b = Float64Array.from(name.startsWith("bce") ? uniform(n, rng) : randn(n, rng, 2));
      const dy = Float64Array.from(randn(reduction === "none" ? n : 1, rng));
      const k = name === "bceWithLogits" ? (i: number) => 0.5 + (i % 3) : () => 1.3;
      const got = elementwiseLossRef(name, a, b, reduction, dy, k);
      const da = numGrad((v) => elementwiseLossRef(name, v, b, reduction, dy, k).y, a, dy);
      const db = numGrad((v) => elementwiseLossRef(name, a, v, reduction, dy, k).y, b, dy);
      assertRelClose(got.da, da, 1e-5, `${name} ${reduction} da`);
      assertRelClose(got.db, db, 1e-5, `${name} ${reduction} db`);
    }
  }
});

Deno.test("klDiv reference gradients (input and target) match central differences, each reduction and logTarget", () => {
  const rng = mulberry32(28);
  const batch = 3, n = 12;
  for (const reduction of ["mean", "sum", "batchmean", "none"] as const) {
    for (const logTarget of [false, true]) {
      const x = Float64Array.from(randn(n, rng));
      const t = logTarget ? Float64Array.from(randn(n, rng)) : Float64Array.from(uniform(n, rng, 0.05, 1));
      const dy = Float64Array.from(randn(reduction === "none" ? n : 1, rng));
      const opts = { reduction, logTarget, batch };
      const got = klDivRef(x, t, opts, dy);
      const tag = `klDiv ${reduction} logTarget ${logTarget}`;
      assertRelClose(got.dx, numGrad((v) => klDivRef(v, t, opts, dy).y, x, dy), 1e-6, `${tag} dx`);
      assertRelClose(got.dt, numGrad((v) => klDivRef(x, v, opts, dy).y, t, dy), 1e-6, `${tag} dt`);
    }
  }
});

Deno.test("sigmoid focal loss reference gradient matches central differences (alpha, gamma, soft targets)", () => {
  const rng = mulberry32(29);
  const n = 11;
  for (const [alpha, gamma] of [[0.25, 2], [-1, 0], [0.6, 1.5], [0.25, 1]]) {
    for (const reduction of ["none", "mean", "sum"] as const) {
      const x = Float64Array.from(randn(n, rng, 3));
      const t = Float64Array.from(uniform(n, rng), (u, i) => (i % 3 === 2 ? u : Math.round(u)));
      const dy = Float64Array.from(randn(reduction === "none" ? n : 1, rng));
      const opts = { alpha, gamma, reduction };
      const got = focalRef(x, t, opts, dy);
      const fd = numGrad((v) => focalRef(v, t, opts, dy).y, x, dy);
      assertRelClose(got.dx, fd, 1e-6, `focal alpha ${alpha} gamma ${gamma} ${reduction} dx`);
    }
  }
});
