import {
  adaptiveAvgPool2dRef,
  avgPool2dRef,
  maxPool2dRef,
  type Pair,
  type PoolRefOptions,
  pool1dRef,
  pool1dRefShape,
  type Pool1dRefOptions,
  type PoolRefResult,
  poolRefShape,
} from "../../reference/pool.ts";
import { assertEquals, assertRelClose } from "../../util/assert.ts";
import { POOL_GOLDEN } from "../../util/golden_cases.ts";
import { numGrad } from "../../util/numerical_gradient.ts";
import { count, mulberry32, randn } from "../../util/random.ts";

const opts = (o: Partial<PoolRefOptions> & { kernel: Pair }): PoolRefOptions => ({
  stride: o.kernel,
  padding: [0, 0],
  dilation: [1, 1],
  ceilMode: false,
  countIncludePad: true,
  ...o,
});

function check(
  label: string,
  xs: number[],
  ys: number[],
  f: (x: Float64Array, dy: ArrayLike<number>) => PoolRefResult,
) {
  const rng = mulberry32(label.length * 104729);
  const x = Float64Array.from(randn(count(xs), rng));
  const dy = randn(count(ys), rng);
  const got = f(x, dy);
  assertEquals(got.y.length, count(ys), `${label} y length`);
  assertRelClose(got.dx, numGrad((v) => f(v, dy).y, x, dy, 1e-5), 1e-6, `${label} dx`);
}

Deno.test("maxPool2dRef gradient matches central differences (dilation, padding, ceilMode)", () => {
  const o = opts({ kernel: [3, 2], stride: [2, 1], padding: [1, 1], dilation: [2, 1], ceilMode: true });
  const xs = [2, 3, 7, 6];
  check("max", xs, poolRefShape(xs, o), (x, dy) => maxPool2dRef(x, xs, o, dy));
});

Deno.test("avgPool2dRef gradient matches central differences with and without countIncludePad", () => {
  for (const countIncludePad of [true, false]) {
    const o = opts({ kernel: [3, 3], stride: [2, 2], padding: [1, 1], ceilMode: true, countIncludePad });
    const xs = [2, 2, 8, 7];
    check(`avg ${countIncludePad}`, xs, poolRefShape(xs, o), (x, dy) => avgPool2dRef(x, xs, o, dy));
  }
});

Deno.test("adaptiveAvgPool2dRef gradient matches central differences on non-divisible sizes", () => {
  const xs = [2, 2, 7, 5];
  check("adaptive", xs, [2, 2, 3, 4], (x, dy) => adaptiveAvgPool2dRef(x, xs, [3, 4], dy));
});

Deno.test("pool references agree with PyTorch's float64 golden values", () => {
  for (const c of POOL_GOLDEN) {
    const xs = c.x.shape.length === 3 ? [1, ...c.x.shape] : c.x.shape;
    // The fixture stores float32 inputs with 9 digits: round them back to the float32 torch used.
    const x = Float32Array.from(c.x.data), dy = Float32Array.from(c.dy.data);
    let r: PoolRefResult;
    if (c.op === "adaptiveAvgPool2d") {
      r = adaptiveAvgPool2dRef(x, xs, c.options.outputSize!, dy);
    } else {
      const k = c.options.kernelSize!;
      const o = opts({
        kernel: k,
        stride: c.options.stride ?? k,
        padding: c.options.padding ?? [0, 0],
        dilation: c.options.dilation ?? [1, 1],
        ceilMode: c.options.ceilMode ?? false,
        countIncludePad: c.options.countIncludePad ?? true,
      });
      assertEquals(poolRefShape(xs, o).slice(4 - c.y.shape.length), c.y.shape, `${c.name} shape`);
      r = (c.op === "maxPool2d" ? maxPool2dRef : avgPool2dRef)(x, xs, o, dy);
    }
    assertRelClose(r.y, c.y.data, 1e-8, `${c.name} y`);
    assertRelClose(r.dx, c.dx.data, 1e-8, `${c.name} dx`);
  }
});

Deno.test("pool1dRef max and avg gradients match central differences (padding, dilation, ceilMode, odd length)", () => {
  const rng = mulberry32(2805);
  const cases: Pool1dRefOptions[] = [
    { kernel: 3, stride: 2, padding: 1, dilation: 2, ceilMode: true, countIncludePad: true },
    { kernel: 4, stride: 3, padding: 2, dilation: 1, ceilMode: true, countIncludePad: false },
    { kernel: 2, stride: 2, padding: 0, dilation: 1, ceilMode: false, countIncludePad: true },
  ];
  for (const o of cases) {
    for (const kind of ["max", "avg"] as const) {
      const xs = [2, 3, 13];
      const x = Float64Array.from(randn(count(xs), rng));
      const dy = randn(count(pool1dRefShape(xs, o)), rng);
      const got = pool1dRef(kind, x, xs, o, dy);
      assertRelClose(got.dx, numGrad((v) => pool1dRef(kind, v, xs, o, dy).y, x, dy, 1e-5), 1e-6, `${kind} ${JSON.stringify(o)} dx`);
    }
  }
});
