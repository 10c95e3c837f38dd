import { apply, Variable } from "../../../../src/autograd/mod.ts";
import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import * as S from "../../../../src/tensor/ops/shape.ts";
import { catRef, expandRef, narrowRef, permuteRef, stackRef } from "../../../reference/shape.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn } from "../../../util/random.ts";

const PERMUTES: [number[], number[]][] = [
  [[7, 33], [1, 0]],
  [[33, 7, 1], [-1, 0, 1]],
  [[1, 257], [1, 0]],
  [[3, 129], [0, 1]],
  [[2, 3, 5, 1, 7], [4, 0, -2, 1, 2]],
  [[2, 3, 2, 3, 2, 3], [5, 4, 3, 2, 1, 0]],
  [[7, 5, 3, 2], [0, 2, 1, 3]],
  // Four words a thread (vec4Plan): attention's heads split and merged, and a 12-wide row.
  [[2, 5, 4, 8], [0, 2, 1, 3]],
  [[2, 4, 5, 8], [0, 2, 1, 3]],
  [[3, 6, 12], [1, 0, 2]],
];

gpuTest("vec4Plan: copies in units of 4 words only where every offset stays a multiple of 4", () => {
  // [B, T, H, D] → [B, H, T, D]: D = 8 is two vec4s, T's stride 32 is 8.
  const v = S.vec4Plan(S.copyPlan([2, 4, 5, 8], [160, 8, 32, 1], [160, 40, 8, 1]));
  assertEquals(v, { n: 80, srcBase: 0, dstBase: 0, dims: [2, 4, 5, 2], src: [40, 2, 8, 1], dst: [40, 10, 2, 1] });
  assertEquals(S.vec4Plan(S.copyPlan([2, 4, 5, 6], [120, 6, 24, 1], [120, 30, 6, 1])), undefined, "row of 6");
  assertEquals(S.vec4Plan(S.copyPlan([3, 8], [10, 1], [8, 1])), undefined, "source stride 10");
  assertEquals(S.vec4Plan(S.copyPlan([3, 8], [16, 1], [8, 1], 2)), undefined, "source base 2");
  assertEquals(S.vec4Plan(S.copyPlan([8, 4], [1, 8], [4, 1])), undefined, "inner dim strided in the source");
});

gpuTest("permute forward and backward match f64 reference, up to 6 dims, negative dims", async () => {
  const rng = mulberry32(11);
  for (const [shape, dims] of PERMUTES) {
    const x = randn(count(shape), rng), dy = randn(count(shape), rng);
    const want = permuteRef(x, shape, dims, dy);
    const { output, grads } = forwardBackward(S.permuteOp, [fromArray(x, shape)], { dims }, fromArray(dy, want.shape));
    const tag = `permute [${shape}] by [${dims}]`;
    assertEquals(output.shape, want.shape, `${tag} shape`);
    assertRelClose(await output.toArray(), want.y, 0, `${tag} y`);
    assertRelClose(await grads[0]!.toArray(), want.dx, 0, `${tag} dx`);
  }
});

gpuTest("transpose swaps two dims and its backward swaps them back", async () => {
  const rng = mulberry32(12);
  const shape = [7, 33, 5], x = randn(count(shape), rng), dy = randn(count(shape), rng);
  const want = permuteRef(x, shape, [2, 1, 0], dy);
  const { output, grads } = forwardBackward(
    S.transposeOp,
    [fromArray(x, shape)],
    { dim0: -1, dim1: 0 },
    fromArray(dy, [5, 33, 7]),
  );
  assertEquals(output.shape, [5, 33, 7], "shape");
  assertRelClose(await output.toArray(), want.y, 0, "y");
  assertRelClose(await grads[0]!.toArray(), want.dx, 0, "dx");
  assertEquals([...await S.transpose(fromArray(x, shape), 1, 1).toArray()], [...x], "transpose of a dim with itself");
});

const EXPANDS: [number[], number[], number[]][] = [
  [[7, 1], [3, 7, 33], [3, 7, 33]],
  [[1], [257], [257]],
  [[33, 1, 7], [-1, 5, -1], [33, 5, 7]],
  [[129], [2, 129], [2, 129]],
  [[7, 33], [7, 33], [7, 33]],
  [[1, 1], [1, 4, 1, 7], [1, 4, 1, 7]],
  [[1, 8], [3, 8], [3, 8]], // four words a thread
];

gpuTest("expand forward matches f64 reference and its gradient sums back", async () => {
  const rng = mulberry32(13);
  for (const [from, target, to] of EXPANDS) {
    const x = randn(count(from), rng), dy = randn(count(to), rng);
    const want = expandRef(x, from, to, dy);
    const { output, grads } = forwardBackward(S.expandOp, [fromArray(x, from)], { shape: target }, fromArray(dy, to));
    const tag = `expand [${from}] to [${target}]`;
    assertEquals(output.shape, to, `${tag} shape`);
    assertRelClose(await output.toArray(), want.y, 0, `${tag} y`);
    assertEquals(grads[0]!.shape, from, `${tag} dx shape`);
    assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, `${tag} dx`);
  }
});

const NARROWS: [number[], number, number, number][] = [
  [[33, 257], 1, 7, 129],
  [[33, 257], 0, -7, 7],
  [[7, 33, 5], -2, 3, 1],
  [[129], 0, 0, 129],
  [[7, 1, 33], 2, 32, 1],
  [[5, 3, 16], 2, 4, 8], // four words a thread, forward and backward
];

gpuTest("narrow forward matches f64 reference and its gradient fills zeros around the slice", async () => {
  const rng = mulberry32(14);
  for (const [shape, dim, start, length] of NARROWS) {
    const d = dim < 0 ? dim + shape.length : dim;
    const s = start < 0 ? start + shape[d] : start;
    const out = shape.map((n, i) => (i === d ? length : n));
    const x = randn(count(shape), rng), dy = randn(count(out), rng);
    const want = narrowRef(x, shape, dim, s, length, dy);
    const dirty = fromArray(randn(count(shape), rng), shape); // pooled memory the zero fill must overwrite
    dirty.dispose();
    const { output, grads } = forwardBackward(
      S.narrowOp,
      [fromArray(x, shape)],
      { dim, start, length },
      fromArray(dy, out),
    );
    const tag = `narrow [${shape}] dim ${dim} start ${start} length ${length}`;
    assertEquals(output.shape, out, `${tag} shape`);
    assertRelClose(await output.toArray(), want.y, 0, `${tag} y`);
    assertRelClose(await grads[0]!.toArray(), want.dx, 0, `${tag} dx`);
  }
});

const CATS: [number[][], number][] = [
  [[[7, 1, 5], [7, 33, 5], [7, 3, 5]], 1],
  [[[1, 33], [7, 33], [129, 33]], 0],
  [[[3, 7], [3, 1], [3, 257]], -1],
  [[[257]], 0],
  [[[3, 4], [3, 8], [3, 12]], 1], // four words a thread
];

gpuTest("cat of inputs with different sizes along dim matches f64 reference with every gradient", async () => {
  const rng = mulberry32(15);
  for (const [shapes, dim] of CATS) {
    const xs = shapes.map((s) => randn(count(s), rng));
    const d = dim < 0 ? dim + shapes[0].length : dim;
    const out = shapes[0].map((n, i) => (i === d ? shapes.reduce((a, s) => a + s[d], 0) : n));
    const dy = randn(count(out), rng);
    const want = catRef(xs, shapes, dim, dy);
    const inputs = xs.map((x, i) => fromArray(x, shapes[i]));
    const { output, grads } = forwardBackward(S.catOp, inputs, { dim }, fromArray(dy, out));
    const tag = `cat ${JSON.stringify(shapes)} dim ${dim}`;
    assertEquals(output.shape, want.shape, `${tag} shape`);
    assertRelClose(await output.toArray(), want.y, 0, `${tag} y`);
    for (let i = 0; i < xs.length; i++) {
      assertEquals(grads[i]!.shape, shapes[i], `${tag} dx${i} shape`);
      assertRelClose(await grads[i]!.toArray(), want.dxs[i], 0, `${tag} dx${i}`);
    }
  }
});

gpuTest("stack at any dim matches f64 reference with every gradient", async () => {
  const rng = mulberry32(16);
  const shape = [7, 33];
  for (const dim of [0, 1, -1]) {
    const xs = [0, 1, 2].map(() => randn(count(shape), rng));
    const dy = randn(3 * count(shape), rng);
    const want = stackRef(xs, shape, dim, dy);
    const inputs = xs.map((x) => fromArray(x, shape));
    const { output, grads } = forwardBackward(S.stackOp, inputs, { dim }, fromArray(dy, want.shape));
    assertEquals(output.shape, want.shape, `stack dim ${dim} shape`);
    assertRelClose(await output.toArray(), want.y, 0, `stack dim ${dim} y`);
    for (let i = 0; i < 3; i++) assertRelClose(await grads[i]!.toArray(), want.dxs[i], 0, `stack dim ${dim} dx${i}`);
    assertRelClose(await inputs[1].toArray(), xs[1], 0, `stack dim ${dim} leaves its inputs intact`);
  }
});

gpuTest("squeeze, unsqueeze, flatten and reshape are views whose gradient is reshaped back", async () => {
  const rng = mulberry32(17);
  const shape = [1, 7, 1, 33], x = randn(count(shape), rng);
  const cases: [string, () => ReturnType<typeof forwardBackward>, number[]][] = [
    ["squeeze all", () => forwardBackward(S.squeezeOp, [fromArray(x, shape)], {}, fromArray(x, [7, 33])), [7, 33]],
    ["squeeze -2", () => forwardBackward(S.squeezeOp, [fromArray(x, shape)], { dim: -2 }, fromArray(x, [1, 7, 33])), [
      1,
      7,
      33,
    ]],
    [
      "unsqueeze -1",
      () => forwardBackward(S.unsqueezeOp, [fromArray(x, shape)], { dim: -1 }, fromArray(x, [...shape, 1])),
      [...shape, 1],
    ],
    [
      "flatten 1..-1",
      () => forwardBackward(S.flattenOp, [fromArray(x, shape)], { startDim: 1, endDim: -1 }, fromArray(x, [1, 231])),
      [1, 231],
    ],
    ["reshape", () => forwardBackward(S.reshapeOp, [fromArray(x, shape)], { shape: [-1, 3] }, fromArray(x, [77, 3])), [
      77,
      3,
    ]],
  ];
  for (const [tag, run, out] of cases) {
    const { output, grads } = run();
    assertEquals(output.shape, out, `${tag} shape`);
    assertRelClose(await output.toArray(), x, 0, `${tag} y`);
    assertEquals(grads[0]!.shape, shape, `${tag} dx shape`);
    assertRelClose(await grads[0]!.toArray(), x, 0, `${tag} dx`);
  }
  const t = fromArray(x, shape);
  assert(S.flatten(t).buffer === t.buffer, "flatten shares the input's memory");
  assertEquals(S.flatten(fromArray([5], [])).shape, [1], "flatten of a scalar");
});

gpuTest("views and copies chain on the autograd tape", async () => {
  const rng = mulberry32(18);
  const x = randn(7 * 5, rng), dy = randn(3 * 7 * 5, rng);
  const v = new Variable(fromArray(x, [7, 5]), true);
  const u = apply(S.unsqueezeOp, [v], { dim: 0 });
  const e = apply(S.expandOp, [u], { shape: [3, -1, -1] });
  const p = apply(S.permuteOp, [e], { dims: [2, 1, 0] });
  const f = apply(S.flattenOp, [p], { startDim: 0, endDim: -1 });
  f.backward(fromArray(dy, [105]));
  const de = permuteRef(dy, [5, 7, 3], [2, 1, 0], new Float64Array(105)).y; // dy of p [5,7,3] back to [3,7,5]
  const want = expandRef(x, [1, 7, 5], [3, 7, 5], de).dx;
  assertRelClose(await v.grad!.toArray(), want, 1e-4, "x.grad");
});

gpuTest("shape copies move i32 values bit-exactly", async () => {
  const a = Int32Array.from({ length: 7 * 33 }, (_, i) => (i * 2654435761) | 0);
  const t = fromArray(a, [7, 33]);
  const want = permuteRef(a, [7, 33], [1, 0], new Float64Array(a.length)).y;
  const y = S.transpose(t, 0, 1);
  assertEquals(y.dtype, "i32", "dtype");
  assertEquals([...await y.toArray()], [...want], "transpose");
  const c = S.cat([t, S.narrow(t, 1, 3, 4)], 1);
  const wc = catRef(
    [a, narrowRef(a, [7, 33], 1, 3, 4, new Float64Array(a.length)).y],
    [[7, 33], [7, 4]],
    1,
    new Float64Array(7 * 37),
  ).y;
  assertEquals([...await c.toArray()], [...wc], "cat of narrow");
});

gpuTest("shape ops name the op, the bad value and both shapes", () => {
  const a = fromArray(new Float32Array(6), [2, 3]), b = fromArray(new Float32Array(8), [2, 4]);
  assertThrows(() => S.cat([a, b], 0), RangeError, "cat", "[2,4]", "[2,3]", "dim 0");
  assertThrows(() => S.cat([a, fromArray(new Int32Array(6), [2, 3])], 0), TypeError, "cat", "i32", "f32");
  assertThrows(() => S.stack([a, b]), RangeError, "stack", "[2,4]", "[2,3]");
  assertThrows(() => S.permute(a, [0, 0]), RangeError, "permute", "[0,0]", "[2,3]");
  assertThrows(() => S.transpose(a, 0, 2), RangeError, "transpose", "dim 2", "[2,3]");
  assertThrows(() => S.narrow(a, 1, 2, 2), RangeError, "narrow", "start 2", "length 2", "size 3");
  assertThrows(() => S.expand(a, [2, 6]), RangeError, "expand", "[2,3]", "[2,6]");
  assertThrows(() => S.unsqueeze(a, 3), RangeError, "unsqueeze", "dim 3");
  assertThrows(() => S.reshape(a, [4, 2]), RangeError, "reshape", "[4,2]");
});
