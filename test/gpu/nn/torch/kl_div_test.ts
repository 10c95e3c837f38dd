/**
 * klDiv (src/tensor/ops/kl_div.ts, F.klDiv): output and both gradients match the f64
 * reference for every reduction and logTarget on odd shapes, and PyTorch's own values
 * ("mean" over every element, "batchmean" over dim 0, the NaN target gradient at target 0);
 * the errors name the argument and the value.
 */
import { F, fromArray, Variable } from "../../../../src/index.ts";
import { ops } from "../../../../src/engine.ts";
import { klDivRef } from "../../../reference/loss.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn, uniform } from "../../../util/random.ts";
import { golden, values } from "./golden.ts";

const REDUCTIONS = ["mean", "sum", "batchmean", "none"] as const;

gpuTest(
  "klDiv output, input and target gradients match the f64 reference for each reduction and logTarget",
  async () => {
    const rng = mulberry32(2803);
    for (const shape of [[7, 33], [3, 5, 9]]) {
      const n = count(shape);
      for (const reduction of REDUCTIONS) {
        for (const logTarget of [false, true]) {
          const x = randn(n, rng);
          const t = logTarget ? randn(n, rng) : uniform(n, rng, 0.01, 1);
          const dy = randn(reduction === "none" ? n : 1, rng);
          const opts = { reduction, logTarget };
          const want = klDivRef(x, t, { ...opts, batch: shape[0] }, dy);
          const out = reduction === "none" ? shape : [];
          const { output, grads } = ops.forwardBackward(
            ops.klDivOp,
            [fromArray(x, shape), fromArray(t, shape)],
            opts,
            fromArray(dy, out),
          );
          const tag = `klDiv [${shape}] ${reduction} logTarget ${logTarget}`;
          assertEquals(output.shape, out, `${tag} shape`);
          assertRelClose(await output.toArray(), want.y, 1e-4, `${tag} y`);
          assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `${tag} dx`);
          assertRelClose(await grads[1]!.toArray(), want.dt, 1e-4, `${tag} dt`);
        }
      }
    }
  },
);

for (const g of golden.klDiv) {
  gpuTest(`F.klDiv matches PyTorch golden values: ${g.name}`, async () => {
    const input = new Variable(fromArray(values(g.x), g.x.shape), true);
    const target = new Variable(fromArray(values(g.t), g.t.shape), true);
    const y = F.klDiv(input, target, g.options as ops.KlDivOptions);
    y.backward(fromArray(values(g.dy), g.dy.shape));
    assertEquals(y.shape, g.y.shape, `${g.name} shape`);
    assertRelClose(await y.data.toArray(), values(g.y), 1e-4, `${g.name} y`);
    assertRelClose(await input.grad!.toArray(), values(g.dx), 1e-4, `${g.name} dx`);
    assertRelClose(await target.grad!.toArray(), values(g.dt), 1e-4, `${g.name} dt`);
  });
}

gpuTest("klDiv refuses a bad reduction, logTarget, shape pair, dtype and a 0-d batchmean, naming each", () => {
  const a = fromArray([0.1, 0.2, 0.3], [3]), b = fromArray([0.1, 0.2], [2]);
  assertThrows(() => ops.klDiv(a, a, { reduction: "bogus" as "sum" }), RangeError, "klDiv", "reduction", '"bogus"');
  assertThrows(() => ops.klDiv(a, a, { logTarget: 1 as unknown as boolean }), TypeError, "klDiv", "logTarget", "1");
  assertThrows(() => ops.klDiv(a, b), RangeError, "klDiv", "input [3]", "target [2]");
  const s = fromArray([0.5], []);
  assertThrows(() => ops.klDiv(s, s, { reduction: "batchmean" }), RangeError, "klDiv", "batchmean", "[]");
  const i = fromArray(new Int32Array([1, 2, 3]), [3], { dtype: "i32" });
  assertThrows(() => ops.klDiv(a, i), TypeError, "klDiv", "f32", "i32");
});
