/**
 * Float additive masks (`attnBias`, PyTorch's float attn_mask) in both attention kernels
 * against the f64 reference: broadcast shapes read through strides, -inf entries, the masks,
 * causal and dropout combined, rows every key of which is hidden, and the bias gradient
 * (dS summed over the broadcast dims).
 */
import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import {
  attentionCall,
  type AttentionKernel,
  attentionOp,
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
  /** The bias's shape, broadcast to [b, h, tq, tk]. */
  bias: number[];
  causal?: boolean;
  mask?: boolean;
  kpm?: boolean;
  dropoutP?: number;
  kernel: AttentionKernel;
}

/** `values` of shape `shape` read as [b, h, tq, tk] (right-aligned, dims of 1 repeated). */
function expand(values: Float32Array, shape: number[], full: number[]): Float64Array {
  const s = [...Array(4 - shape.length).fill(1), ...shape];
  const out = new Float64Array(full[0] * full[1] * full[2] * full[3]);
  let n = 0;
  for (let a = 0; a < full[0]; a++) {
    for (let b = 0; b < full[1]; b++) {
      for (let c = 0; c < full[2]; c++) {
        for (let e = 0; e < full[3]; e++) {
          const at = [a, b, c, e].map((x, i) => (s[i] === 1 ? 0 : x));
          out[n++] = values[((at[0] * s[1] + at[1]) * s[2] + at[2]) * s[3] + at[3]];
        }
      }
    }
  }
  return out;
}

/** The gradient of the broadcast bias summed back to `shape`. */
function reduce(ds: Float64Array, shape: number[], full: number[]): Float64Array {
  const s = [...Array(4 - shape.length).fill(1), ...shape];
  const out = new Float64Array(s.reduce((a, x) => a * x, 1));
  let n = 0;
  for (let a = 0; a < full[0]; a++) {
    for (let b = 0; b < full[1]; b++) {
      for (let c = 0; c < full[2]; c++) {
        for (let e = 0; e < full[3]; e++) {
          const at = [a, b, c, e].map((x, i) => (s[i] === 1 ? 0 : x));
          out[((at[0] * s[1] + at[1]) * s[2] + at[2]) * s[3] + at[3]] += ds[n++];
        }
      }
    }
  }
  return out;
}

const CASES: Case[] = [
  { b: 2, h: 3, tq: 9, tk: 13, d: 7, bias: [9, 13], kernel: "fused" }, // [Tq, Tk]
  { b: 2, h: 2, tq: 33, tk: 33, d: 16, bias: [2, 2, 33, 33], causal: true, kpm: true, kernel: "fused" },
  { b: 2, h: 3, tq: 5, tk: 70, d: 3, bias: [2, 1, 1, 70], mask: true, kernel: "fused" }, // per key, 3 key blocks
  { b: 1, h: 4, tq: 40, tk: 40, d: 33, bias: [1, 4, 40, 40], causal: true, kernel: "fused" }, // ALiBi's shape, 2 column chunks
  { b: 2, h: 3, tq: 31, tk: 29, d: 8, bias: [3, 31, 29], dropoutP: 0.2, kpm: true, kernel: "fused" }, // [H, Tq, Tk]
  { b: 2, h: 2, tq: 6, tk: 5, d: 4, bias: [1, 2, 1, 5], causal: true, mask: true, kpm: true, kernel: "fused" }, // per (h, j)
  { b: 1, h: 1, tq: 1, tk: 1, d: 1, bias: [1], kernel: "fused" },
  // The scores path at the shapes of attention_test.ts's scores cases (shared pipelines).
  { b: 2, h: 2, tq: 48, tk: 64, d: 32, bias: [2, 1, 1, 64], causal: true, kpm: true, kernel: "scores" },
  { b: 1, h: 2, tq: 48, tk: 64, d: 32, bias: [1, 2, 48, 64], mask: true, dropoutP: 0.2, kernel: "scores" },
  { b: 3, h: 1, tq: 48, tk: 64, d: 32, bias: [48, 64], causal: true, kernel: "scores" },
];

for (const c of CASES) {
  const tag = `${c.kernel} [${c.b},${c.h},${c.tq}|${c.tk},${c.d}] attnBias [${c.bias}]${c.causal ? " causal" : ""}${
    c.mask ? " attnMask" : ""
  }${c.kpm ? " keyPadding" : ""}${c.dropoutP ? ` dropout ${c.dropoutP}` : ""}`;
  gpuTest(`scaledDotProductAttention ${tag}: output, dq, dk, dv and dBias match f64 reference`, async () => {
    const rng = mulberry32(c.tq * 17 + c.tk + c.d);
    const full = [c.b, c.h, c.tq, c.tk];
    const nq = c.b * c.h * c.tq * c.d, nk = c.b * c.h * c.tk * c.d;
    const q = randn(nq, rng), k = randn(nk, rng), v = randn(nk, rng), dout = randn(nq, rng);
    // Biases of a few units (they move the weights as much as the scores do), -inf on some.
    const bias = randn(c.bias.reduce((a, x) => a * x, 1), rng, 2);
    if (bias.length > 1) { for (let n = 3; n < bias.length; n += 7) bias[n] = -Infinity; }
    const mask = c.mask ? Float32Array.from({ length: c.tq * c.tk }, (_, i) => (i % 5 === 1 ? 1 : 0)) : undefined;
    const kpm = c.kpm ? Int32Array.from({ length: c.b * c.tk }, (_, i) => (i % c.tk === c.tk - 1 ? 1 : 0)) : undefined;
    const seed = 77;
    const dropout = c.dropoutP ? dropoutMultipliers(seed, c.dropoutP, c.b * c.h * c.tq * c.tk) : undefined;
    const opts = { causal: c.causal, attnMask: mask, keyPaddingMask: kpm, dropout, bias: expand(bias, c.bias, full) };
    const want = sdpaRef(q, k, v, c, opts, dout);
    const { inputs, attrs } = attentionCall(
      fromArray(q, [c.b, c.h, c.tq, c.d]),
      fromArray(k, [c.b, c.h, c.tk, c.d]),
      fromArray(v, [c.b, c.h, c.tk, c.d]),
      {
        causal: c.causal,
        attnMask: mask && fromArray(mask, [c.tq, c.tk]),
        keyPaddingMask: kpm && fromArray(kpm, [c.b, c.tk]),
        attnBias: fromArray(bias, c.bias),
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
    const db = grads[inputs.length - 1]!;
    assertEquals(db.shape, c.bias, `${tag} dBias has the bias's shape`);
    assertRelClose(await db.toArray(), reduce(want.dbias, c.bias, full), 1e-3, `${tag} dBias`);
    if (mask) assertEquals(grads[3], null, `${tag} no mask gradient`);
  });
}

for (const kernel of ["fused", "scores"] as AttentionKernel[]) {
  gpuTest(
    `scaledDotProductAttention ${kernel}: rows hidden by -inf biases (alone and with a mask) give 0, 0 gradients`,
    async () => {
      const rng = mulberry32(8);
      const [b, h, tq, tk, d] = kernel === "fused" ? [2, 1, 5, 7, 3] : [2, 1, 48, 64, 32];
      const q = randn(b * h * tq * d, rng), k = randn(b * h * tk * d, rng), v = randn(b * h * tk * d, rng);
      const dout = randn(b * h * tq * d, rng);
      const bias = randn(b * tq * tk, rng); // [B, 1, Tq, Tk]
      bias.fill(-Infinity, 1 * tk, 2 * tk); // batch 0, query 1: every key -inf
      bias.fill(-Infinity, (tq + 3) * tk, (tq + 3) * tk + 4); // batch 1, query 3: keys 0..3 -inf ...
      const mask = Float32Array.from({ length: tq * tk }, (_, n) => Number(Math.floor(n / tk) === 3 && n % tk >= 4));
      // ... and the mask hides the rest of query 3 (batch 0's query 3 keeps keys 0..3).
      const full = [b, h, tq, tk];
      const want = sdpaRef(
        q,
        k,
        v,
        { b, h, tq, tk, d },
        { attnMask: mask, bias: expand(bias, [b, 1, tq, tk], full) },
        dout,
      );
      const { inputs, attrs } = attentionCall(
        fromArray(q, [b, h, tq, d]),
        fromArray(k, [b, h, tk, d]),
        fromArray(v, [b, h, tk, d]),
        { attnMask: fromArray(mask, [tq, tk]), attnBias: fromArray(bias, [b, 1, tq, tk]), kernel },
      );
      const { output, grads } = forwardBackward(attentionOp, inputs, attrs, fromArray(dout, [b, h, tq, d]));
      const o = await output.toArray();
      for (const r of [1, tq + 3]) {
        const row = o.slice(r * d, (r + 1) * d);
        assert(row.every((x) => x === 0), `row ${r} outputs 0, got ${[...row].slice(0, 4)}`);
      }
      assert(o.every(Number.isFinite), "no NaN");
      assertRelClose(o, want.o, 1e-4, "o");
      assertRelClose(await grads[0]!.toArray(), want.dq, 1e-3, "dq");
      assertRelClose(await grads[1]!.toArray(), want.dk, 1e-3, "dk");
      assertRelClose(await grads[2]!.toArray(), want.dv, 1e-3, "dv");
      const db = await grads[4]!.toArray();
      assert(db.slice(tk, 2 * tk).every((x) => x === 0), "no bias gradient on the hidden row");
      assertRelClose(db, reduce(want.dbias, [b, 1, tq, tk], full), 1e-3, "dBias");
    },
  );
}

gpuTest("scaledDotProductAttention refuses a bias that does not broadcast or is not f32, naming it", () => {
  const q = fromArray(new Float32Array(24), [1, 2, 3, 4]), k = fromArray(new Float32Array(40), [1, 2, 5, 4]);
  assertThrows(
    () => scaledDotProductAttention(q, k, k, { attnBias: fromArray(new Float32Array(15), [5, 3]) }),
    RangeError,
    "attnBias",
    "[1,2,3,5]",
    "[5,3]",
  );
  assertThrows(
    () => scaledDotProductAttention(q, k, k, { attnBias: fromArray(new Float32Array(30), [2, 1, 3, 5]) }),
    RangeError,
    "attnBias",
    "[2,1,3,5]",
  );
  assertThrows(
    () => scaledDotProductAttention(q, k, k, { attnBias: fromArray(new Int32Array(15), [3, 5]) }),
    TypeError,
    "attnBias",
    "f32",
  );
});
