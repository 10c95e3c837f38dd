/**
 * interpolate and Upsample (src/nn/functional.ts, src/nn/upsample.ts): "nearest", "linear",
 * "bilinear" and "trilinear", by size or factor, up and down, with and without alignCorners:
 * output and input gradient match the f64 reference on random inputs and PyTorch's own
 * values (make_torch_golden.py); the errors name the option and the value.
 */
import { F, fromArray, Upsample, Variable } from "../../../../src/index.ts";
import type { InterpolateOptions } from "../../../../src/index.ts";
import { interpolateRef } from "../../../reference/interpolate.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn } from "../../../util/random.ts";
import { golden, values } from "./golden.ts";

async function run(x: Float32Array, shape: number[], options: InterpolateOptions, dy: (n: number) => Float32Array) {
  const input = new Variable(fromArray(x, shape), true);
  const y = F.interpolate(input, options);
  const g = dy(count(y.shape));
  y.backward(fromArray(g, y.shape));
  return { shape: [...y.shape], y: await y.data.toArray(), dx: await input.grad!.toArray(), dy: g };
}

gpuTest("interpolate matches the f64 reference in every mode, by size and by factor, up and down", async () => {
  const rng = mulberry32(2812);
  const cases: [number[], InterpolateOptions][] = [
    [[2, 3, 6, 5], { size: [11, 3], mode: "nearest" }],
    [[1, 2, 4, 7], { scaleFactor: [1.5, 0.6], mode: "nearest" }],
    [[2, 2, 5], { scaleFactor: 3, mode: "linear" }],
    [[2, 3, 5, 6], { size: [9, 4], mode: "bilinear" }],
    [[2, 3, 5, 6], { size: [9, 4], mode: "bilinear", alignCorners: true }],
    [[1, 2, 3, 2, 4], { scaleFactor: 2, mode: "trilinear" }],
  ];
  for (const [shape, options] of cases) {
    const x = randn(count(shape), rng);
    const got = await run(x, shape, options, (n) => randn(n, rng));
    const want = interpolateRef(x, shape, { ...options, mode: options.mode! }, got.dy);
    const tag = `interpolate [${shape}] ${JSON.stringify(options)}`;
    assertEquals(got.shape, want.shape, `${tag} shape`);
    assertRelClose(got.y, want.y, 1e-5, `${tag} y`);
    assertRelClose(got.dx, want.dx, 1e-5, `${tag} dx`);
  }
});

gpuTest("interpolate matches PyTorch's values and input gradients", async () => {
  for (const k of golden.interpolate) {
    const dy = values(k.dy);
    const got = await run(new Float32Array(values(k.x)), k.x.shape, k.options as InterpolateOptions, () => new Float32Array(dy));
    assertEquals(got.shape, k.y.shape, `${k.name} shape`);
    assertRelClose(got.y, values(k.y), 1e-5, `${k.name} y`);
    assertRelClose(got.dx, values(k.dx), 1e-5, `${k.name} dx`);
  }
});

gpuTest("Upsample forwards its options to interpolate; bad options are refused naming the option", async () => {
  const x = new Variable(fromArray(new Float32Array([1, 2, 3, 4]), [1, 1, 2, 2]));
  const up = new Upsample({ scaleFactor: 2 });
  assertEquals(Array.from(await up.forward(x).data.toArray()), [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4]);
  assertEquals(up.namedParameters().length, 0);
  assertThrows(() => F.interpolate(x, { size: 3, scaleFactor: 2 }), RangeError, "interpolate", "exactly one", "both");
  assertThrows(() => F.interpolate(x, {}), RangeError, "exactly one", "neither");
  assertThrows(() => F.interpolate(x, { size: 3, mode: "linear" }), RangeError, "linear", "3", "[1,1,2,2]");
  assertThrows(() => F.interpolate(x, { size: 3, alignCorners: true }), RangeError, "alignCorners", "nearest");
  assertThrows(() => F.interpolate(x, { size: [3, 3, 3] }), RangeError, "size", "2 of them", "[3,3,3]");
  assertThrows(() => F.interpolate(x, { scaleFactor: 0.1 }), RangeError, "output size", "[0,0]");
  assertThrows(() => F.interpolate(x, { size: 3, mode: "cubic" as "linear" }), RangeError, "mode", "cubic");
});
