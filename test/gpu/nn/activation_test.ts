/**
 * The activation layers added for PyTorch users (ELU, SELU, Mish, Hardswish, Hardsigmoid,
 * PReLU): forward and every gradient through the tape match the f64 references on odd
 * shapes, PReLU's weight is a named parameter initialised as torch.nn.PReLU.
 */
import {
  ELU,
  fromArray,
  Hardsigmoid,
  Hardswish,
  Mish,
  type Module,
  PReLU,
  SELU,
  Sequential,
  Variable,
} from "../../../src/index.ts";
import { preluRef, unaryRef } from "../../reference/unary.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { count, mulberry32, randn } from "../../util/random.ts";

const LAYERS: [string, () => Module, string, number][] = [
  ["ELU()", () => new ELU(), "elu", 1],
  ["ELU(0.3)", () => new ELU(0.3), "elu", 0.3],
  ["SELU", () => new SELU(), "selu", 0],
  ["Mish", () => new Mish(), "mish", 0],
  ["Hardswish", () => new Hardswish(), "hardswish", 0],
  ["Hardsigmoid", () => new Hardsigmoid(), "hardsigmoid", 0],
];

for (const [label, make, ref, alpha] of LAYERS) {
  gpuTest(`${label} forward and input gradient match the f64 reference on [5, 7, 3]`, async () => {
    const shape = [5, 7, 3], n = count(shape);
    const rng = mulberry32(label.length * 17);
    const x = randn(n, rng, 3), dy = randn(n, rng);
    const want = unaryRef(ref, x, dy, alpha, 0);
    const input = new Variable(fromArray(x, shape), true);
    const y = make().forward(input);
    y.backward(fromArray(dy, shape));
    assertRelClose(await y.toArray(), want.y, 1e-4, `${label} y`);
    assertRelClose(await input.grad!.toArray(), want.dx, 1e-4, `${label} dx`);
  });
}

gpuTest("PReLU(numParameters, init) learns one slope per channel: y, dx and dweight match f64", async () => {
  const shape = [3, 5, 7], n = count(shape);
  const rng = mulberry32(23);
  const x = randn(n, rng, 2), dy = randn(n, rng);
  const layer = new PReLU(5, 0.2);
  assertEquals(layer.namedParameters().map(([k, p]) => [k, [...p.data.shape]]), [["weight", [5]]], "parameters");
  assertRelClose(await layer.weight.data.toArray(), new Float32Array(5).fill(0.2), 0, "init");
  const w = randn(5, rng, 0.5);
  layer.weight.data.write(w);
  const input = new Variable(fromArray(x, shape), true);
  const y = new Sequential(layer).forward(input);
  y.backward(fromArray(dy, shape));
  const want = preluRef(x, shape, w, dy);
  assertRelClose(await y.toArray(), want.y, 1e-4, "prelu y");
  assertRelClose(await input.grad!.toArray(), want.dx, 1e-4, "prelu dx");
  assertRelClose(await layer.weight.grad!.toArray(), want.dw, 1e-4, "prelu dweight");
});

gpuTest("PReLU() shares one slope (default 0.25) across every element of any shape", async () => {
  const shape = [33], x = randn(33, mulberry32(8), 2), dy = randn(33, mulberry32(9));
  const layer = new PReLU();
  const y = layer.forward(new Variable(fromArray(x, shape)));
  y.backward(fromArray(dy, shape));
  const want = preluRef(x, shape, [0.25], dy);
  assertRelClose(await y.toArray(), want.y, 1e-4, "shared prelu y");
  assertRelClose(await layer.weight.grad!.toArray(), want.dw, 1e-4, "shared prelu dweight");
});

gpuTest("PReLU and ELU refuse bad settings, naming the knob and value", () => {
  assertThrows(() => new PReLU(0), RangeError, "PReLU", "numParameters", "0");
  assertThrows(() => new PReLU(2.5), RangeError, "numParameters", "2.5");
  assertThrows(() => new ELU(NaN), RangeError, "ELU", "alpha", "NaN");
  const layer = new PReLU(4);
  assertThrows(() => layer.forward(new Variable(fromArray(new Float32Array(6), [2, 3]))), RangeError, "prelu", "[4]", "[2,3]");
});
