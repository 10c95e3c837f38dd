import { Parameter, Variable, cat, noGrad, where } from "../../../src/autograd/mod.ts";
import { fromArray } from "../../../src/tensor/mod.ts";
import { assert, assertRelClose, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randn } from "../../util/random.ts";

gpuTest("a chain of ops through the tape gives the gradient of its f64 reference", async () => {
  // loss = sum(relu(w * x + b)^2 / 3) with w [7], x [5, 7], b [1] (broadcast both ways)
  const rng = mulberry32(3);
  const w = randn(7, rng), x = randn(35, rng), b = Float32Array.of(0.1);
  const pw = new Parameter(fromArray(w), "w"), pb = new Parameter(fromArray(b, [1]), "b");
  const loss = pw.mul(new Variable(fromArray(x, [5, 7]))).add(pb).relu().pow(2).div(3).sum();
  loss.backward();
  const gw = new Float64Array(7), gb = new Float64Array(1);
  let want = 0;
  for (let i = 0; i < 5; i++) {
    for (let j = 0; j < 7; j++) {
      const z = w[j] * x[i * 7 + j] + b[0];
      if (z > 0) {
        want += z * z / 3;
        gw[j] += 2 * z / 3 * x[i * 7 + j];
        gb[0] += 2 * z / 3;
      }
    }
  }
  assertRelClose(await loss.toArray(), [want], 1e-4, "loss");
  assertRelClose(await pw.grad!.toArray(), gw, 1e-4, "dw");
  assertRelClose(await pb.grad!.toArray(), gb, 1e-4, "db");
});

gpuTest("a variable used twice gets both gradients, and backward accumulates", async () => {
  const x = new Parameter(fromArray([1, -2, 3]));
  x.mul(x).add(x).sum().backward(); // d/dx (x^2 + x) = 2x + 1
  assertRelClose(await x.grad!.toArray(), [3, -3, 7], 0, "first");
  x.add(x).sum().backward(); // + 2
  assertRelClose(await x.grad!.toArray(), [5, -1, 9], 0, "accumulated");
  x.zeroGrad();
  assert(x.grad === null, "zeroGrad drops the gradient");
});

gpuTest("noGrad records nothing; detach cuts the graph; cat and where route gradients", async () => {
  const x = new Parameter(fromArray([1, 2]));
  const y = noGrad(() => x.mul(3));
  assert(!y.requiresGrad, "noGrad result requires no grad");
  assert(!x.mul(2).detach().requiresGrad, "detached");
  const z = cat([x, x.mul(2)], 0);
  where(fromArray([1, 0, 1, 0]), z, 0).sum().backward();
  assertRelClose(await x.grad!.toArray(), [3, 0], 0, "cat + where");
});

gpuTest("backward refuses a non-scalar without gradient, and a mis-shaped gradient", () => {
  const x = new Parameter(fromArray([1, 2]));
  assertThrows(() => x.mul(2).backward(), RangeError, "not a scalar");
  assertThrows(() => x.mul(2).backward(fromArray([1, 2, 3])), RangeError, "[3]", "[2]");
  assertThrows(() => new Variable(fromArray([1])).backward(), Error, "does not require a gradient");
});
