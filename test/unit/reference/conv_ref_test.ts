import {
  conv1dRef,
  conv1dRefShape,
  conv2dRef,
  conv2dRefShape,
  type ConvRefOptions,
  type ConvRefResult,
  convTranspose2dRef,
  convTranspose2dRefShape,
} from "../../reference/conv.ts";
import { assertEquals, assertRelClose } from "../../util/assert.ts";
import { CONV_GOLDEN } from "../../util/golden_cases.ts";
import { numGradInPlace } from "../../util/numerical_gradient.ts";
import { count, mulberry32, randn } from "../../util/random.ts";

/** A reference with options of type O (conv2dRef's, conv1dRef's). */
type Ref<O> = (
  x: ArrayLike<number>,
  xs: number[],
  w: ArrayLike<number>,
  ws: number[],
  b: ArrayLike<number> | null,
  o: O,
  dy: ArrayLike<number>,
) => ConvRefResult;

/** Central differences of L = Σ y·dy with respect to every element of x, w and b. */
function numericGrads<O>(
  ref: Ref<O>,
  x: Float64Array,
  xs: number[],
  w: Float64Array,
  ws: number[],
  b: Float64Array,
  o: O,
  dy: ArrayLike<number>,
) {
  const loss = () => ref(x, xs, w, ws, b, o, dy).y.reduce((s, v, i) => s + v * dy[i], 0);
  const grad = (a: Float64Array) => numGradInPlace(a, loss, 1e-4);
  return { dx: grad(x), dw: grad(w), db: grad(b) };
}

function check<O>(label: string, ref: Ref<O>, shapeOf: (xs: number[], ws: number[], o: O) => number[], xs: number[], ws: number[], o: O) {
  const rng = mulberry32(label.length * 7919);
  const x = Float64Array.from(randn(count(xs), rng)), w = Float64Array.from(randn(count(ws), rng));
  const ys = shapeOf(xs, ws, o);
  const b = Float64Array.from(randn(ys[1], rng));
  const dy = randn(count(ys), rng);
  const got: ConvRefResult = ref(x, xs, w, ws, b, o, dy);
  const want = numericGrads(ref, x, xs, w, ws, b, o, dy);
  assertEquals(got.y.length, count(ys), `${label} y length`);
  assertRelClose(got.dx, want.dx, 1e-6, `${label} dx`);
  assertRelClose(got.dw, want.dw, 1e-6, `${label} dw`);
  assertRelClose(got.db, want.db, 1e-6, `${label} db`);
}

Deno.test("conv2dRef gradients match central differences (groups, stride, padding, dilation)", () => {
  const o: ConvRefOptions = { stride: [2, 1], padding: [1, 2], dilation: [2, 1], groups: 2 };
  check("conv2d", conv2dRef, conv2dRefShape, [2, 4, 5, 6], [4, 2, 3, 2], o);
});

Deno.test("convTranspose2dRef gradients match central differences (groups, outputPadding)", () => {
  const o: ConvRefOptions = { stride: [2, 3], padding: [1, 0], dilation: [1, 2], groups: 2, outputPadding: [1, 2] };
  check("convTranspose2d", convTranspose2dRef, convTranspose2dRefShape, [2, 4, 4, 3], [4, 3, 3, 2], o);
});

Deno.test("conv1dRef gradients match central differences (groups, stride, padding, dilation, odd length)", () => {
  check("conv1d", conv1dRef, conv1dRefShape, [2, 4, 13], [6, 2, 3], { stride: 2, padding: 2, dilation: 3, groups: 2 });
  check("conv1d depthwise", conv1dRef, conv1dRefShape, [1, 3, 8], [3, 1, 4], { stride: 3, padding: 1, dilation: 1, groups: 3 });
});

Deno.test("conv references agree with PyTorch's float64 golden values", () => {
  for (const c of CONV_GOLDEN) {
    const o: ConvRefOptions = {
      stride: c.options.stride ?? [1, 1],
      padding: c.options.padding ?? [0, 0],
      dilation: c.options.dilation ?? [1, 1],
      groups: c.options.groups ?? 1,
      outputPadding: c.options.outputPadding,
    };
    const xs = c.x.shape.length === 3 ? [1, ...c.x.shape] : c.x.shape;
    const ref = c.op === "conv2d" ? conv2dRef : convTranspose2dRef;
    const shape = (c.op === "conv2d" ? conv2dRefShape : convTranspose2dRefShape)(xs, c.w.shape, o);
    assertEquals(shape.slice(4 - c.y.shape.length), c.y.shape, `${c.name} shape`);
    // The fixture stores float32 inputs with 9 digits: round them back to the float32 torch used.
    const f32 = (a: number[]) => Float32Array.from(a);
    const r = ref(f32(c.x.data), xs, f32(c.w.data), c.w.shape, c.b ? f32(c.b.data) : null, o, f32(c.dy.data));
    assertRelClose(r.y, c.y.data, 1e-8, `${c.name} y`);
    assertRelClose(r.dx, c.dx.data, 1e-8, `${c.name} dx`);
    assertRelClose(r.dw, c.dw.data, 1e-8, `${c.name} dw`);
    if (c.db) assertRelClose(r.db, c.db.data, 1e-8, `${c.name} db`);
  }
});
