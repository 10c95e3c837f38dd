import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import {
  attentionCall,
  attentionDims,
  type AttentionKernel,
  attentionKernel,
  attentionOp,
  packedAttentionCall,
  scaledDotProductAttention,
} from "../../../../src/tensor/ops/attention.ts";
import { dropoutMultipliers, sdpaRef } from "../../../reference/attention.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { mulberry32, randn } from "../../../util/random.ts";

interface Case {
  b: number;
  h: number;
  tq: number;
  tk: number;
  d: number;
  causal?: boolean;
  mask?: boolean;
  kpm?: boolean;
  dropoutP?: number;
  /** Also run the scores path (every case runs the fused kernels, whose tiling the block edges test). */
  scores?: boolean;
}

const KERNELS: AttentionKernel[] = ["fused", "scores"];

const CASES: Case[] = [
  { b: 1, h: 1, tq: 7, tk: 7, d: 5 },
  { b: 2, h: 3, tq: 9, tk: 13, d: 7, kpm: true },
  { b: 2, h: 2, tq: 33, tk: 33, d: 16, causal: true, kpm: true },
  { b: 1, h: 2, tq: 5, tk: 70, d: 3, mask: true, kpm: true }, // keys span two blocks of 64
  { b: 3, h: 1, tq: 65, tk: 65, d: 9, causal: true, dropoutP: 0.25 },
  { b: 1, h: 1, tq: 128, tk: 128, d: 64, causal: true }, // gpt-nano's longest row and a wide head
  // Block edges of shaders/attention.wgsl's tiling: 32 rows per workgroup, key blocks of 32,
  // head columns in chunks of 32 (src/gpu/tuning.ts ATTENTION_WG; the shader's BK and DC).
  { b: 1, h: 1, tq: 1, tk: 1, d: 1, causal: true }, // one row, one key, one column
  { b: 2, h: 1, tq: 1, tk: 5, d: 2, kpm: true }, // a single query row over a partial block
  { b: 2, h: 2, tq: 31, tk: 33, d: 4, causal: true, kpm: true }, // a row short of a block, a key past one
  { b: 1, h: 3, tq: 33, tk: 31, d: 6, causal: true }, // rows past the last key see every key
  { b: 2, h: 2, tq: 64, tk: 64, d: 32, causal: true, mask: true, kpm: true, scores: true }, // gpt-nano's head, every mask
  { b: 1, h: 2, tq: 97, tk: 97, d: 8, causal: true, kpm: true, dropoutP: 0.1 }, // 4 row blocks, the last of 1
  { b: 1, h: 1, tq: 40, tk: 40, d: 33, causal: true, kpm: true }, // 2 column chunks, the last of 1 column
  { b: 1, h: 1, tq: 35, tk: 29, d: 70, mask: true, dropoutP: 0.2 }, // 3 column chunks, the last of 6
  // The scores path: its masks, dropout and rows past the keys, at shapes that share the
  // matmul's pipelines (a new product shape class costs seconds of compile on CPU adapters).
  { b: 3, h: 1, tq: 48, tk: 64, d: 32, causal: true, dropoutP: 0.25, scores: true },
  { b: 1, h: 2, tq: 48, tk: 64, d: 32, mask: true, kpm: true, dropoutP: 0.2, scores: true },
  { b: 1, h: 2, tq: 48, tk: 136, d: 32, causal: true, kpm: true, scores: true }, // 4 threads a row, the last short
];

for (
  const c of CASES.flatMap((c) => KERNELS.filter((k) => k === "fused" || c.scores).map((kernel) => ({ ...c, kernel })))
) {
  const tag = `${c.kernel} [${c.b},${c.h},${c.tq}|${c.tk},${c.d}]${c.causal ? " causal" : ""}${
    c.mask ? " attnMask" : ""
  }${c.kpm ? " keyPadding" : ""}${c.dropoutP ? ` dropout ${c.dropoutP}` : ""}`;
  gpuTest(`scaledDotProductAttention ${tag}: output and dq, dk, dv match f64 reference`, async () => {
    const rng = mulberry32(c.tq * 31 + c.d);
    const nq = c.b * c.h * c.tq * c.d, nk = c.b * c.h * c.tk * c.d;
    const q = randn(nq, rng), k = randn(nk, rng), v = randn(nk, rng), dout = randn(nq, rng);
    // Masks hide a few keys, never all of a row (that row is tested on its own below).
    const mask = c.mask ? Float32Array.from({ length: c.tq * c.tk }, (_, i) => (i % 5 === 3 ? 1 : 0)) : undefined;
    const kpm = c.kpm
      ? Int32Array.from({ length: c.b * c.tk }, (_, i) => (i % c.tk >= c.tk - 2 && i % c.tk > 0 ? 1 : 0))
      : undefined;
    const seed = 1234;
    const dropout = c.dropoutP ? dropoutMultipliers(seed, c.dropoutP, c.b * c.h * c.tq * c.tk) : undefined;
    const want = sdpaRef(q, k, v, c, { causal: c.causal, attnMask: mask, keyPaddingMask: kpm, dropout }, dout);
    const { inputs, attrs } = attentionCall(
      fromArray(q, [c.b, c.h, c.tq, c.d]),
      fromArray(k, [c.b, c.h, c.tk, c.d]),
      fromArray(v, [c.b, c.h, c.tk, c.d]),
      {
        causal: c.causal,
        attnMask: mask && fromArray(mask, [c.tq, c.tk]),
        keyPaddingMask: kpm && fromArray(kpm, [c.b, c.tk]),
        dropoutP: c.dropoutP,
        seed,
        kernel: c.kernel,
      },
    );
    const { output, grads } = forwardBackward(attentionOp, inputs, attrs, fromArray(dout, [c.b, c.h, c.tq, c.d]));
    assertRelClose(await output.toArray(), want.o, 1e-3, `${tag} o`);
    assertRelClose(await grads[0]!.toArray(), want.dq, 1e-3, `${tag} dq`);
    assertRelClose(await grads[1]!.toArray(), want.dk, 1e-3, `${tag} dk`);
    assertRelClose(await grads[2]!.toArray(), want.dv, 1e-3, `${tag} dv`);
    assertEquals(grads.length, inputs.length, `${tag} one gradient per input`);
    if (mask) assertEquals(grads[3], null, `${tag} no mask gradient`);
  });
}

/** Shapes of the two tests below: the scores path's are the scores cases' (shared pipelines). */
const SMALL = { fused: { tq: 3, tk: 4, d: 3 }, scores: { tq: 48, tk: 64, d: 32 } };
const WIDE = { fused: { tq: 5, tk: 70, d: 4 }, scores: { tq: 48, tk: 64, d: 32 } };

for (const kernel of KERNELS) {
  gpuTest(
    `scaledDotProductAttention ${kernel}: a query row with every key hidden outputs 0 with 0 gradients`,
    async () => {
      const rng = mulberry32(5);
      const { tq, tk, d } = SMALL[kernel], dims = { b: 2, h: 1, tq, tk, d };
      const q = randn(2 * tq * d, rng), k = randn(2 * tk * d, rng), v = randn(2 * tk * d, rng);
      const dout = randn(2 * tq * d, rng);
      // Batch 0 is all padding; batch 1 hides every other key but its first.
      const kpm = Int32Array.from({ length: 2 * tk }, (_, i) => (i < tk || (i % 2 === 1 && i % tk > 0) ? 1 : 0));
      const want = sdpaRef(q, k, v, dims, { keyPaddingMask: kpm }, dout);
      const { inputs, attrs } = attentionCall(
        fromArray(q, [2, 1, tq, d]),
        fromArray(k, [2, 1, tk, d]),
        fromArray(v, [2, 1, tk, d]),
        { keyPaddingMask: fromArray(kpm, [2, tk]), kernel },
      );
      const { output, grads } = forwardBackward(attentionOp, inputs, attrs, fromArray(dout, [2, 1, tq, d]));
      const o = await output.toArray();
      const b0 = o.slice(0, tq * d);
      assert(b0.every((x) => x === 0), `batch 0 output is 0, got ${b0.filter((x) => x !== 0).slice(0, 5)}`);
      assertRelClose(o, want.o, 1e-4, "o");
      assertRelClose(await grads[0]!.toArray(), want.dq, 1e-4, "dq");
      assertRelClose(await grads[1]!.toArray(), want.dk, 1e-4, "dk");
      assertRelClose(await grads[2]!.toArray(), want.dv, 1e-4, "dv");
    },
  );

  gpuTest(`scaledDotProductAttention ${kernel}: large logits stay finite (max-subtracted softmax)`, async () => {
    const rng = mulberry32(6);
    const { tq, tk, d } = WIDE[kernel], dims = { b: 1, h: 1, tq, tk, d };
    const q = randn(tq * d, rng, 30), k = randn(tk * d, rng, 30), v = randn(tk * d, rng);
    const want = sdpaRef(q, k, v, dims, {}, new Float32Array(tq * d));
    const o = scaledDotProductAttention(
      fromArray(q, [1, 1, tq, d]),
      fromArray(k, [1, 1, tk, d]),
      fromArray(v, [1, 1, tk, d]),
      { kernel },
    );
    assertRelClose(await o.toArray(), want.o, 1e-3, "o with scores near ±900");
  });
}

// Packed q, k, v: views of one [3, B, H, T, D] input where 256-byte aligned (4,096 floats a
// part), copies where not (35 floats a part; the fused kernels only: their compile is cheap).
const PACKED = [
  { kernel: "fused", b: 1, h: 2, tq: 64, tk: 64, d: 32 },
  { kernel: "scores", b: 1, h: 2, tq: 64, tk: 64, d: 32 },
  { kernel: "fused", b: 1, h: 1, tq: 7, tk: 7, d: 5 },
] as const;
for (const c of PACKED) {
  gpuTest(
    `scaledDotProductAttention ${c.kernel} packed [3,${c.b},${c.h},${c.tq},${c.d}]: one stacked gradient`,
    async () => {
      const rng = mulberry32(c.tq + c.d);
      const n = c.b * c.h * c.tq * c.d, shape = [c.b, c.h, c.tq, c.d];
      const qkv = randn(3 * n, rng), dout = randn(n, rng);
      const [q, k, v] = [0, 1, 2].map((i) => qkv.subarray(i * n, (i + 1) * n));
      const want = sdpaRef(q, k, v, c, { causal: true }, dout);
      const { inputs, attrs } = packedAttentionCall(fromArray(qkv, [3, ...shape]), { causal: true, kernel: c.kernel });
      const { output, grads } = forwardBackward(attentionOp, inputs, attrs, fromArray(dout, shape));
      assertRelClose(await output.toArray(), want.o, 1e-3, "o");
      assertEquals(grads.length, 1, "one gradient");
      assertEquals(grads[0]!.shape, [3, ...shape], "its shape");
      const g = await grads[0]!.toArray();
      assertRelClose(g.subarray(0, n), want.dq, 1e-3, "dq");
      assertRelClose(g.subarray(n, 2 * n), want.dk, 1e-3, "dk");
      assertRelClose(g.subarray(2 * n), want.dv, 1e-3, "dv");
    },
  );
}

gpuTest("scaledDotProductAttention packed: q, k, v must be [3, B, H, T, D]", () => {
  const x = fromArray(new Float32Array(24), [2, 1, 1, 3, 4]);
  assertThrows(
    () => attentionOp.forward(packedAttentionCall(x, {}).inputs, packedAttentionCall(x, {}).attrs),
    RangeError,
    "[3, B, H, T, D]",
    "[2,1,1,3,4]",
  );
});

gpuTest(
  "attentionKernel: the scores path on the register matmul's adapters for Tk a multiple of 4 while P fits, else fused",
  (device) => {
    const register = device.matmul.bk === 0;
    assertEquals(attentionKernel(device, 8, 4, 64, 64), register ? "scores" : "fused");
    // 64 MiB of P and one row more.
    assertEquals(attentionKernel(device, 1, 1, 4096, 4096), register ? "scores" : "fused");
    assertEquals(attentionKernel(device, 1, 1, 4097, 4096), "fused");
    assertEquals(attentionKernel(device, 8, 4, 64, 62), "fused", "Tk not a multiple of 4");
    const x = fromArray(new Float32Array(2 * 6 * 4), [1, 2, 6, 4]);
    assertThrows(
      () => scaledDotProductAttention(x, x, x, { kernel: "scores" }),
      RangeError,
      "scores",
      "multiple of 4",
      "Tk = 6",
    );
  },
);

gpuTest("scaledDotProductAttention rejects bad shapes, masks and dropout naming them", () => {
  const q = fromArray(new Float32Array(24), [1, 2, 3, 4]), k = fromArray(new Float32Array(40), [1, 2, 5, 4]);
  assertThrows(() => scaledDotProductAttention(q, k, q), RangeError, "q=[1,2,3,4]", "k=[1,2,5,4]");
  assertThrows(
    () => scaledDotProductAttention(q, k, k, { attnMask: fromArray(new Float32Array(15), [5, 3]) }),
    RangeError,
    "attnMask",
    "[3, 5]",
    "[5,3]",
  );
  assertThrows(
    () => scaledDotProductAttention(q, k, k, { keyPaddingMask: fromArray(new Float32Array(5), [5]) }),
    RangeError,
    "keyPaddingMask",
    "[1, 5]",
    "[5]",
  );
  assertThrows(() => scaledDotProductAttention(q, k, k, { dropoutP: 1 }), RangeError, "dropoutP", "1");
  assertThrows(() => attentionDims([2, 3], [2, 3], [2, 3]), TypeError, "[B, H, T, D]");
});
