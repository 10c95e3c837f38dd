import { dropoutMultipliers, mhaRef, type MhaWeights, sdpaRef } from "../../reference/attention.ts";
import { rmsNormRef } from "../../reference/norm.ts";
import { ropeRef } from "../../reference/rope.ts";
import { assert, assertRelClose } from "../../util/assert.ts";
import { mulberry32, randn } from "../../util/random.ts";
import { numGrad } from "../../util/numerical_gradient.ts";

const f64 = (n: number, rng: () => number, s = 1) => Float64Array.from(randn(n, rng, s));

Deno.test("sdpa reference gradients (q, k, v) match central differences with causal, masks and dropout", () => {
  const rng = mulberry32(301);
  const dims = { b: 2, h: 2, tq: 4, tk: 5, d: 3 };
  const nq = 2 * 2 * 4 * 3, nk = 2 * 2 * 5 * 3;
  const q = f64(nq, rng), k = f64(nk, rng), v = f64(nk, rng), dout = f64(nq, rng);
  const attnMask = Float64Array.from({ length: 20 }, (_, i) => (i === 7 ? 1 : 0));
  const keyPaddingMask = Float64Array.from([0, 0, 0, 0, 1, 0, 0, 0, 1, 1]);
  const dropout = dropoutMultipliers(9, 0.3, 2 * 2 * 4 * 5);
  assert(
    dropout.some((z) => z === 0) && dropout.some((z) => z > 1),
    "the dropout multipliers drop some and scale others",
  );
  for (const opts of [{}, { causal: true, keyPaddingMask }, { attnMask, dropout, scale: 0.7 }]) {
    const g = sdpaRef(q, k, v, dims, opts, dout);
    const tag = JSON.stringify(Object.keys(opts));
    assertRelClose(g.dq, numGrad((x) => sdpaRef(x, k, v, dims, opts, dout).o, q, dout), 1e-5, `${tag} dq`);
    assertRelClose(g.dk, numGrad((x) => sdpaRef(q, x, v, dims, opts, dout).o, k, dout), 1e-5, `${tag} dk`);
    assertRelClose(g.dv, numGrad((x) => sdpaRef(q, k, x, dims, opts, dout).o, v, dout), 1e-5, `${tag} dv`);
  }
});

Deno.test("sdpa reference with an additive bias: -inf hides like a mask, gradients (q, k, v, bias) match central differences", () => {
  const rng = mulberry32(303);
  const dims = { b: 2, h: 2, tq: 4, tk: 5, d: 3 };
  const q = f64(48, rng), k = f64(60, rng), v = f64(60, rng), dout = f64(48, rng);
  const bias = f64(80, rng, 2);
  bias[7] = bias[33] = -Infinity;
  const keyPaddingMask = Float64Array.from([0, 0, 0, 0, 1, 0, 0, 0, 0, 0]);
  // -inf at (bh 0, i 1, j 2) hides what a mask entry there hides.
  const masked = Float64Array.from(bias, (x) => (x === -Infinity ? 0 : x));
  const asMask = sdpaRef(q, k, v, { ...dims, b: 1, h: 1 }, {
    bias: masked.subarray(0, 20),
    attnMask: Float64Array.from({ length: 20 }, (_, n) => Number(n === 7)),
  }, dout);
  const asBias = sdpaRef(q, k, v, { ...dims, b: 1, h: 1 }, { bias: bias.subarray(0, 20) }, dout);
  assertRelClose(asBias.o, asMask.o, 1e-12, "-inf bias = mask");
  for (const opts of [{ bias }, { bias, causal: true, keyPaddingMask, scale: 0.6 }]) {
    const g = sdpaRef(q, k, v, dims, opts, dout);
    const tag = JSON.stringify(Object.keys(opts));
    assert(g.dbias[7] === 0 && g.dbias.some((x) => x !== 0), `${tag} no gradient at -inf, some elsewhere`);
    assertRelClose(g.dq, numGrad((x) => sdpaRef(x, k, v, dims, opts, dout).o, q, dout), 1e-5, `${tag} dq`);
    assertRelClose(g.dk, numGrad((x) => sdpaRef(q, x, v, dims, opts, dout).o, k, dout), 1e-5, `${tag} dk`);
    assertRelClose(g.dv, numGrad((x) => sdpaRef(q, k, x, dims, opts, dout).o, v, dout), 1e-5, `${tag} dv`);
    const db = numGrad((x) => sdpaRef(q, k, v, dims, { ...opts, bias: x }, dout).o, bias, dout);
    assertRelClose(g.dbias, db.map((x) => (Number.isNaN(x) ? 0 : x)), 1e-5, `${tag} dbias`);
  }
});

Deno.test("mha reference gradients (inputs and in/out projections) match central differences", () => {
  const rng = mulberry32(302);
  const dims = { b: 2, tq: 3, tk: 4, e: 6, h: 2 };
  const query = f64(2 * 3 * 6, rng), key = f64(2 * 4 * 6, rng), value = f64(2 * 4 * 6, rng), dout = f64(2 * 3 * 6, rng);
  const w = {
    inProjWeight: f64(108, rng, 0.5),
    inProjBias: f64(18, rng),
    outProjWeight: f64(36, rng, 0.5),
    outProjBias: f64(6, rng),
  };
  const opts = { keyPaddingMask: [0, 0, 0, 1, 0, 0, 0, 0] };
  const g = mhaRef(query, key, value, dims, w, opts, dout);
  type A = ArrayLike<number>;
  const out = (qq: A = query, kk: A = key, vv: A = value, ww: MhaWeights = w) =>
    mhaRef(qq, kk, vv, dims, ww, opts, dout).out;
  assertRelClose(g.dQuery, numGrad((x) => out(x), query, dout), 1e-5, "dQuery");
  assertRelClose(g.dKey, numGrad((x) => out(query, x), key, dout), 1e-5, "dKey");
  assertRelClose(g.dValue, numGrad((x) => out(query, key, x), value, dout), 1e-5, "dValue");
  assertRelClose(
    g.dInProjWeight,
    numGrad((x) => out(query, key, value, { ...w, inProjWeight: x }), w.inProjWeight, dout),
    1e-5,
    "dInProjWeight",
  );
  assertRelClose(
    g.dInProjBias,
    numGrad((x) => out(query, key, value, { ...w, inProjBias: x }), w.inProjBias, dout),
    1e-5,
    "dInProjBias",
  );
  assertRelClose(
    g.dOutProjWeight,
    numGrad((x) => out(query, key, value, { ...w, outProjWeight: x }), w.outProjWeight, dout),
    1e-5,
    "dOutProjWeight",
  );
  assertRelClose(
    g.dOutProjBias,
    numGrad((x) => out(query, key, value, { ...w, outProjBias: x }), w.outProjBias, dout),
    1e-5,
    "dOutProjBias",
  );
});

Deno.test("rmsNorm reference gradients (x, weight) match central differences", () => {
  const rng = mulberry32(303);
  const rows = 5, len = 7, eps = 1e-5;
  const x = f64(rows * len, rng, 2), dy = f64(rows * len, rng), w = f64(len, rng);
  const got = rmsNormRef(x, rows, len, w, eps, dy);
  assertRelClose(got.dx, numGrad((u) => rmsNormRef(u, rows, len, w, eps, dy).y, x, dy), 1e-5, "dx");
  assertRelClose(got.dw, numGrad((u) => rmsNormRef(x, rows, len, u, eps, dy).y, w, dy), 1e-5, "dw");
  const plain = rmsNormRef(x, rows, len, undefined, eps, dy);
  assertRelClose(plain.dx, numGrad((u) => rmsNormRef(u, rows, len, undefined, eps, dy).y, x, dy), 1e-5, "dx plain");
});

Deno.test("rope reference gradient matches central differences in both pair layouts", () => {
  const rng = mulberry32(304);
  const t = 5, d = 6, x = f64(3 * t * d, rng), dy = f64(3 * t * d, rng);
  for (const interleaved of [false, true]) {
    const opts = { base: 100, offset: 3, interleaved };
    const got = ropeRef(x, t, d, opts, dy);
    assertRelClose(got.dx, numGrad((u) => ropeRef(u, t, d, opts, dy).y, x, dy), 1e-5, `dx interleaved ${interleaved}`);
  }
});
