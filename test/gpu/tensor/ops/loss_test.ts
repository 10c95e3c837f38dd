import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
// The loss family: class losses (ops/loss.ts) and elementwise ones (ops/loss_elementwise.ts).
import * as L from "../../../../src/tensor/mod.ts";
import { crossEntropyRef, elementwiseLossRef, nllRef, type Reduction } from "../../../reference/loss.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randint, randn, uniform } from "../../../util/random.ts";

const REDUCTIONS: Reduction[] = ["mean", "sum", "none"];
// A thread per row up to 256 classes (the mean in the same launch up to 256 rows), a
// workgroup per row above: [5, 300] and [300, 10] reach the other kernels.
const CLASS_SHAPES: [number, number][] = [[1, 3], [7, 10], [33, 129], [7, 3], [33, 10], [129, 7], [5, 300], [300, 10]];

/** Targets in [0, c) with every third row (from the second) set to `ignore` when given. */
function targets(n: number, c: number, rng: () => number, ignore?: number): Int32Array<ArrayBuffer> {
  const t = randint(n, c, rng);
  if (ignore !== undefined) { for (let r = 1; r < n; r += 3) t[r] = ignore; }
  return t;
}

const outShape = (reduction: Reduction, shape: number[]) => (reduction === "none" ? shape : []);

for (const [label, scale] of [["", 3], [" with logits around 1e3", 1e3]] as const) {
  gpuTest(
    `crossEntropy matches f64 reference for each reduction, label smoothing and ignoreIndex${label}`,
    async () => {
      const rng = mulberry32(scale === 3 ? 50 : 51);
      for (const [n, c] of CLASS_SHAPES) {
        for (const reduction of REDUCTIONS) {
          for (const [labelSmoothing, ignoreIndex] of [[0, undefined], [0.1, -100], [0.25, 2]] as const) {
            const x = randn(n * c, rng, scale);
            const t = targets(n, c, rng, ignoreIndex);
            const dy = randn(reduction === "none" ? n : 1, rng);
            const opts = { reduction, labelSmoothing, ignoreIndex };
            const want = crossEntropyRef(x, n, c, t, opts, dy);
            const { output, grads } = forwardBackward(
              L.crossEntropyOp,
              [fromArray(x, [n, c]), fromArray(t)],
              opts,
              fromArray(dy, outShape(reduction, [n])),
            );
            const tag = `crossEntropy [${n},${c}] ${reduction} eps ${labelSmoothing} ignore ${ignoreIndex}`;
            assertEquals(output.shape, outShape(reduction, [n]), `${tag} shape`);
            assertRelClose(await output.toArray(), want.y, 1e-4, `${tag} y`);
            assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `${tag} dx`);
            assertEquals(grads[1], null, `${tag} target grad`);
          }
        }
      }
    },
  );
}

gpuTest("nllLoss matches f64 reference for each reduction and ignoreIndex", async () => {
  const rng = mulberry32(52);
  for (const [n, c] of CLASS_SHAPES) {
    for (const reduction of REDUCTIONS) {
      for (const ignoreIndex of [undefined, 0]) {
        const x = randn(n * c, rng);
        const t = targets(n, c, rng, ignoreIndex);
        const dy = randn(reduction === "none" ? n : 1, rng);
        const opts = { reduction, ignoreIndex };
        const want = nllRef(x, n, c, t, opts, dy);
        const { output, grads } = forwardBackward(
          L.nllLossOp,
          [fromArray(x, [n, c]), fromArray(t)],
          opts,
          fromArray(dy, outShape(reduction, [n])),
        );
        const tag = `nllLoss [${n},${c}] ${reduction} ignore ${ignoreIndex}`;
        assertRelClose(await output.toArray(), want.y, 1e-4, `${tag} y`);
        assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `${tag} dx`);
      }
    }
  }
});

gpuTest("crossEntropy with every row ignored gives NaN for mean and 0 for sum, as PyTorch", async () => {
  const x = fromArray([1, 2, 3, 4, 5, 6], [2, 3]), t = fromArray(new Int32Array([-100, -100]));
  assert(Number.isNaN(await L.crossEntropy(x, t).item()), "mean is 0/0");
  assertEquals(await L.crossEntropy(x, t, { reduction: "sum" }).item(), 0, "sum");
});

gpuTest("crossEntropy gives NaN for a target outside [0, C) that is not ignored", async () => {
  const x = fromArray([1, 2, 3, 4, 5, 6], [2, 3]);
  const rows = await L.crossEntropy(x, fromArray(new Int32Array([1, 3])), { reduction: "none" }).toArray();
  assert(Number.isFinite(rows[0]) && Number.isNaN(rows[1]), `row losses ${rows}`);
});

const ELEMENTWISE: [string, (attrs: L.ElementwiseLossAttrs) => L.ElementwiseLossAttrs, typeof L.mseLossOp, number][] = [
  ["mse", (a) => a, L.mseLossOp, 1],
  ["l1", (a) => a, L.l1LossOp, 1],
  ["smoothL1", (a) => ({ ...a, beta: 0.5 }), L.smoothL1LossOp, 0.5],
  ["smoothL1", (a) => ({ ...a, beta: 0 }), L.smoothL1LossOp, 0],
  ["smoothL1", (a) => a, L.smoothL1LossOp, 1],
  ["bce", (a) => a, L.bceLossOp, 1],
  ["bceWithLogits", (a) => a, L.bceWithLogitsLossOp, 1],
];

for (const [name, attrsOf, op, k] of ELEMENTWISE) {
  gpuTest(`${name} (knob ${k}) matches f64 reference with its gradients for each reduction`, async () => {
    const rng = mulberry32(60 + name.length + k * 10);
    for (const shape of [[7], [33, 5], [1], [3, 7, 3]]) {
      for (const reduction of REDUCTIONS) {
        const n = count(shape);
        const a = name === "bce" ? uniform(n, rng, 0.02, 0.98) : randn(n, rng, 2);
        const b = name.startsWith("bce") ? uniform(n, rng) : randn(n, rng, 2);
        const dy = randn(reduction === "none" ? n : 1, rng);
        const want = elementwiseLossRef(name, a, b, reduction, dy, () => k);
        const attrs = attrsOf({ reduction });
        const { output, grads } = forwardBackward(
          op,
          [fromArray(a, shape), fromArray(b, shape)],
          attrs,
          fromArray(dy, outShape(reduction, shape)),
        );
        const tag = `${name} [${shape}] ${reduction}`;
        assertEquals(output.shape, outShape(reduction, shape), `${tag} shape`);
        assertRelClose(await output.toArray(), want.y, 1e-4, `${tag} y`);
        assertRelClose(await grads[0]!.toArray(), want.da, 1e-4, `${tag} d input`);
        if (name.startsWith("bce")) assertEquals(grads[1], null, `${tag} no target grad`);
        else assertRelClose(await grads[1]!.toArray(), want.db, 1e-4, `${tag} d target`);
      }
    }
  });
}

gpuTest("bceWithLogitsLoss with a posWeight tensor [C] or number matches f64 reference", async () => {
  const rng = mulberry32(70);
  const [n, c] = [7, 5];
  const x = randn(n * c, rng, 4), t = uniform(n * c, rng), pw = uniform(c, rng, 0.5, 3);
  const dy = randn(1, rng);
  const want = elementwiseLossRef("bceWithLogits", x, t, "mean", dy, (i) => pw[i % c]);
  const { output, grads } = forwardBackward(
    L.bceWithLogitsLossOp,
    [fromArray(x, [n, c]), fromArray(t, [n, c]), fromArray(pw, [c])],
    { reduction: "mean" },
    fromArray(dy, []),
  );
  assertRelClose(await output.toArray(), want.y, 1e-4, "y");
  assertRelClose(await grads[0]!.toArray(), want.da, 1e-4, "dx");
  const y2 = L.bceWithLogitsLoss(fromArray(x, [n, c]), fromArray(t, [n, c]), { posWeight: 2.5, reduction: "sum" });
  const want2 = elementwiseLossRef("bceWithLogits", x, t, "sum", [1], () => 2.5);
  assertRelClose(await y2.toArray(), want2.y, 1e-4, "number posWeight");
});

gpuTest("l1Loss has gradient 0 where input equals target; bceLoss clamps log(0) to -100", async () => {
  const a = fromArray([1, 2, 3]), b = fromArray([1, 0, 3]);
  const { grads } = forwardBackward(L.l1LossOp, [a, b], { reduction: "sum" }, fromArray([1], []));
  assertRelClose(await grads[0]!.toArray(), [0, 1, 0], 0, "l1 d input");
  assertRelClose(await grads[1]!.toArray(), [0, -1, 0], 0, "l1 d target");
  const bce = await L.bceLoss(fromArray([0, 1, 0.5]), fromArray([1, 0, 1]), { reduction: "none" }).toArray();
  assertRelClose(bce, [100, 100, Math.LN2], 1e-6, "bce clamped");
});

gpuTest("extreme logits keep bceWithLogitsLoss and its gradient finite", async () => {
  const x = fromArray([-200, 200, 80, -80]), t = fromArray([1, 0, 1, 0]);
  const { output, grads } = forwardBackward(
    L.bceWithLogitsLossOp,
    [x, t],
    { reduction: "none" },
    fromArray([1, 1, 1, 1]),
  );
  const want = elementwiseLossRef("bceWithLogits", [-200, 200, 80, -80], [1, 0, 1, 0], "none", [1, 1, 1, 1]);
  assertRelClose(await output.toArray(), want.y, 1e-4, "y");
  assertRelClose(await grads[0]!.toArray(), want.da, 1e-4, "dx");
});

gpuTest("losses reject a wrong target dtype, an N mismatch, bad options and shape mismatches", () => {
  const x = fromArray(new Float32Array(21), [7, 3]);
  const t = fromArray(new Int32Array(7));
  assertThrows(
    () => L.crossEntropy(x, fromArray(new Float32Array(7))),
    TypeError,
    "crossEntropy",
    "target",
    "i32",
    "f32",
  );
  assertThrows(() => L.nllLoss(x, fromArray(new Uint32Array(7))), TypeError, "nllLoss", "target", "u32");
  assertThrows(() => L.crossEntropy(x, fromArray(new Int32Array(6))), RangeError, "crossEntropy", "[7,3]", "[6]");
  assertThrows(() => L.nllLoss(x, fromArray(new Int32Array(8))), RangeError, "nllLoss", "[7,3]", "[8]");
  assertThrows(() => L.crossEntropy(x.reshape([21]), t), TypeError, "crossEntropy", "[N, C]", "[21]");
  assertThrows(() => L.crossEntropy(x, t, { labelSmoothing: 1.5 }), RangeError, "labelSmoothing", "1.5");
  assertThrows(() => L.crossEntropy(x, t, { reduction: "avg" as Reduction }), RangeError, "reduction", "avg");
  assertThrows(() => L.mseLoss(x, fromArray(new Float32Array(7), [7])), RangeError, "mseLoss", "[7,3]", "[7]");
  assertThrows(() => L.smoothL1Loss(x, x, { beta: -1 }), RangeError, "smoothL1Loss", "beta", "-1");
  assertThrows(
    () => L.bceWithLogitsLoss(x, x, { posWeight: fromArray([1, 2]) }),
    RangeError,
    "posWeight",
    "[2]",
    "[7,3]",
  );
});
