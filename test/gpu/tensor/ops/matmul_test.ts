import { Device } from "../../../../src/gpu/mod.ts";
import type { Dispatch } from "../../../../src/gpu/mod.ts";
import { MATMUL_CLASS_TILINGS, MATMUL_GPU, type MatmulTiling } from "../../../../src/gpu/tuning.ts";
import { Variable } from "../../../../src/autograd/mod.ts";
import { Linear, ReLU } from "../../../../src/nn/mod.ts";
import { Sequential } from "../../../../src/nn/container.ts";
import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import { linear, linearOp, matmul, matmulOp } from "../../../../src/tensor/ops/matmul.ts";
import type { Tensor } from "../../../../src/tensor/tensor.ts";
import { bshape } from "../../../reference/broadcast.ts";
import { linearRef, matmulRef } from "../../../reference/matmul.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn } from "../../../util/random.ts";

const TOL = 1e-3;
type Case = [number[], number[], boolean, boolean];

/** Output shape of op(A)·op(B), computed here so the test does not trust src/. */
function outShape([sa, sb, ta, tb]: Case): number[] {
  const m = ta ? sa[sa.length - 1] : sa[sa.length - 2];
  const n = tb ? sb[sb.length - 2] : sb[sb.length - 1];
  return [...bshape(sa.slice(0, -2), sb.slice(0, -2)), m, n];
}

/** Forward and both gradients of one case against the f64 reference. */
async function checkMatmul(device: Device, c: Case, seed: number): Promise<void> {
  const [sa, sb, ta, tb] = c;
  const rng = mulberry32(seed);
  const a = randn(count(sa), rng), b = randn(count(sb), rng), dc = randn(count(outShape(c)), rng);
  const ref = matmulRef(a, sa, b, sb, dc, ta, tb);
  const on = { device };
  const { output, grads } = forwardBackward(
    matmulOp,
    [fromArray(a, sa, on), fromArray(b, sb, on)],
    { transA: ta, transB: tb },
    fromArray(dc, ref.shape, on),
  );
  const tag = `[${sa}]${ta ? "ᵀ" : ""}·[${sb}]${tb ? "ᵀ" : ""}`;
  assertEquals(output.shape, ref.shape, `${tag} shape`);
  assertRelClose(await output.toArray(), ref.c, TOL, `${tag} c`);
  assertRelClose(await grads[0]!.toArray(), ref.da, TOL, `${tag} da`);
  assertRelClose(await grads[1]!.toArray(), ref.db, TOL, `${tag} db`);
}

/** [m, k, n] as the operand shapes of each transpose combination. */
function combos(m: number, k: number, n: number): Case[] {
  return [
    [[m, k], [k, n], false, false],
    [[k, m], [k, n], true, false],
    [[m, k], [n, k], false, true],
    [[k, m], [n, k], true, true],
  ];
}

const ODD: [number, number, number][] = [[1, 7, 33], [33, 129, 7], [7, 1, 257], [129, 33, 1], [257, 7, 129]];

gpuTest("matmul forward and gradients match f64 on odd m, k, n for all four transposes", async (device) => {
  let seed = 1;
  for (const [m, k, n] of ODD) {
    for (const c of combos(m, k, n)) await checkMatmul(device, c, seed++);
  }
});

gpuTest("matmul on multiple-of-4 sizes (vec4 loads and stores) and the MLP backward shapes", async (device) => {
  const cases: Case[] = [
    ...combos(36, 20, 44),
    [[64, 784], [64, 256], true, false], // dW of the first layer: k = batch 64
    [[64, 256], [784, 256], false, true],
    [[64, 256], [256, 784], false, false],
    [[64, 10], [10, 256], false, false], // dX of the second layer: k = 10
    [[64, 10], [64, 256], true, false], // dW of the second layer: m = 10
  ];
  let seed = 100;
  for (const c of cases) await checkMatmul(device, c, seed++);
});

gpuTest("matmul broadcasts batch dims and sums gradients over them", async (device) => {
  const cases: Case[] = [
    [[2, 3, 7, 5], [5, 9], false, false],
    [[4, 1, 7, 5], [3, 5, 9], false, false],
    [[2, 3, 5, 7], [5, 9], true, false],
    [[7, 5], [2, 3, 5, 9], false, false],
    [[4, 1, 5, 7], [3, 9, 5], true, true],
    [[2, 1, 8, 12], [1, 3, 12, 4], false, false],
  ];
  let seed = 200;
  for (const c of cases) await checkMatmul(device, c, seed++);
});

/** Linear forward and every gradient against the f64 reference. */
async function checkLinear(sx: number[], out: number, bias: boolean, seed: number): Promise<void> {
  const rng = mulberry32(seed);
  const sw = [out, sx[sx.length - 1]];
  const x = randn(count(sx), rng), w = randn(count(sw), rng), b = randn(out, rng);
  const ys = [...sx.slice(0, -1), out];
  const dy = randn(count(ys), rng);
  const ref = linearRef(x, sx, w, sw, bias ? b : undefined, dy);
  const inputs = [fromArray(x, sx), fromArray(w, sw), ...(bias ? [fromArray(b, [out])] : [])];
  const { output, grads } = forwardBackward(linearOp, inputs, undefined, fromArray(dy, ys));
  const tag = `linear x=[${sx}] out=${out}${bias ? " +b" : ""}`;
  assertEquals(output.shape, ys, `${tag} shape`);
  assertRelClose(await output.toArray(), ref.y, TOL, `${tag} y`);
  assertRelClose(await grads[0]!.toArray(), ref.dx, TOL, `${tag} dx`);
  assertRelClose(await grads[1]!.toArray(), ref.dw, TOL, `${tag} dw`);
  if (bias) assertRelClose(await grads[2]!.toArray(), ref.db, TOL, `${tag} db`);
  else assertEquals(grads.length, 2, `${tag} gradient count`);
}

gpuTest("linear matches f64 with and without bias on [1,7], [33,129] and batched inputs", async () => {
  let seed = 300;
  for (const bias of [true, false]) {
    await checkLinear([1, 7], 33, bias, seed++);
    await checkLinear([33, 129], 7, bias, seed++);
    await checkLinear([33, 129], 257, bias, seed++);
    await checkLinear([2, 3, 129], 10, bias, seed++);
    await checkLinear([64, 784], 256, bias, seed++);
    await checkLinear([7], 5, bias, seed++);
  }
});

/** Count device.dispatch calls made by `fn`. */
function countDispatches(device: Device, fn: () => void): number {
  let n = 0;
  const own = device.dispatch;
  device.dispatch = (d) => {
    n++;
    own.call(device, d);
  };
  try {
    fn();
  } finally {
    delete (device as { dispatch?: unknown }).dispatch;
  }
  return n;
}

gpuTest("linear's forward with bias is one dispatch (the bias is fused)", (device) => {
  const x = fromArray(randn(33 * 129, mulberry32(1)), [33, 129]);
  const w = fromArray(randn(7 * 129, mulberry32(2)), [7, 129]), b = fromArray(randn(7, mulberry32(3)), [7]);
  assertEquals(countDispatches(device, () => linear(x, w, b)), 1, "dispatches of linear(x, w, b)");
  assertEquals(countDispatches(device, () => linear(x, w)), 1, "dispatches of linear(x, w)");
});

gpuTest("matmul and linear backward skip the gradients nobody needs; db rides along dW's product", (device) => {
  const rng = mulberry32(5);
  const x = fromArray(randn(64 * 36, rng), [64, 36]), w = fromArray(randn(20 * 36, rng), [20, 36]);
  const b = fromArray(randn(20, rng), [20]), dy = fromArray(randn(64 * 20, rng), [64, 20]);
  const res = linearOp.forward([x, w, b], undefined);
  const ctx = { shapes: [x.shape, w.shape, b.shape], saved: res.saved!, output: res.output, attrs: undefined };
  let grads: readonly (Tensor | null)[] = [];
  // The first layer of an MLP: no dX.
  const n = countDispatches(device, () => grads = linearOp.backward!(dy, { ...ctx, needs: [false, true, true] }));
  assertEquals(grads.map((g) => g === null), [true, false, false], "linear gradients given");
  assertEquals(n, 1, "dispatches for dW and db only (db is dW's product's row sums)");
  const onlyDb = countDispatches(device, () => grads = linearOp.backward!(dy, { ...ctx, needs: [false, false, true] }));
  assertEquals([grads.map((g) => g === null), onlyDb], [[true, true, false], 1], "db alone: one sum");
  const a = fromArray(randn(7 * 5, rng), [7, 5]), bb = fromArray(randn(5 * 9, rng), [5, 9]);
  const mres = matmulOp.forward([a, bb], {});
  const dc = fromArray(randn(63, rng), [7, 9]);
  const mctx = { shapes: [a.shape, bb.shape], saved: mres.saved!, output: mres.output, attrs: {} };
  const m = countDispatches(device, () => grads = matmulOp.backward!(dc, { ...mctx, needs: [true, false] }));
  assertEquals([grads[0] !== null, grads[1]], [true, null], "matmul gradients given");
  assertEquals(m, 1, "dispatches for dA only");
});

gpuTest("matmul and linear name both shapes when they do not fit", () => {
  const a = fromArray(new Float32Array(35), [7, 5]), b = fromArray(new Float32Array(54), [6, 9]);
  assertThrows(() => matmul(a, b), RangeError, "matmul", "[7,5]", "[6,9]");
  assertThrows(() => matmul(a, b, { transA: true }), RangeError, "[7,5]ᵀ");
  assertThrows(() => matmul(fromArray([1, 2, 3]), b), TypeError, "at least 2 dims", "[3]");
  assertThrows(() => linear(a, b), RangeError, "linear", "x=[7,5]", "w=[6,9]");
  assertThrows(() => linear(a, fromArray(new Float32Array(20), [4, 5]), fromArray([1, 2, 3])), RangeError, "b=[3]");
  const ints = fromArray(new Int32Array(35), [7, 5]);
  assertThrows(() => matmul(ints, fromArray(new Float32Array(45), [5, 9])), TypeError, "f32", "i32");
});

gpuTest("matmul matches f64 with other tilings: the shared-memory kernel and small register blocks", async () => {
  const tilings = [MATMUL_GPU, { tm: 8, tn: 4, wgx: 4, wgy: 2, bk: 0 }, { tm: 8, tn: 8, wgx: 8, wgy: 4, bk: 8 }];
  let seed = 400;
  for (const matmulTiling of tilings) {
    const device = await Device.request({ label: "tiling", matmul: matmulTiling });
    try {
      // Odd sizes everywhere; multiples of 4 reach the vec4 paths of the register kernel.
      const aligned = matmulTiling.bk > 0 ? [] : combos(12, 8, 20);
      for (const c of [...combos(33, 20, 7), ...aligned]) await checkMatmul(device, c, seed++);
      await checkMatmul(device, [[4, 1, 7, 5], [3, 5, 9], false, false], seed++);
      const y = linear(
        fromArray([1, 2], [1, 2], { device }),
        fromArray([1, 1, 0, 1], [2, 2], { device }),
        fromArray([10, 20], [2], { device }),
      );
      assertRelClose(await y.toArray(), [13, 22], 0, "linear with bias");
    } finally {
      device.destroy();
    }
  }
});

gpuTest("a tiling the kernel cannot run is refused naming the knob", async () => {
  const device = await Device.request({ label: "bad", matmul: { tm: 6, tn: 4, wgx: 8, wgy: 1, bk: 0 } });
  try {
    const a = fromArray(new Float32Array(4), [2, 2], { device });
    const e = assertThrows(() => matmul(a, a), RangeError, "tm must be a multiple of 4", '"tm":6');
    assert(e.message.includes("bad"), "names the device");
  } finally {
    device.destroy();
  }
});

/** The workgroup shape (WGX×WGY) of every matmul dispatch `f` records, and every entry. */
async function matmulLaunches(device: Device, f: () => Promise<void>): Promise<{ wg: string[]; entries: string[] }> {
  const wg: string[] = [], entries: string[] = [];
  const dev = device as unknown as Record<string, unknown>;
  const own = device.dispatch.bind(device);
  dev.dispatch = (d: Dispatch) => {
    entries.push(`${d.shader}/${d.entry}`);
    if (d.shader === "matmul") wg.push(`${d.overrides!.WGX}×${d.overrides!.WGY}`);
    own(d);
  };
  try {
    await f();
  } finally {
    delete dev.dispatch;
  }
  return { wg, entries };
}

gpuTest("each product class runs its own tiling (skinny m ≤ 64, the weight gradient Aᵀ·B) and matches f64", async () => {
  // Distinct workgroup shapes tell the tilings apart in the recorded dispatches.
  const base: MatmulTiling = { tm: 8, tn: 8, wgx: 8, wgy: 1, bk: 0 };
  const skinny: MatmulTiling = { tm: 8, tn: 4, wgx: 4, wgy: 2, bk: 0 };
  const wgrad: MatmulTiling = { tm: 4, tn: 8, wgx: 2, wgy: 4, bk: 0 };
  const device = await Device.request({ label: "classes", matmul: base, matmulClasses: { skinny, wgrad } });
  try {
    const cases: [Case, string][] = [
      [[[64, 36], [36, 20], false, false], "4×2"], // skinny, vec4 paths
      [[[33, 7], [7, 129], false, false], "4×2"], // skinny, odd
      [[[64, 20], [44, 20], false, true], "4×2"], // Linear's forward: x·wᵀ
      [[[64, 36], [64, 44], true, false], "2×4"], // Linear's dW = dyᵀ·x: k is the batch
      [[[7, 129], [7, 33], true, false], "2×4"], // Aᵀ·B with m = 129 > 64 is still wgrad
      [[[5, 10], [12, 5], true, true], "4×2"], // Aᵀ·Bᵀ is not wgrad; m = 10 is skinny
      [[[129, 33], [33, 7], false, false], "8×1"], // m > 64: the device's tiling
      [[[2, 65, 12], [12, 8], false, false], "8×1"],
    ];
    let seed = 500;
    for (const [c, want] of cases) {
      const tag = `[${c[0]}]${c[2] ? "ᵀ" : ""}·[${c[1]}]${c[3] ? "ᵀ" : ""}`;
      const a = fromArray(new Float32Array(count(c[0])), c[0], { device }), b = fromArray(new Float32Array(count(c[1])), c[1], { device });
      const { wg } = await matmulLaunches(device, () => Promise.resolve(void matmul(a, b, { transA: c[2], transB: c[3] })));
      assertEquals(wg, [want], `${tag} workgroup shape`);
      await checkMatmul(device, c, seed++);
    }
  } finally {
    device.destroy();
  }
});

gpuTest("a shared-memory skinny tiling keeps Linear → ReLU → Linear correct: ReLU's gradient is not folded into dx", async () => {
  const device = await Device.request({
    label: "skinny shared",
    matmul: { tm: 8, tn: 8, wgx: 8, wgy: 1, bk: 0 },
    matmulClasses: { skinny: { tm: 4, tn: 4, wgx: 8, wgy: 8, bk: 8 } },
  });
  try {
    const rng = mulberry32(600);
    const [B, D, H, C] = [9, 13, 17, 5];
    const x = randn(B * D, rng);
    const model = new Sequential(new Linear(D, H, { device }), new ReLU(), new Linear(H, C, { device }));
    const [w1, b1, w2, b2] = model.parameters();
    const xs = fromArray(x, [B, D], { device });
    const { entries } = await matmulLaunches(device, () => Promise.resolve(model.forward(new Variable(xs)).sum().backward()));
    assert(!entries.some((e) => e.includes("_mask")), `masked product with a shared tiling: ${entries}`);
    assert(entries.includes("unary/relu_backward"), `ReLU's gradient must run on its own: ${entries}`);
    const W1 = await w1.data.toF32(), B1 = await b1.data.toF32(), W2 = await w2.data.toF32(), B2 = await b2.data.toF32();
    const h = linearRef(x, [B, D], W1, [H, D], B1, new Float64Array(B * H)).y.map((v) => Math.max(0, v));
    const l2 = linearRef(h, [B, H], W2, [C, H], B2, new Float64Array(B * C).fill(1));
    const l1 = linearRef(x, [B, D], W1, [H, D], B1, l2.dx.map((g, i) => (h[i] > 0 ? g : 0)));
    assertRelClose(await w1.grad!.toArray(), l1.dw, TOL, "dW1");
    assertRelClose(await b1.grad!.toArray(), l1.db, TOL, "db1");
    assertRelClose(await w2.grad!.toArray(), l2.dw, TOL, "dW2");
    assertRelClose(await b2.grad!.toArray(), l2.db, TOL, "db2");
  } finally {
    device.destroy();
  }
});

gpuTest("class tilings: the adapter's swept table by default, none when a tiling is chosen, a bad one named by its class", async (shared) => {
  assertEquals(shared.matmulClasses, MATMUL_CLASS_TILINGS[shared.adapterKind], "default: the adapter's row");
  const chosen = await Device.request({ label: "chosen", matmul: { tm: 8, tn: 8, wgx: 8, wgy: 1, bk: 0 } });
  chosen.destroy();
  assertEquals(chosen.matmulClasses, {}, "a chosen tiling runs every product");
  const bad = await Device.request({ label: "bad class", matmulClasses: { wgrad: { tm: 8, tn: 8, wgx: 8, wgy: 1, bk: -1 } } });
  try {
    const a = fromArray(new Float32Array(4), [2, 2], { device: bad });
    assertThrows(() => matmul(a, a), RangeError, "matmulClasses.wgrad tiling", "bk must be a non-negative integer", '"bk":-1', "bad class");
  } finally {
    bad.destroy();
  }
});
