/**
 * groupNorm and GroupNorm (src/nn/functional.ts, src/nn/group_norm.ts): output and the gradients
 * of x, weight and bias match the f64 reference on odd shapes and PyTorch's own values
 * (make_torch_golden.py: 3-D to 5-D inputs, one group, a group per channel, no affine);
 * the layer has PyTorch's parameter names and init, and the errors name the argument.
 */
import { F, fromArray, GroupNorm, Variable } from "../../../../src/index.ts";
import { groupNormRef } from "../../../reference/norm.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn } from "../../../util/random.ts";
import { golden, values } from "./golden.ts";

/** Forward and backward of F.groupNorm; weight and bias only when given. */
async function run(x: Float32Array, shape: number[], groups: number, w: Float32Array | undefined, b: Float32Array | undefined, eps: number, dy: Float32Array) {
  const xv = new Variable(fromArray(x, shape), true);
  const wv = w ? new Variable(fromArray(w, [w.length]), true) : undefined;
  const bv = b ? new Variable(fromArray(b, [b.length]), true) : undefined;
  const y = F.groupNorm(xv, groups, wv, bv, eps);
  assertEquals(y.shape, shape, "groupNorm keeps x's shape");
  y.backward(fromArray(dy, shape));
  return {
    y: await y.data.toArray(),
    dx: await xv.grad!.toArray(),
    dw: wv ? await wv.grad!.toArray() : undefined,
    db: bv ? await bv.grad!.toArray() : undefined,
  };
}

gpuTest("groupNorm output and the x, weight and bias gradients match the f64 reference on odd shapes", async () => {
  const rng = mulberry32(2808);
  for (const [shape, groups, affine] of [[[3, 6, 5, 7], 2, true], [[2, 9, 11], 3, false], [[1, 4, 3, 3, 5], 4, true], [[5, 3], 1, true]] as const) {
    const n = count(shape), c = shape[1], s = n / (shape[0] * c);
    const x = randn(n, rng, 3), dy = randn(n, rng);
    for (let i = 0; i < n; i++) x[i] += 1.5; // a mean far from 0
    const w = affine ? randn(c, rng) : undefined, b = affine ? randn(c, rng) : undefined;
    const want = groupNormRef(x, shape[0], c, s, groups, w, b, 1e-5, dy);
    const got = await run(x, [...shape], groups, w, b, 1e-5, dy);
    const tag = `groupNorm [${shape}] ${groups} groups`;
    assertRelClose(got.y, want.y, 1e-4, `${tag} y`);
    assertRelClose(got.dx, want.dx, 1e-4, `${tag} dx`);
    if (affine) {
      assertRelClose(got.dw!, want.dw, 1e-4, `${tag} dw`);
      assertRelClose(got.db!, want.db, 1e-4, `${tag} db`);
    }
  }
});

gpuTest("groupNorm matches PyTorch's group_norm values and gradients", async () => {
  for (const k of golden.groupNorm) {
    const w = "w" in k && k.w ? new Float32Array(values(k.w)) : undefined;
    const b = "b" in k && k.b ? new Float32Array(values(k.b)) : undefined;
    const got = await run(new Float32Array(values(k.x)), k.x.shape, k.groups, w, b, k.eps, new Float32Array(values(k.dy)));
    assertRelClose(got.y, values(k.y), 1e-4, `${k.name} y`);
    assertRelClose(got.dx, values(k.dx), 1e-4, `${k.name} dx`);
    if (w) {
      assertRelClose(got.dw!, values(k.dw!), 1e-4, `${k.name} dw`);
      assertRelClose(got.db!, values(k.db!), 1e-4, `${k.name} db`);
    }
  }
});

gpuTest("GroupNorm has PyTorch's parameter names and init, and trains them", async () => {
  const layer = new GroupNorm(2, 4);
  assertEquals(layer.namedParameters().map(([name, p]) => [name, p.shape]), [["weight", [4]], ["bias", [4]]]);
  assertEquals(Array.from(await layer.weight!.data.toArray()), [1, 1, 1, 1]);
  assertEquals(Array.from(await layer.bias!.data.toArray()), [0, 0, 0, 0]);
  assertEquals(new GroupNorm(1, 3, { affine: false }).namedParameters().length, 0);
  const rng = mulberry32(2809);
  const shape = [2, 4, 3, 3], n = count(shape);
  const x = randn(n, rng), dy = randn(n, rng);
  const y = layer.forward(new Variable(fromArray(x, shape)));
  y.backward(fromArray(dy, shape));
  const want = groupNormRef(x, 2, 4, 9, 2, [1, 1, 1, 1], [0, 0, 0, 0], 1e-5, dy);
  assertRelClose(await y.data.toArray(), want.y, 1e-4, "GroupNorm y");
  assertRelClose(await layer.weight!.grad!.toArray(), want.dw, 1e-4, "GroupNorm dweight");
  assertRelClose(await layer.bias!.grad!.toArray(), want.db, 1e-4, "GroupNorm dbias");
});

gpuTest("groupNorm and GroupNorm refuse groups that do not divide C, wrong shapes and a bad eps, naming each", () => {
  const x = new Variable(fromArray(new Float32Array(24), [2, 6, 2]));
  assertThrows(() => F.groupNorm(x, 4), RangeError, "groupNorm", "numGroups", "6 channels", "4");
  assertThrows(() => F.groupNorm(x, 0), RangeError, "numGroups", "0");
  assertThrows(() => F.groupNorm(new Variable(fromArray(new Float32Array(6), [6])), 2), RangeError, "groupNorm", "[N, C, *]", "[6]");
  assertThrows(() => F.groupNorm(x, 2, new Variable(fromArray(new Float32Array(4), [4]))), RangeError, "weight", "[6]", "[4]");
  assertThrows(() => F.groupNorm(x, 2, null, new Variable(fromArray(new Float32Array(3), [3]))), RangeError, "bias", "[6]", "[3]");
  assertThrows(() => F.groupNorm(x, 2, null, null, -1), RangeError, "groupNorm", "eps", "-1");
  assertThrows(() => new GroupNorm(4, 6), RangeError, "GroupNorm", "numGroups", "6", "4");
  assertThrows(() => new GroupNorm(2, 6, { eps: NaN }), RangeError, "GroupNorm", "eps", "NaN");
  assertThrows(() => new GroupNorm(2, 4).forward(x), RangeError, "GroupNorm", "4 channels", "[2,6,2]");
});
