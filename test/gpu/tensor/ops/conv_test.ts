import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import { conv2d, conv2dOp, convTranspose2d, convTranspose2dOp } from "../../../../src/tensor/ops/conv.ts";
import {
  conv2dRef,
  conv2dRefShape,
  type ConvRefOptions,
  convTranspose2dRef,
  convTranspose2dRefShape,
  type Pair,
} from "../../../reference/conv.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { CONV_GOLDEN } from "../../../util/golden_cases.ts";
import { count, mulberry32, randn } from "../../../util/random.ts";

/** One case: input [N, C, H, W] (3-D = unbatched), output channels, kernel and options. */
interface Case {
  x: number[];
  cout: number;
  k: Pair;
  stride: Pair;
  padding: Pair;
  dilation: Pair;
  groups: number;
  outputPadding?: Pair;
  bias: boolean;
}

const c = (x: number[], cout: number, k: number | Pair, o: Partial<Case> = {}): Case => ({
  x,
  cout,
  k: typeof k === "number" ? [k, k] : k,
  stride: [1, 1],
  padding: [0, 0],
  dilation: [1, 1],
  groups: 1,
  bias: true,
  ...o,
});

// Odd sizes over N = 1, 3; C = 1, 3, 4; groups 1, 2 (and depthwise); H, W = 7, 9, 13; kernel 1, 3, 5;
// stride 1, 2, 3; padding 0, 1, 2; dilation 1, 2.
const CONV_CASES: Case[] = [
  c([1, 1, 7, 7], 1, 1),
  c([3, 3, 9, 13], 4, 3, { stride: [2, 2], padding: [1, 1] }),
  c([1, 4, 13, 9], 4, 5, { stride: [3, 3], padding: [2, 2], dilation: [2, 2], groups: 2, bias: false }),
  c([3, 4, 7, 9], 2, 3, { padding: [2, 2], dilation: [2, 2], groups: 2 }),
  c([1, 3, 9, 7], 3, [3, 5], { stride: [1, 2], padding: [0, 2], dilation: [2, 1] }),
  c([3, 1, 13, 13], 3, 5, { stride: [2, 2] }),
  c([1, 4, 7, 7], 4, 1, { stride: [3, 3], padding: [1, 1], groups: 2 }),
  c([3, 3, 9, 9], 6, 3, { stride: [3, 3], dilation: [2, 2], groups: 3 }),
  c([3, 7, 9], 2, 3, { padding: [1, 1] }),
];

// The same grid for the transposed op, with outputPadding 0 and 1 (below max(stride, dilation)).
const TRANSPOSE_CASES: Case[] = [
  c([1, 1, 7, 7], 1, 1),
  c([3, 3, 9, 13], 4, 3, { stride: [2, 2], padding: [1, 1], outputPadding: [1, 1] }),
  c([1, 4, 7, 9], 2, 5, { stride: [3, 3], padding: [2, 2], groups: 2, outputPadding: [1, 2], bias: false }),
  c([3, 4, 7, 7], 4, 3, { padding: [1, 1], dilation: [2, 2], groups: 2, outputPadding: [1, 1] }),
  c([1, 3, 9, 7], 3, [3, 5], { stride: [2, 1], padding: [0, 2], dilation: [1, 2], outputPadding: [1, 1] }),
  c([3, 1, 13, 9], 3, 5, { stride: [2, 2], padding: [2, 2] }),
  c([4, 7, 9], 2, 3, { stride: [2, 2], padding: [1, 1], groups: 2, outputPadding: [1, 0] }),
];

function label(kind: string, k: Case): string {
  const op = k.outputPadding ? ` outputPadding [${k.outputPadding}]` : "";
  return `${kind} x [${k.x}] -> ${k.cout} ch, kernel [${k.k}], stride [${k.stride}], padding [${k.padding}], ` +
    `dilation [${k.dilation}], groups ${k.groups}${op}${k.bias ? ", bias" : ""}`;
}

for (const transposed of [false, true]) {
  const kind = transposed ? "convTranspose2d" : "conv2d";
  for (const k of transposed ? TRANSPOSE_CASES : CONV_CASES) {
    const name = label(kind, k);
    gpuTest(`${name}: output and x, w, b gradients match f64 reference`, async () => {
      const rng = mulberry32(name.length * 31 + k.x.length);
      const xs = k.x.length === 3 ? [1, ...k.x] : k.x;
      const cin = xs[1];
      const ws = transposed ? [cin, k.cout / k.groups, ...k.k] : [k.cout, cin / k.groups, ...k.k];
      const o: ConvRefOptions = {
        stride: k.stride,
        padding: k.padding,
        dilation: k.dilation,
        groups: k.groups,
        outputPadding: k.outputPadding,
      };
      const ys4 = (transposed ? convTranspose2dRefShape : conv2dRefShape)(xs, ws, o);
      const ys = k.x.length === 3 ? ys4.slice(1) : ys4;
      const x = randn(count(xs), rng),
        w = randn(count(ws), rng, 0.5),
        b = randn(k.cout, rng),
        dy = randn(count(ys), rng);
      const want = (transposed ? convTranspose2dRef : conv2dRef)(x, xs, w, ws, k.bias ? b : null, o, dy);
      const inputs = [fromArray(x, k.x), fromArray(w, ws), ...(k.bias ? [fromArray(b, [k.cout])] : [])];
      const attrs = {
        stride: k.stride,
        padding: k.padding,
        dilation: k.dilation,
        groups: k.groups,
        outputPadding: k.outputPadding,
      };
      const { output, grads } = forwardBackward(
        transposed ? convTranspose2dOp : conv2dOp,
        inputs,
        attrs,
        fromArray(dy, ys),
      );
      assertEquals(output.shape, ys, "output shape");
      assertEquals(grads.length, inputs.length, "gradient count");
      assertRelClose(await output.toArray(), want.y, 1e-3, "y");
      assertRelClose(await grads[0]!.toArray(), want.dx, 1e-3, "dx");
      assertRelClose(await grads[1]!.toArray(), want.dw, 1e-3, "dw");
      if (k.bias) assertRelClose(await grads[2]!.toArray(), want.db, 1e-3, "db");
    });
  }
}

for (const g of CONV_GOLDEN) {
  gpuTest(`${g.op} matches PyTorch golden values: ${g.name}`, async () => {
    const inputs = [
      fromArray(g.x.data, g.x.shape),
      fromArray(g.w.data, g.w.shape),
      ...(g.b ? [fromArray(g.b.data, g.b.shape)] : []),
    ];
    const op = g.op === "conv2d" ? conv2dOp : convTranspose2dOp;
    const { output, grads } = forwardBackward(op, inputs, g.options, fromArray(g.dy.data, g.dy.shape));
    assertEquals(output.shape, g.y.shape, "output shape");
    assertRelClose(await output.toArray(), g.y.data, 1e-3, "y");
    assertRelClose(await grads[0]!.toArray(), g.dx.data, 1e-3, "dx");
    assertRelClose(await grads[1]!.toArray(), g.dw.data, 1e-3, "dw");
    if (g.db) assertRelClose(await grads[2]!.toArray(), g.db.data, 1e-3, "db");
  });
}

gpuTest("conv2d and convTranspose2d functions accept a number for both dims and no bias", async () => {
  const rng = mulberry32(5);
  const xs = [1, 2, 7, 9], ws = [3, 2, 3, 3];
  const x = randn(count(xs), rng), w = randn(count(ws), rng);
  const o: ConvRefOptions = { stride: [2, 2], padding: [1, 1], dilation: [1, 1], groups: 1 };
  const ys = conv2dRefShape(xs, ws, o);
  const zero = new Float32Array(count(ys));
  const y = conv2d(fromArray(x, xs), fromArray(w, ws), null, { stride: 2, padding: 1 });
  assertRelClose(await y.toArray(), conv2dRef(x, xs, w, ws, null, o, zero).y, 1e-3, "conv2d y");
  const wt = randn(2 * 3 * 9, rng), xt = randn(2 * 63, rng), xts = [1, 2, 7, 9], wts = [2, 3, 3, 3];
  const ot: ConvRefOptions = { ...o, outputPadding: [1, 1] };
  const yt = convTranspose2d(fromArray(xt, xts), fromArray(wt, wts), undefined, {
    stride: 2,
    padding: 1,
    outputPadding: 1,
  });
  const zt = new Float32Array(count(convTranspose2dRefShape(xts, wts, ot)));
  assertRelClose(await yt.toArray(), convTranspose2dRef(xt, xts, wt, wts, null, ot, zt).y, 1e-3, "convTranspose2d y");
});

gpuTest("conv2d backward computes only the gradients asked for", async () => {
  const rng = mulberry32(11);
  const xs = [1, 2, 7, 7],
    ws = [3, 2, 3, 3],
    o: ConvRefOptions = { stride: [1, 1], padding: [0, 0], dilation: [1, 1], groups: 1 };
  const xv = randn(count(xs), rng), wv = randn(count(ws), rng), bv = randn(3, rng), dyv = randn(3 * 25, rng);
  const x = fromArray(xv, xs), w = fromArray(wv, ws), b = fromArray(bv, [3]);
  const res = conv2dOp.forward([x, w, b], {});
  const grads = conv2dOp.backward!(fromArray(dyv, [1, 3, 5, 5]), {
    shapes: [x.shape, w.shape, b.shape],
    needs: [false, true, false],
    saved: res.saved!,
    output: res.output,
    attrs: {},
  });
  assertEquals(grads.map((g) => g === null), [true, false, true], "null where not needed");
  assertEquals(grads[1]!.shape, ws, "dw shape");
  assertRelClose(await grads[1]!.toArray(), conv2dRef(xv, xs, wv, ws, bv, o, dyv).dw, 1e-3, "dw");
});

gpuTest("conv ops refuse non-f32 tensors and name the op", async (device) => {
  const x = fromArray(new Int32Array(49), [1, 1, 7, 7]);
  const w = fromArray(new Float32Array(9), [1, 1, 3, 3]);
  const e = assertThrows(() => conv2d(x, w), TypeError, "conv2d", "f32", "i32");
  assert(e.message.includes("[1,1,7,7]"), "names the shape");
  assertThrows(() => convTranspose2d(x, w), TypeError, "convTranspose2d", "i32");
  await device.sync(); // leave no upload in flight when the test file ends
});
