import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import * as U from "../../../../src/tensor/ops/unary.ts";
import { preluRef, SELU_ALPHA, SELU_SCALE, unaryRef } from "../../../reference/unary.ts";
import { assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn, uniform } from "../../../util/random.ts";

const SHAPES = [[7], [33, 7], [129], [257, 3], [1, 5]];

/** Each op's (a, b), positional as the f64 reference takes them. */
const CASES: [string, [number, number], "normal" | "positive"][] = [
  ["neg", [0, 0], "normal"],
  ["affine", [-1.5, 0.25], "normal"],
  ["abs", [0, 0], "normal"],
  ["exp", [0, 0], "normal"],
  ["log", [0, 0], "positive"],
  ["sqrt", [0, 0], "positive"],
  ["rsqrt", [0, 0], "positive"],
  ["tanh", [0, 0], "normal"],
  ["sigmoid", [0, 0], "normal"],
  ["relu", [0, 0], "normal"],
  ["leakyRelu", [0.1, 0], "normal"],
  ["gelu", [0, 0], "normal"],
  ["geluTanh", [0, 0], "normal"],
  ["silu", [0, 0], "normal"],
  ["softplus", [2, 3], "normal"],
  ["clamp", [-0.5, 0.7], "normal"],
  ["powScalar", [3, 0], "normal"],
  ["powScalar", [0.5, 0], "positive"],
  ["elu", [1, 0], "normal"],
  ["elu", [0.7, 0], "normal"],
  ["selu", [SELU_ALPHA, SELU_SCALE], "normal"],
  ["mish", [0, 0], "normal"],
  ["hardswish", [0, 0], "normal"],
  ["hardsigmoid", [0, 0], "normal"],
];

const OPS: Record<string, ReturnType<typeof U.defineUnary>> = {
  neg: U.negOp, affine: U.affineOp, abs: U.absOp, exp: U.expOp, log: U.logOp, sqrt: U.sqrtOp, rsqrt: U.rsqrtOp,
  tanh: U.tanhOp, sigmoid: U.sigmoidOp, relu: U.reluOp, leakyRelu: U.leakyReluOp, gelu: U.geluOp,
  geluTanh: U.geluTanhOp, silu: U.siluOp, softplus: U.softplusOp, clamp: U.clampOp, powScalar: U.powScalarOp,
  elu: U.eluOp, selu: U.seluOp, mish: U.mishOp, hardswish: U.hardswishOp, hardsigmoid: U.hardsigmoidOp,
};

/** The uniforms (a, b) fill, by op (the op's own names; ops without scalars take none). */
const NAMES: Record<string, U.UnaryScalar[]> = {
  affine: ["scale", "shift"], leakyRelu: ["slope"], softplus: ["beta", "threshold"], clamp: ["lo", "hi"],
  powScalar: ["exponent"], elu: ["alpha"], selu: ["alpha", "scale"],
};

for (const [name, [a, b], dist] of CASES) {
  const attrs: U.UnaryAttrs = Object.fromEntries((NAMES[name] ?? []).map((k, i) => [k, [a, b][i]]));
  gpuTest(`unary ${name}(${a}, ${b}) forward and backward match f64 reference on odd shapes`, async () => {
    const rng = mulberry32(name.length * 31 + a * 7);
    for (const shape of SHAPES) {
      const n = count(shape);
      const x = dist === "positive" ? uniform(n, rng, 0.05, 4) : randn(n, rng, 3);
      const dy = randn(n, rng);
      const want = unaryRef(name, x, dy, a, b);
      const { output, grads } = forwardBackward(OPS[name], [fromArray(x, shape)], attrs, fromArray(dy, shape));
      assertRelClose(await output.toArray(), want.y, 1e-4, `${name} y ${shape}`);
      assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `${name} dx ${shape}`);
    }
  });
}

gpuTest("selu passes its own constants: the tensor-level selu matches the f64 reference", async () => {
  const rng = mulberry32(91);
  const x = randn(65, rng, 3);
  assertRelClose(await U.selu(fromArray(x)).toArray(), unaryRef("selu", x, x).y, 1e-4, "selu y");
  assertRelClose(await U.elu(fromArray(x)).toArray(), unaryRef("elu", x, x, 1).y, 1e-4, "elu default alpha 1");
});

gpuTest("mish keeps relative accuracy far in the negative tail, where softplus is tiny", async () => {
  const x = Float32Array.from([-18, -12, -9, -5, -1e-3, 0, 1e-3, 25]);
  const dy = new Float32Array(x.length).fill(1);
  const want = unaryRef("mish", x, dy);
  const { output, grads } = forwardBackward(U.mishOp, [fromArray(x)], {}, fromArray(dy));
  // Each value against itself (no shared floor): the tail is where tanh(softplus) cancels.
  const got = await output.toArray(), dx = await grads[0]!.toArray();
  for (let i = 0; i < x.length; i++) {
    assertRelClose([got[i]], [want.y[i]], 1e-4, `mish(${x[i]})`);
    assertRelClose([dx[i]], [want.dx[i]], 1e-4, `mish'(${x[i]})`);
  }
});

for (const [shape, channels] of [[[7, 5], 5], [[3, 4, 9, 5], 4], [[33, 3, 7], 1], [[129], 1]] as [number[], number][]) {
  gpuTest(`prelu forward, dx and dw match f64 reference on [${shape}] with ${channels} weight(s)`, async () => {
    const rng = mulberry32(shape.length * 13 + channels);
    const n = count(shape);
    const x = randn(n, rng, 2), dy = randn(n, rng), w = randn(channels, rng, 0.5);
    const want = preluRef(x, shape, w, dy);
    const { output, grads } = forwardBackward(U.preluOp, [fromArray(x, shape), fromArray(w, [channels])], undefined, fromArray(dy, shape));
    assertRelClose(await output.toArray(), want.y, 1e-4, `prelu y ${shape}`);
    assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `prelu dx ${shape}`);
    assertRelClose(await grads[1]!.toArray(), want.dw, 1e-4, `prelu dw ${shape}`);
  });
}

gpuTest("prelu refuses a weight that does not match the channels, naming both shapes", () => {
  assertThrows(() => U.prelu(fromArray(new Float32Array(12), [3, 4]), fromArray([1, 2, 3], [3])), RangeError, "prelu", "[3]", "[3,4]");
  assertThrows(() => U.prelu(fromArray(new Float32Array(3), [3]), fromArray([1, 2, 3], [3])), RangeError, "prelu", "dim 1");
});

gpuTest("exact gelu keeps relative accuracy far in the negative tail", async () => {
  const x = Float32Array.from([-9, -7, -5.5, -4, -3, -1e-3, 0, 1e-3, 6]);
  const dy = new Float32Array(x.length).fill(1);
  const want = unaryRef("gelu", x, dy);
  const { output, grads } = forwardBackward(U.geluOp, [fromArray(x)], {}, fromArray(dy));
  assertRelClose(await output.toArray(), want.y, 1e-4, "gelu tail y");
  assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, "gelu tail dx");
});

gpuTest("relu and abs have gradient 0 at 0; tanh and sigmoid stay finite for huge inputs", async () => {
  const x = fromArray([0, 0, 1e30, -1e30]);
  const dy = fromArray([1, 1, 1, 1]);
  const relu = forwardBackward(U.reluOp, [x], {}, dy);
  assertRelClose(await relu.grads[0]!.toArray(), [0, 0, 1, 0], 0, "relu'(0)");
  const abs = forwardBackward(U.absOp, [x], {}, dy);
  assertRelClose(await abs.grads[0]!.toArray(), [0, 0, 1, -1], 0, "abs'(0)");
  assertRelClose(await U.tanh(x).toArray(), [0, 0, 1, -1], 0, "tanh saturates");
  assertRelClose(await U.sigmoid(x).toArray(), [0.5, 0.5, 1, 0], 0, "sigmoid saturates");
});

// NOTE: WGSL leaves NaN propagation to the implementation (SwiftShader's exp(NaN) is +Inf,
// lavapipe's is NaN); what must hold everywhere is that a NaN never turns into a finite value.
gpuTest("a NaN input never comes out finite", async () => {
  const x = fromArray([NaN, 1]);
  for (const [name, y] of [["exp", U.exp(x)], ["relu", U.relu(x)], ["tanh", U.tanh(x)], ["sigmoid", U.sigmoid(x)]] as const) {
    const v = await y.toArray();
    if (Number.isFinite(v[0])) throw new Error(`${name}(NaN) came out finite: ${v[0]}`);
  }
});

gpuTest("unary ops refuse integer tensors and clamp refuses min > max", () => {
  assertThrows(() => U.relu(fromArray(new Int32Array([1, 2])), ), TypeError, "relu", "i32");
  assertThrows(() => U.clamp(fromArray([1]), 2, 1), RangeError, "clamp", "min 2", "max 1");
});

gpuTest("a unary op refuses a scalar it does not take, naming the op, its scalars and the name", () => {
  const x = fromArray([1, 2, 3]);
  assertThrows(() => U.affineOp.forward([x], { alpha: 2 }), TypeError, "affine", "scale, shift", `"alpha"`);
  assertThrows(() => U.reluOp.forward([x], { slope: 0.1 }), TypeError, "relu", "no scalars", `"slope"`);
});
