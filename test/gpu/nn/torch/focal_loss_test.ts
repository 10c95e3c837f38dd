/**
 * sigmoidFocalLoss (src/tensor/ops/focal_loss.ts, F.sigmoidFocalLoss): output and logit
 * gradient match the f64 reference (alpha, gamma, soft targets, each reduction) on odd shapes
 * and torchvision's formula run by PyTorch; torchvision's defaults (alpha 0.25, gamma 2,
 * reduction "none") hold; the errors name the option and the value.
 */
import { F, fromArray, Variable } from "../../../../src/index.ts";
import { ops } from "../../../../src/engine.ts";
import { focalRef } from "../../../reference/loss.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn, uniform } from "../../../util/random.ts";
import { golden, values } from "./golden.ts";

gpuTest("sigmoidFocalLoss output and logit gradient match the f64 reference on odd shapes", async () => {
  const rng = mulberry32(2804);
  for (const shape of [[7, 33], [129]]) {
    const n = count(shape);
    for (const [alpha, gamma] of [[0.25, 2], [-1, 0], [0.6, 1.5], [0.25, 1], [0.9, 0.5]]) {
      for (const reduction of ["none", "mean", "sum"] as const) {
        const x = randn(n, rng, 4);
        // Hard labels, and every fifth a soft one.
        const t = Float32Array.from(uniform(n, rng), (u, i) => (i % 5 === 4 ? u : Math.round(u)));
        const dy = randn(reduction === "none" ? n : 1, rng);
        const opts = { alpha, gamma, reduction };
        const want = focalRef(x, t, opts, dy);
        const out = reduction === "none" ? shape : [];
        const { output, grads } = ops.forwardBackward(
          ops.sigmoidFocalLossOp,
          [fromArray(x, shape), fromArray(t, shape)],
          opts,
          fromArray(dy, out),
        );
        const tag = `focal [${shape}] alpha ${alpha} gamma ${gamma} ${reduction}`;
        assertRelClose(await output.toArray(), want.y, 1e-4, `${tag} y`);
        assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `${tag} dx`);
        assertEquals(grads[1], null, `${tag} target grad`);
      }
    }
  }
});

for (const g of golden.sigmoidFocalLoss) {
  gpuTest(`F.sigmoidFocalLoss matches torchvision's formula in PyTorch: ${g.name}`, async () => {
    const input = new Variable(fromArray(values(g.x), g.x.shape), true);
    const y = F.sigmoidFocalLoss(input, fromArray(values(g.t), g.t.shape), g.options as ops.SigmoidFocalLossOptions);
    y.backward(fromArray(values(g.dy), g.dy.shape));
    assertEquals(y.shape, g.y.shape, `${g.name} shape`);
    assertRelClose(await y.data.toArray(), values(g.y), 1e-4, `${g.name} y`);
    assertRelClose(await input.grad!.toArray(), values(g.dx), 1e-4, `${g.name} dx`);
  });
}

gpuTest("sigmoidFocalLoss defaults to torchvision's alpha 0.25, gamma 2 and reduction none", async () => {
  const rng = mulberry32(2805);
  const x = randn(21, rng, 3), t = Float32Array.from(uniform(21, rng), Math.round);
  const y = ops.sigmoidFocalLoss(fromArray(x, [3, 7]), fromArray(t, [3, 7]));
  assertEquals(y.shape, [3, 7], "default reduction none keeps the shape");
  assertRelClose(
    await y.toArray(),
    focalRef(x, t, { alpha: 0.25, gamma: 2, reduction: "none" }, x).y,
    1e-4,
    "default alpha and gamma",
  );
});

gpuTest("sigmoidFocalLoss refuses a bad alpha, gamma, reduction and shape pair, naming each", () => {
  const a = fromArray([0.1, 0.2, 0.3], [3]), b = fromArray([0, 1], [2]);
  assertThrows(() => ops.sigmoidFocalLoss(a, a, { alpha: 1.5 }), RangeError, "sigmoidFocalLoss", "alpha", "1.5");
  assertThrows(() => ops.sigmoidFocalLoss(a, a, { gamma: -1 }), RangeError, "sigmoidFocalLoss", "gamma", "-1");
  assertThrows(
    () => ops.sigmoidFocalLoss(a, a, { reduction: "batchmean" as "sum" }),
    RangeError,
    "reduction",
    '"batchmean"',
  );
  assertThrows(() => ops.sigmoidFocalLoss(a, b), RangeError, "sigmoidFocalLoss", "inputs [3]", "targets [2]");
});
