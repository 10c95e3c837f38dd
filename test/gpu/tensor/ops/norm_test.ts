import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import { batchNorm, batchNormOp } from "../../../../src/tensor/ops/batch_norm.ts";
import { layerNorm, layerNormOp } from "../../../../src/tensor/ops/norm.ts";
import type { Tensor } from "../../../../src/tensor/tensor.ts";
import golden from "../../../fixtures/norm_golden.json" with { type: "json" };
import { batchNormRef, layerNormRef } from "../../../reference/norm.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn, uniform } from "../../../util/random.ts";

const LN_CASES: [number[], number[]][] = [
  [[7, 33], [33]],
  [[3, 5, 7], [5, 7]],
  [[1, 129], [129]],
  [[33, 3], [3]],
  [[2, 300], [300]], // longer than one workgroup
  // Edge cases of the segmented blocking (tuning.segmentBlocking: rows or columns share a
  // workgroup, SEG threads each): one row of one feature, feature dim 1 over many rows (64
  // rows a workgroup, the last one partial), rows not a multiple of the rows per workgroup,
  // odd dims, a row longer than the widest segment (4099 > 256 threads × 16), and more
  // rows than one weight-gradient segment covers (1100 rows, SEG 128).
  [[1, 1], [1]],
  [[70, 1], [1]],
  [[13, 9], [9]],
  [[3, 5, 7], [7]],
  [[3, 4099], [4099]],
  [[1100, 8], [8]],
  // Four values a thread step (len a multiple of 4, the *_vec4 entries): gpt-nano's width,
  // a normalized shape of two dims, and a row past the widest segment in vec4s (4,100 > 4,096).
  [[16, 128], [128]],
  [[5, 2, 12], [2, 12]],
  [[2, 16400], [16400]],
];

for (const affine of ["both", "weight", "none"] as const) {
  gpuTest(`layerNorm (affine: ${affine}) forward and gradients of x, weight, bias match f64 reference`, async () => {
    const rng = mulberry32(80 + affine.length);
    for (const [shape, ns] of LN_CASES) {
      const len = count(ns), rows = count(shape) / len;
      const x = randn(count(shape), rng, 2), dy = randn(count(shape), rng);
      for (let i = 0; i < x.length; i++) x[i] += 5; // an offset mean: a one-pass variance would lose digits
      const w = affine !== "none" ? randn(len, rng) : undefined;
      const b = affine === "both" ? randn(len, rng) : undefined;
      const want = layerNormRef(x, rows, len, w, b, 1e-5, dy);
      const inputs = [fromArray(x, shape), ...(w ? [fromArray(w, ns)] : []), ...(b ? [fromArray(b, ns)] : [])];
      const { output, grads } = forwardBackward(
        layerNormOp,
        inputs,
        { normalizedShape: ns, eps: 1e-5 },
        fromArray(dy, shape),
      );
      const tag = `layerNorm [${shape}] over [${ns}]`;
      assertRelClose(await output.toArray(), want.y, 1e-4, `${tag} y`);
      assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `${tag} dx`);
      if (w) assertRelClose(await grads[1]!.toArray(), want.dw, 1e-4, `${tag} dw`);
      if (b) assertRelClose(await grads[2]!.toArray(), want.db, 1e-4, `${tag} db`);
      assertEquals(grads.length, inputs.length, `${tag} one gradient per input`);
    }
  });
}

gpuTest("layerNorm backward honours needs: only the bias gradient", async () => {
  const rng = mulberry32(85);
  const x = randn(21, rng), w = randn(7, rng), b = randn(7, rng), dy = randn(21, rng);
  const inputs = [fromArray(x, [3, 7]), fromArray(w, [7]), fromArray(b, [7])];
  const attrs = { normalizedShape: [7], eps: 1e-5 };
  const res = layerNormOp.forward(inputs, attrs);
  const grads = layerNormOp.backward!(fromArray(dy, [3, 7]), {
    shapes: inputs.map((t) => t.shape),
    needs: [false, false, true],
    saved: res.saved!,
    output: res.output,
    attrs,
  });
  assertEquals([grads[0], grads[1]], [null, null], "no x or weight gradient");
  assertRelClose(await grads[2]!.toArray(), layerNormRef(x, 3, 7, w, b, 1e-5, dy).db, 1e-4, "db");
});

const BN_SHAPES = [[7, 3], [33, 10], [7, 3, 5], [2, 3, 4, 5], [1, 3, 7]];

for (const training of [true, false]) {
  for (const affine of [true, false]) {
    gpuTest(
      `batchNorm training ${training} affine ${affine}: output, gradients and running stats match f64 reference`,
      async () => {
        const rng = mulberry32(90 + Number(training) * 2 + Number(affine));
        for (const shape of BN_SHAPES) {
          const [n, c] = shape, s = count(shape.slice(2));
          const x = randn(count(shape), rng, 2), dy = randn(count(shape), rng);
          for (let i = 0; i < x.length; i++) x[i] += 3;
          const rm0 = randn(c, rng), rv0 = uniform(c, rng, 0.5, 2);
          const w = affine ? randn(c, rng) : undefined, b = affine ? randn(c, rng) : undefined;
          const opts = { training, momentum: 0.1, eps: 1e-5 };
          const want = batchNormRef(x, n, c, s, rm0, rv0, w, b, opts, dy);
          const rm = fromArray(rm0, [c]), rv = fromArray(rv0, [c]);
          const inputs = [
            fromArray(x, shape),
            rm,
            rv,
            ...(w ? [fromArray(w, [c])] : []),
            ...(b ? [fromArray(b, [c])] : []),
          ];
          const { output, grads } = forwardBackward(batchNormOp, inputs, opts, fromArray(dy, shape));
          const tag = `batchNorm [${shape}] training ${training}`;
          assertRelClose(await output.toArray(), want.y, 1e-4, `${tag} y`);
          assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `${tag} dx`);
          assertEquals([grads[1], grads[2]], [null, null], `${tag} no running-stat gradients`);
          if (affine) {
            assertRelClose(await grads[3]!.toArray(), want.dw, 1e-4, `${tag} dw`);
            assertRelClose(await grads[4]!.toArray(), want.db, 1e-4, `${tag} db`);
          }
          assertRelClose(await rm.toArray(), want.runningMean, 1e-4, `${tag} running mean`);
          assertRelClose(await rv.toArray(), want.runningVar, 1e-4, `${tag} running var`);
        }
      },
    );
  }
}

gpuTest("batchNorm backward honours needs: weight and bias gradients without dx", async () => {
  const rng = mulberry32(95);
  const [n, c, s] = [7, 3, 5];
  const x = randn(n * c * s, rng), dy = randn(n * c * s, rng), w = randn(c, rng), b = randn(c, rng);
  const inputs = [
    fromArray(x, [n, c, s]),
    fromArray(new Float32Array(c), [c]),
    fromArray(new Float32Array(c).fill(1), [c]),
    fromArray(w, [c]),
    fromArray(b, [c]),
  ];
  const attrs = { training: true };
  const res = batchNormOp.forward(inputs, attrs);
  const grads = batchNormOp.backward!(fromArray(dy, [n, c, s]), {
    shapes: inputs.map((t) => t.shape),
    needs: [false, false, false, true, true],
    saved: res.saved!,
    output: res.output,
    attrs,
  });
  const want = batchNormRef(x, n, c, s, new Float32Array(c), new Float32Array(c).fill(1), w, b, {
    training: true,
    momentum: 0.1,
    eps: 1e-5,
  }, dy);
  assertEquals(grads[0], null, "no dx");
  assertRelClose(await grads[3]!.toArray(), want.dw, 1e-4, "dw");
  assertRelClose(await grads[4]!.toArray(), want.db, 1e-4, "db");
});

interface GoldenStep {
  training: boolean;
  x: number[];
  dy: number[];
  y: number[];
  dx: number[];
  dw: number[] | null;
  db: number[] | null;
  runningMean: number[];
  runningVar: number[];
}

for (const g of golden.batchNorm) {
  gpuTest(`batchNorm matches PyTorch golden values: ${g.name}`, async () => {
    const c = g.shape[1];
    const rm = fromArray(g.runningMean, [c]), rv = fromArray(g.runningVar, [c]);
    const weight = g.weight ? fromArray(g.weight, [c]) : undefined;
    const bias = g.bias ? fromArray(g.bias, [c]) : undefined;
    for (const [i, step] of (g.steps as GoldenStep[]).entries()) {
      const inputs: Tensor[] = [
        fromArray(step.x, g.shape),
        rm,
        rv,
        ...(weight ? [weight] : []),
        ...(bias ? [bias] : []),
      ];
      const attrs = { training: step.training, momentum: g.momentum, eps: g.eps };
      const { output, grads } = forwardBackward(batchNormOp, inputs, attrs, fromArray(step.dy, g.shape));
      const tag = `${g.name} step ${i} (training ${step.training})`;
      assertRelClose(await output.toArray(), step.y, 1e-4, `${tag} y`);
      assertRelClose(await grads[0]!.toArray(), step.dx, 1e-4, `${tag} dx`);
      if (step.dw) assertRelClose(await grads[3]!.toArray(), step.dw, 1e-4, `${tag} dw`);
      if (step.db) assertRelClose(await grads[4]!.toArray(), step.db, 1e-4, `${tag} db`);
      assertRelClose(await rm.toArray(), step.runningMean, 1e-5, `${tag} running mean`);
      assertRelClose(await rv.toArray(), step.runningVar, 1e-5, `${tag} running var (unbiased, momentum)`);
    }
  });
}

gpuTest("layerNorm matches PyTorch golden values", async () => {
  for (const g of golden.layerNorm) {
    const ns = g.normalizedShape;
    const inputs = [fromArray(g.x, g.shape), fromArray(g.weight, ns), fromArray(g.bias, ns)];
    const { output, grads } = forwardBackward(
      layerNormOp,
      inputs,
      { normalizedShape: ns, eps: g.eps },
      fromArray(g.dy, g.shape),
    );
    assertRelClose(await output.toArray(), g.y, 1e-4, `${g.name} y`);
    assertRelClose(await grads[0]!.toArray(), g.dx, 1e-4, `${g.name} dx`);
    assertRelClose(await grads[1]!.toArray(), g.dw, 1e-4, `${g.name} dw`);
    assertRelClose(await grads[2]!.toArray(), g.db, 1e-4, `${g.name} db`);
  }
});

gpuTest("layerNorm and batchNorm tensor functions pass weight and bias through", async () => {
  const rng = mulberry32(97);
  const x = randn(35, rng), w = randn(5, rng), b = randn(5, rng);
  const want = layerNormRef(x, 7, 5, undefined, b, 1e-3, new Float32Array(35));
  assertRelClose(
    await layerNorm(fromArray(x, [7, 5]), 5, undefined, fromArray(b, [5]), 1e-3).toArray(),
    want.y,
    1e-4,
    "layerNorm bias only",
  );
  const rm = fromArray(new Float32Array(5), [5]), rv = fromArray(new Float32Array(5).fill(1), [5]);
  const wantBn = batchNormRef(x, 7, 5, 1, new Float32Array(5), new Float32Array(5).fill(1), w, undefined, {
    training: true,
    momentum: 0.2,
    eps: 1e-5,
  }, new Float32Array(35));
  const y = batchNorm(fromArray(x, [7, 5]), rm, rv, fromArray(w, [5]), undefined, { training: true, momentum: 0.2 });
  assertRelClose(await y.toArray(), wantBn.y, 1e-4, "batchNorm weight only");
  assertRelClose(await rv.toArray(), wantBn.runningVar, 1e-4, "batchNorm running var");
});

gpuTest("layerNorm and batchNorm reject bad shapes and options, naming both shapes", () => {
  const x = fromArray(new Float32Array(21), [7, 3]);
  const c3 = () => fromArray(new Float32Array(3), [3]);
  assertThrows(() => layerNorm(x, [7]), RangeError, "layerNorm", "normalizedShape [7]", "[7,3]");
  assertThrows(() => layerNorm(x, [2, 7, 3]), RangeError, "normalizedShape [2,7,3]", "[7,3]");
  assertThrows(() => layerNorm(x, []), TypeError, "layerNorm", "normalizedShape", "[]");
  assertThrows(() => layerNorm(x, [1.5]), TypeError, "normalizedShape", "1.5");
  assertThrows(() => layerNorm(x, [3], fromArray([1, 1], [2])), RangeError, "weight [2]", "[3]");
  assertThrows(() => layerNorm(x, [3], undefined, undefined, -1), RangeError, "eps", "-1");
  assertThrows(
    () => batchNorm(x, fromArray([0, 0], [2]), c3(), undefined, undefined, { training: true }),
    RangeError,
    "runningMean [2]",
    "[3]",
  );
  assertThrows(
    () => batchNorm(fromArray([1, 2, 3], [3]), c3(), c3(), undefined, undefined, { training: false }),
    TypeError,
    "batchNorm",
    "[3]",
  );
  assertThrows(
    () => batchNorm(x, c3(), c3(), undefined, undefined, { training: true, momentum: 1.5 }),
    RangeError,
    "momentum",
    "1.5",
  );
  assertThrows(
    () => batchNorm(fromArray([1, 2, 3], [1, 3]), c3(), c3(), undefined, undefined, { training: true }),
    RangeError,
    "more than 1 value per channel",
    "[1,3]",
  );
});
