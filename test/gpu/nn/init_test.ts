import { Parameter } from "../../../src/autograd/mod.ts";
import { Tensor } from "../../../src/tensor/mod.ts";
import * as init from "../../../src/nn/init.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";

/** Mean, standard deviation and largest |x| of the values, in f64. */
function moments(x: ArrayLike<number>) {
  let s = 0, m = 0;
  for (let i = 0; i < x.length; i++) {
    s += x[i];
    m = Math.max(m, Math.abs(x[i]));
  }
  const mean = s / x.length;
  let v = 0;
  for (let i = 0; i < x.length; i++) v += (x[i] - mean) ** 2;
  let min = Infinity, max = -Infinity;
  for (let i = 0; i < x.length; i++) [min, max] = [Math.min(min, x[i]), Math.max(max, x[i])];
  return { mean, std: Math.sqrt(v / x.length), maxAbs: m, min, max };
}

/**
 * Statistical checks on n samples: the mean within 6 standard errors, the standard deviation
 * within 3% (n ≥ 33k gives a relative standard error under 0.5%).
 */
function checkMoments(x: ArrayLike<number>, mean: number, std: number, label: string) {
  const got = moments(x);
  const se = std / Math.sqrt(x.length);
  assert(Math.abs(got.mean - mean) < 6 * se, `${label}: mean ${got.mean}, want ${mean} ± ${6 * se}`);
  assert(Math.abs(got.std / std - 1) < 0.03, `${label}: std ${got.std}, want ${std}`);
  return got;
}

/** A uniform U(−b, b): inside the bound, reaching close to it, with std b/√3. */
function checkUniform(x: ArrayLike<number>, bound: number, label: string) {
  const got = checkMoments(x, 0, bound / Math.sqrt(3), label);
  assert(got.maxAbs <= bound * (1 + 1e-6), `${label}: max |x| ${got.maxAbs} exceeds bound ${bound}`);
  assert(got.maxAbs > bound * 0.99, `${label}: max |x| ${got.maxAbs} does not approach bound ${bound}`);
}

const OUT = 257, IN = 129;

gpuTest("uniform and normal fill an existing tensor with the right bounds and moments", async () => {
  const t = Tensor.empty([OUT, IN]).keep();
  assert(init.uniform(t, -0.3, 0.7, 5) === t, "returns the tensor it wrote");
  const u = moments(await t.toF32());
  assert(u.min >= -0.3 && u.max < 0.7 && u.min < -0.29 && u.max > 0.69, `uniform range [${u.min}, ${u.max}]`);
  checkMoments(await t.toF32(), 0.2, 1 / Math.sqrt(12), "uniform(-0.3, 0.7)");
  init.normal(t, 1.5, 2, 6);
  checkMoments(await t.toF32(), 1.5, 2, "normal(1.5, 2)");
  init.constant(t, 0.25);
  assertEquals(moments(await t.toF32()).min, 0.25, "constant");
  init.zeros(t);
  assertEquals(moments(await t.toF32()).maxAbs, 0, "zeros");
  init.ones(t);
  assertEquals(moments(await t.toF32()).min, 1, "ones");
  t.dispose();
});

gpuTest("kaiming and xavier use PyTorch's bound and std formulas", async () => {
  const t = Tensor.empty([OUT, IN]).keep();
  init.kaimingUniform(t, { seed: 1 }); // a = 0, leaky_relu: gain √2
  checkUniform(await t.toF32(), Math.sqrt(2) * Math.sqrt(3 / IN), "kaimingUniform fanIn");
  init.kaimingUniform(t, { mode: "fanOut", nonlinearity: "relu", seed: 2 });
  checkUniform(await t.toF32(), Math.sqrt(2) * Math.sqrt(3 / OUT), "kaimingUniform fanOut relu");
  init.kaimingUniform(t, { a: 0.2, seed: 3 });
  checkUniform(await t.toF32(), Math.sqrt(2 / 1.04) * Math.sqrt(3 / IN), "kaimingUniform a=0.2");
  init.kaimingNormal(t, { nonlinearity: "tanh", seed: 4 });
  checkMoments(await t.toF32(), 0, (5 / 3) / Math.sqrt(IN), "kaimingNormal tanh");
  init.xavierUniform(t, 2, 5);
  checkUniform(await t.toF32(), 2 * Math.sqrt(6 / (IN + OUT)), "xavierUniform gain 2");
  init.xavierNormal(t, 0.5, 6);
  checkMoments(await t.toF32(), 0, 0.5 * Math.sqrt(2 / (IN + OUT)), "xavierNormal gain 0.5");
  t.dispose();
});

gpuTest("PyTorch default init of Linear, Conv2d and ConvTranspose2d: U(±1/√fanIn) for weight and bias", async () => {
  const cases: [string, (w: Parameter, b: Parameter) => number, number[], number, number][] = [
    // [name, helper, weight shape, bias size, fanIn as PyTorch computes it]
    ["Linear(1031, 129)", init.initLinear, [129, 1031], 129, 1031],
    ["Conv2d(6, 32, 5, groups=2)", init.initConv, [32, 3, 5, 5], 32, 3 * 25],
    ["ConvTranspose2d(16, 24, 3)", init.initConvTranspose, [16, 24, 3, 3], 24, 24 * 9],
  ];
  for (const [name, fn, shape, nb, fanIn] of cases) {
    const w = new Parameter(Tensor.empty(shape)), b = new Parameter(Tensor.empty([nb]));
    const bound = fn(w, b);
    assertEquals(bound, 1 / Math.sqrt(fanIn), `${name} bound`);
    checkUniform(await w.data.toF32(), bound, `${name} weight`);
    const bias = moments(await b.data.toF32());
    assert(bias.maxAbs <= bound && bias.maxAbs > bound / 4, `${name} bias max |b| ${bias.maxAbs} vs bound ${bound}`);
  }
});

gpuTest("initialisers are seeded: the same seed gives the same values, another seed others", async () => {
  const a = Tensor.empty([33, 7]).keep(), b = Tensor.empty([33, 7]).keep();
  init.kaimingUniform(a, { seed: 42 });
  init.kaimingUniform(b, { seed: 42 });
  assertEquals([...await a.toF32()], [...await b.toF32()], "same seed");
  init.kaimingUniform(b, { seed: 43 });
  assert(JSON.stringify([...await a.toF32()]) !== JSON.stringify([...await b.toF32()]), "another seed");
  const w1 = Tensor.empty([9, 5]).keep(),
    b1 = Tensor.empty([9]).keep(),
    w2 = Tensor.empty([9, 5]).keep(),
    b2 = Tensor.empty([9]).keep();
  init.initDefault(w1, b1, 7);
  init.initDefault(w2, b2, 7);
  assertEquals([...await b1.toF32()], [...await b2.toF32()], "bias from the same seed");
  for (const t of [a, b, w1, b1, w2, b2]) t.dispose();
});

gpuTest("initialisers refuse non-f32 tensors, too few dims and bad arguments", () => {
  const i = Tensor.empty([4, 4], { dtype: "i32" });
  assertThrows(() => init.uniform(i), TypeError, "uniform", "f32", "i32");
  assertThrows(() => init.kaimingUniform(Tensor.empty([7])), RangeError, "at least 2 dimensions", "[7]");
  assertThrows(() => init.uniform(Tensor.empty([3]), 1, 0), RangeError, "lo must be <= hi", "lo=1 hi=0");
  assertThrows(() => init.normal(Tensor.empty([3]), 0, -1), RangeError, "std must be >= 0", "-1");
  assertThrows(() => init.kaimingNormal(Tensor.empty([3, 3]), { mode: "in" as "fanIn" }), RangeError, "mode", `"in"`);
  assertEquals(init.kaimingUniform(Tensor.empty([0, 3])).numel, 0, "empty tensor is a no-op");
});
