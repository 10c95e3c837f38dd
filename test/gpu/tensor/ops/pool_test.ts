import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward, type OpDef } from "../../../../src/tensor/op.ts";
import {
  adaptiveAvgPool2d,
  adaptiveAvgPool2dOp,
  avgPool2d,
  avgPool2dOp,
  maxPool2d,
  maxPool2dOp,
  maxPool2dWithIndices,
} from "../../../../src/tensor/ops/pool.ts";
import {
  adaptiveAvgPool2dRef,
  avgPool2dRef,
  maxPool2dRef,
  type Pair,
  type PoolRefOptions,
  poolRefShape,
} from "../../../reference/pool.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { POOL_GOLDEN } from "../../../util/golden_cases.ts";
import { count, mulberry32, randn } from "../../../util/random.ts";

interface Case {
  x: number[];
  o: PoolRefOptions;
}

const c = (x: number[], kernel: Pair, o: Partial<PoolRefOptions> = {}): Case => ({
  x,
  o: { kernel, stride: kernel, padding: [0, 0], dilation: [1, 1], ceilMode: false, countIncludePad: true, ...o },
});

const MAX_CASES: Case[] = [
  c([3, 4, 24, 24], [2, 2]), // LeNet's pooling
  c([1, 3, 7, 9], [3, 3], { stride: [2, 2], padding: [1, 1] }),
  c([3, 1, 13, 9], [3, 3], { stride: [2, 2], padding: [1, 1], ceilMode: true }),
  c([1, 4, 9, 13], [3, 2], { stride: [1, 2], padding: [1, 1], dilation: [2, 1] }),
  c([3, 3, 13, 13], [5, 5], { stride: [3, 3], padding: [2, 2], dilation: [2, 2], ceilMode: true }),
  c([4, 9, 7], [2, 2], { stride: [1, 1] }),
];

const AVG_CASES: Case[] = [
  c([3, 4, 24, 24], [2, 2]),
  c([1, 3, 7, 9], [3, 3], { stride: [2, 2], padding: [1, 1] }),
  c([3, 1, 13, 9], [3, 3], { stride: [2, 2], padding: [1, 1], ceilMode: true }),
  c([3, 1, 13, 9], [3, 3], { stride: [2, 2], padding: [1, 1], ceilMode: true, countIncludePad: false }),
  c([1, 4, 9, 13], [5, 3], { stride: [3, 1], padding: [2, 1], countIncludePad: false }),
  c([4, 9, 7], [3, 3], { stride: [3, 3], ceilMode: true }),
];

const ADAPTIVE_CASES: [number[], Pair][] = [
  [[3, 4, 7, 9], [3, 4]],
  [[1, 3, 13, 13], [5, 5]],
  [[3, 1, 9, 7], [9, 7]],
  [[1, 2, 5, 7], [8, 11]],
  [[4, 13, 9], [1, 1]],
];

function attrsOf(o: PoolRefOptions) {
  return {
    kernelSize: o.kernel,
    stride: o.stride,
    padding: o.padding,
    dilation: o.dilation,
    ceilMode: o.ceilMode,
    countIncludePad: o.countIncludePad,
  };
}

for (const kind of ["max", "avg"] as const) {
  for (const k of kind === "max" ? MAX_CASES : AVG_CASES) {
    const name = `${kind}Pool2d x [${k.x}] kernel [${k.o.kernel}] stride [${k.o.stride}] padding [${k.o.padding}] ` +
      `dilation [${k.o.dilation}] ceilMode ${k.o.ceilMode} countIncludePad ${k.o.countIncludePad}`;
    gpuTest(`${name}: output and gradient match f64 reference`, async () => {
      const rng = mulberry32(name.length * 17);
      const xs = k.x.length === 3 ? [1, ...k.x] : k.x;
      const ys4 = poolRefShape(xs, k.o);
      const ys = k.x.length === 3 ? ys4.slice(1) : ys4;
      const x = randn(count(xs), rng), dy = randn(count(ys), rng);
      const want = (kind === "max" ? maxPool2dRef : avgPool2dRef)(x, xs, k.o, dy);
      const op = (kind === "max" ? maxPool2dOp : avgPool2dOp) as OpDef<unknown>;
      const { output, grads } = forwardBackward(op, [fromArray(x, k.x)], attrsOf(k.o), fromArray(dy, ys));
      assertEquals(output.shape, ys, "output shape");
      assertRelClose(await output.toArray(), want.y, 1e-4, "y");
      assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, "dx");
    });
  }
}

for (const [xs, out] of ADAPTIVE_CASES) {
  gpuTest(`adaptiveAvgPool2d x [${xs}] to [${out}]: output and gradient match f64 reference`, async () => {
    const rng = mulberry32(xs.length * 1000 + out[0] * 10 + out[1]);
    const xs4 = xs.length === 3 ? [1, ...xs] : xs;
    const ys = [...xs.slice(0, -2), ...out];
    const x = randn(count(xs), rng), dy = randn(count(ys), rng);
    const want = adaptiveAvgPool2dRef(x, xs4, out, dy);
    const { output, grads } = forwardBackward(
      adaptiveAvgPool2dOp,
      [fromArray(x, xs)],
      { outputSize: out },
      fromArray(dy, ys),
    );
    assertEquals(output.shape, ys, "output shape");
    assertRelClose(await output.toArray(), want.y, 1e-4, "y");
    assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, "dx");
  });
}

const GOLDEN_OPS = { maxPool2d: maxPool2dOp, avgPool2d: avgPool2dOp, adaptiveAvgPool2d: adaptiveAvgPool2dOp } as Record<
  string,
  OpDef<unknown>
>;

for (const g of POOL_GOLDEN) {
  gpuTest(`${g.op} matches PyTorch golden values: ${g.name}`, async () => {
    const { output, grads } = forwardBackward(
      GOLDEN_OPS[g.op],
      [fromArray(g.x.data, g.x.shape)],
      g.options,
      fromArray(g.dy.data, g.dy.shape),
    );
    assertEquals(output.shape, g.y.shape, "output shape");
    assertRelClose(await output.toArray(), g.y.data, 1e-4, "y");
    assertRelClose(await grads[0]!.toArray(), g.dx.data, 1e-4, "dx");
  });
}

gpuTest("maxPool2dWithIndices returns PyTorch's in-plane indices of the first maximum", async () => {
  // Two 2x4 planes; 2x2 windows. Ties pick the first in row-major window order.
  const x = fromArray([1, 5, 5, 0, 5, 2, 3, 3, 7, 7, 7, 7, 7, 7, 7, 7], [1, 2, 2, 4]);
  const { output, indices } = maxPool2dWithIndices(x, { kernelSize: 2 });
  assertEquals([...await output.toArray()], [5, 5, 7, 7], "values");
  assertEquals([...await indices.toArray()], [1, 2, 0, 2], "indices");
});

gpuTest("pooling functions default stride to kernelSize and accept numbers for both dims", async () => {
  const rng = mulberry32(3);
  const xs = [1, 2, 9, 7];
  const x = randn(count(xs), rng);
  const o: PoolRefOptions = {
    kernel: [3, 3],
    stride: [3, 3],
    padding: [1, 1],
    dilation: [1, 1],
    ceilMode: false,
    countIncludePad: true,
  };
  const zero = new Float32Array(count(poolRefShape(xs, o)));
  assertRelClose(
    await maxPool2d(fromArray(x, xs), { kernelSize: 3, padding: 1 }).toArray(),
    maxPool2dRef(x, xs, o, zero).y,
    1e-4,
    "max",
  );
  assertRelClose(
    await avgPool2d(fromArray(x, xs), { kernelSize: 3, padding: 1 }).toArray(),
    avgPool2dRef(x, xs, o, zero).y,
    1e-4,
    "avg",
  );
  const ad = adaptiveAvgPool2d(fromArray(x, xs), 4);
  assertEquals(ad.shape, [1, 2, 4, 4], "adaptive shape");
  assertRelClose(await ad.toArray(), adaptiveAvgPool2dRef(x, xs, [4, 4], new Float32Array(32)).y, 1e-4, "adaptive");
});

gpuTest("pooling ops refuse non-f32 tensors and name the op", async (device) => {
  const x = fromArray(new Int32Array(49), [1, 1, 7, 7]);
  assertThrows(() => maxPool2d(x, { kernelSize: 2 }), TypeError, "maxPool2d", "i32");
  assertThrows(() => avgPool2d(x, { kernelSize: 2 }), TypeError, "avgPool2d", "i32");
  assertThrows(() => adaptiveAvgPool2d(x, 2), TypeError, "adaptiveAvgPool2d", "i32");
  await device.sync(); // leave no upload in flight when the test file ends
});
