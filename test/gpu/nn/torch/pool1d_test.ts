/**
 * maxPool1d / avgPool1d (src/tensor/ops/pool1d.ts, F.*, MaxPool1d, AvgPool1d): output and
 * input gradient match the 1-D f64 reference (test/reference/pool.ts) on odd lengths with
 * padding, dilation, ceilMode and countIncludePad, and PyTorch's values through the tape;
 * PyTorch's defaults (stride = kernelSize, countIncludePad true); refusals name the argument.
 */
import { AvgPool1d, F, fromArray, MaxPool1d, Variable } from "../../../../src/index.ts";
import { ops } from "../../../../src/engine.ts";
import { pool1dRef, type Pool1dRefOptions, pool1dRefShape } from "../../../reference/pool.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn } from "../../../util/random.ts";
import { golden, values } from "./golden.ts";

const CASES: [number[], Pool1dRefOptions][] = [
  [[2, 3, 17], { kernel: 3, stride: 2, padding: 1, dilation: 2, ceilMode: true, countIncludePad: true }],
  [[3, 2, 13], { kernel: 4, stride: 3, padding: 2, dilation: 1, ceilMode: true, countIncludePad: false }],
  [[5, 9], { kernel: 2, stride: 2, padding: 0, dilation: 1, ceilMode: false, countIncludePad: true }],
];

for (const [xsIn, oIn] of CASES) {
  for (const kind of ["max", "avg"] as const) {
    const o = kind === "avg" ? { ...oIn, dilation: 1 } : oIn; // avg_pool1d has no dilation
    const name = `${kind}Pool1d x [${xsIn}] ${JSON.stringify(o)}`;
    gpuTest(`${name}: output and input gradient match the f64 reference`, async () => {
      const rng = mulberry32(name.length * 13);
      const xs = xsIn.length === 2 ? [1, ...xsIn] : xsIn;
      const ys = pool1dRefShape(xs, o).slice(3 - xsIn.length);
      const x = randn(count(xs), rng), dy = randn(count(ys), rng);
      const want = pool1dRef(kind, x, xs, o, dy);
      const common = { kernelSize: o.kernel, stride: o.stride, padding: o.padding, ceilMode: o.ceilMode };
      const { output, grads } = kind === "max"
        ? ops.forwardBackward(
          ops.maxPool1dOp,
          [fromArray(x, xsIn)],
          { ...common, dilation: o.dilation },
          fromArray(dy, ys),
        )
        : ops.forwardBackward(
          ops.avgPool1dOp,
          [fromArray(x, xsIn)],
          { ...common, countIncludePad: o.countIncludePad },
          fromArray(dy, ys),
        );
      assertEquals(output.shape, ys, "output shape");
      assertEquals(grads[0]!.shape, xsIn, "gradient shape");
      assertRelClose(await output.toArray(), want.y, 1e-5, "y");
      assertRelClose(await grads[0]!.toArray(), want.dx, 1e-5, "dx");
    });
  }
}

for (const g of golden.pool1d) {
  gpuTest(`F.${g.op}Pool1d matches PyTorch golden values: ${g.name}`, async () => {
    const x = new Variable(fromArray(values(g.x), g.x.shape), true);
    const y = g.op === "max"
      ? F.maxPool1d(x, g.options as ops.MaxPool1dOptions)
      : F.avgPool1d(x, g.options as ops.AvgPool1dOptions);
    y.backward(fromArray(values(g.dy), g.dy.shape));
    assertEquals(y.shape, g.y.shape, `${g.name} shape`);
    assertRelClose(await y.data.toArray(), values(g.y), 1e-5, `${g.name} y`);
    assertRelClose(await x.grad!.toArray(), values(g.dx), 1e-5, `${g.name} dx`);
  });
}

gpuTest("MaxPool1d and AvgPool1d have PyTorch's defaults: stride = kernelSize, countIncludePad true", async () => {
  const x = new Variable(fromArray([1, 5, 2, 4, 3, 0, 7], [1, 1, 7]));
  const m = new MaxPool1d(2).forward(x);
  assertEquals(m.shape, [1, 1, 3], "max shape");
  assertRelClose(await m.data.toArray(), [5, 4, 3], 0, "max values");
  const a = new AvgPool1d(3, { padding: 1 }).forward(x);
  assertRelClose(
    await a.data.toArray(),
    [(0 + 1 + 5) / 3, (2 + 4 + 3) / 3, (0 + 7 + 0) / 3],
    1e-6,
    "avg counts the padded zero",
  );
});

gpuTest("1-D pooling refuses bad arguments, naming the argument and the expected value", () => {
  const x = fromArray(new Float32Array(2 * 7), [2, 7]);
  assertThrows(() => new MaxPool1d(0), RangeError, "MaxPool1d", "kernelSize", ">= 1", "0");
  assertThrows(() => new AvgPool1d(3, { padding: 2 }), RangeError, "AvgPool1d", "padding", "<= 1", "2");
  assertThrows(() => new MaxPool1d(2, { stride: 1.5 }), RangeError, "stride", "integer");
  assertThrows(
    () => ops.maxPool1d(x, { kernelSize: 9 }),
    RangeError,
    "maxPool1d",
    "output length 0",
    "[2,7]",
    "kernelSize 9",
  );
  assertThrows(() => ops.avgPool1d(fromArray([1], [1]), { kernelSize: 1 }), TypeError, "avgPool1d", "[C, L]", "[1]");
  assertThrows(
    () => ops.avgPool1d(x, { kernelSize: 2, ceilMode: 1 as unknown as boolean }),
    TypeError,
    "ceilMode",
    "boolean",
  );
});
