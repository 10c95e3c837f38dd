/**
 * conv1d (src/tensor/ops/conv1d.ts, F.conv1d, nn.Conv1d): output and every gradient match the
 * f64 reference (test/reference/conv.ts, written in 1-D) on odd lengths with stride, padding,
 * dilation and groups, and PyTorch's own values through the tape; Conv1d has PyTorch's
 * weight layout and init bound; bad arguments are refused naming the argument and value.
 */
import { Conv1d, F, fromArray, Variable } from "../../../../src/index.ts";
import { ops } from "../../../../src/engine.ts";
import { conv1dRef, type Conv1dRefOptions, conv1dRefShape } from "../../../reference/conv.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn } from "../../../util/random.ts";
import { golden, values } from "./golden.ts";

// x [N, Cin, L] (2-D = unbatched), Cout, K, options, bias.
const CASES: [number[], number, number, Conv1dRefOptions, boolean][] = [
  [[2, 3, 17], 5, 3, { stride: 1, padding: 0, dilation: 1, groups: 1 }, true],
  [[3, 4, 29], 6, 5, { stride: 2, padding: 2, dilation: 3, groups: 2 }, false],
  [[1, 6, 13], 6, 4, { stride: 3, padding: 1, dilation: 1, groups: 6 }, true],
  [[4, 9], 2, 3, { stride: 1, padding: 1, dilation: 2, groups: 1 }, true],
];

for (const [xsIn, cout, k, o, bias] of CASES) {
  const name = `conv1d x [${xsIn}] -> ${cout} ch, kernel ${k}, ${JSON.stringify(o)}${bias ? ", bias" : ""}`;
  gpuTest(`${name}: output and x, w, b gradients match the f64 reference`, async () => {
    const rng = mulberry32(name.length * 17 + cout);
    const xs = xsIn.length === 2 ? [1, ...xsIn] : xsIn;
    const ws = [cout, xs[1] / o.groups, k];
    const ys3 = conv1dRefShape(xs, ws, o);
    const ys = xsIn.length === 2 ? ys3.slice(1) : ys3;
    const x = randn(count(xs), rng), w = randn(count(ws), rng, 0.5), b = randn(cout, rng), dy = randn(count(ys), rng);
    const want = conv1dRef(x, xs, w, ws, bias ? b : null, o, dy);
    const inputs = [fromArray(x, xsIn), fromArray(w, ws), ...(bias ? [fromArray(b, [cout])] : [])];
    const { output, grads } = ops.forwardBackward(ops.conv1dOp, inputs, o, fromArray(dy, ys));
    assertEquals(output.shape, ys, "output shape");
    assertEquals(grads.map((g) => g?.shape), inputs.map((t) => t.shape), "gradient shapes");
    assertRelClose(await output.toArray(), want.y, 1e-4, "y");
    assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, "dx");
    assertRelClose(await grads[1]!.toArray(), want.dw, 1e-4, "dw");
    if (bias) assertRelClose(await grads[2]!.toArray(), want.db, 1e-4, "db");
  });
}

for (const g of golden.conv1d) {
  gpuTest(`F.conv1d matches PyTorch golden values: ${g.name}`, async () => {
    const x = new Variable(fromArray(values(g.x), g.x.shape), true);
    const w = new Variable(fromArray(values(g.w), g.w.shape), true);
    const b = g.b ? new Variable(fromArray(values(g.b), g.b.shape), true) : null;
    const y = F.conv1d(x, w, b, g.options);
    y.backward(fromArray(values(g.dy), g.dy.shape));
    assertEquals(y.shape, g.y.shape, `${g.name} shape`);
    assertRelClose(await y.data.toArray(), values(g.y), 1e-4, `${g.name} y`);
    assertRelClose(await x.grad!.toArray(), values(g.dx), 1e-4, `${g.name} dx`);
    assertRelClose(await w.grad!.toArray(), values(g.dw), 1e-4, `${g.name} dw`);
    if (b) assertRelClose(await b.grad!.toArray(), values(g.db!), 1e-4, `${g.name} db`);
  });
}

gpuTest("Conv1d has PyTorch's weight [out, in/groups, k], bias [out] and init bound 1/sqrt(in/groups*k)", async () => {
  const m = new Conv1d(6, 4, 5, { groups: 2, stride: 2, padding: 1, seed: 3 });
  assertEquals(m.weight.shape, [4, 3, 5], "weight shape");
  assertEquals(m.bias!.shape, [4], "bias shape");
  assertEquals(m.namedParameters().map(([n]) => n), ["weight", "bias"], "parameter names");
  const bound = 1 / Math.sqrt(3 * 5);
  const w = await m.weight.data.toArray(), b = await m.bias!.data.toArray();
  assert(w.every((v) => Math.abs(v) <= bound) && b.every((v) => Math.abs(v) <= bound), "values within the bound");
  assert(Math.max(...w.map(Math.abs)) > 0.8 * bound, "weights span the bound");
  const y = m.forward(new Variable(fromArray(randn(2 * 6 * 11, mulberry32(5)), [2, 6, 11])));
  assertEquals(y.shape, [2, 4, 5], "output shape"); // ⌊(11 + 2 − 4 − 1) / 2⌋ + 1
  assertEquals(new Conv1d(2, 3, 3, { bias: false }).bias, undefined, "bias: false");
});

gpuTest("conv1d and Conv1d refuse bad arguments, naming the argument and the expected value", () => {
  assertThrows(() => new Conv1d(6, 4, 3, { groups: 4 }), RangeError, "Conv1d", "inChannels", "groups 4", "6");
  assertThrows(() => new Conv1d(6, 4, 3, { groups: 3 }), RangeError, "Conv1d", "outChannels", "groups 3", "4");
  assertThrows(() => new Conv1d(2, 2, 0), RangeError, "Conv1d", "kernelSize", ">= 1", "0");
  assertThrows(() => new Conv1d(2, 2, 3, { stride: 0 }), RangeError, "Conv1d", "stride", ">= 1");
  const x = fromArray(new Float32Array(2 * 4 * 7), [2, 4, 7]);
  assertThrows(
    () => ops.conv1d(x, fromArray(new Float32Array(12), [2, 2, 3])),
    RangeError,
    "conv1d",
    "expects input with 2 channels",
    "[2,4,7] with 4",
  );
  assertThrows(
    () => ops.conv1d(x, fromArray(new Float32Array(24), [2, 4, 3]), null, { padding: -1 }),
    RangeError,
    "padding",
    ">= 0",
  );
  assertThrows(
    () => ops.conv1d(x, fromArray(new Float32Array(32), [2, 4, 4]), null, { dilation: 3 }),
    RangeError,
    "spans 10",
    "7",
  );
  assertThrows(
    () => ops.conv1d(fromArray(new Float32Array(7), [7]), fromArray(new Float32Array(3), [1, 1, 3])),
    TypeError,
    "conv1d",
    "[C, L]",
    "[7]",
  );
  assertThrows(() => ops.conv1d(x, fromArray(new Float32Array(8), [2, 4, 1, 1])), TypeError, "conv1d", "weight", "3-D");
  assertThrows(
    () => ops.conv1d(x, fromArray(new Float32Array(24), [2, 4, 3]), fromArray([1, 2, 3], [3])),
    RangeError,
    "bias",
    "[2]",
    "[3]",
  );
});
