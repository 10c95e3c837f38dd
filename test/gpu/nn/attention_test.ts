/**
 * MultiheadAttention against PyTorch (weights loaded by name from test/fixtures/attention_golden.json,
 * made by make_attention_golden.py; boolean and float masks, the float mask's gradient) and against
 * the f64 reference on odd shapes; attnBias in the fused kernel against the composed path; attention
 * dropout; the other GPT pieces on the tape (RMSNorm, PositionalEmbedding, rotaryEmbedding) and
 * weight tying.
 */
import {
  attentionWeights,
  Embedding,
  fromArray,
  Linear,
  Module,
  MultiheadAttention,
  type Parameter,
  PositionalEmbedding,
  RMSNorm,
  rotaryEmbedding,
  scaledDotProductAttention,
  type Tensor,
  Variable,
} from "../../../src/index.ts";
import golden from "../../fixtures/attention_golden.json" with { type: "json" };
import { mhaRef, sdpaRef } from "../../reference/attention.ts";
import { rmsNormRef } from "../../reference/norm.ts";
import { ropeRef } from "../../reference/rope.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randn } from "../../util/random.ts";

type Golden = (typeof golden.cases)[number];

function loadGolden(c: Golden): MultiheadAttention {
  const mha = new MultiheadAttention(c.embedDim, c.numHeads, { batchFirst: c.batchFirst });
  const state = new Map<string, Tensor>();
  for (const [k, s] of Object.entries(c.state)) state.set(k, fromArray(s.values, s.shape));
  mha.loadStateDict(state, { source: "attention_golden.json" });
  return mha;
}

for (const c of golden.cases) {
  // Float-mask cases carry PyTorch's float attn_mask (-inf as null) and its gradient.
  const float = c.attnBias && c.biasGrad ? { attnBias: c.attnBias, biasGrad: c.biasGrad } : undefined;
  const variants = float
    ? (c.causal ? ["attnBias", "causal flag and attnBias"] : ["attnBias"])
    : c.causal
    ? ["causal flag", "attnMask tensor"]
    : ["no attnMask"];
  for (const maskAs of variants) {
    gpuTest(`MultiheadAttention matches PyTorch ${c.name} (${maskAs}): output and every gradient`, async () => {
      const mha = loadGolden(c);
      assertEquals(mha.namedParameters().map(([n]) => n), Object.keys(c.state), "PyTorch's parameter names and order");
      const inputs = Object.fromEntries(
        Object.entries(c.inputs).map(([k, v]) => [k, new Variable(fromArray(v, c.shapes[k as "query"]), true)]),
      );
      const b = c.batchFirst ? c.shapes.query[0] : c.shapes.query[1];
      const tq = c.batchFirst ? c.shapes.query[1] : c.shapes.query[0];
      const tk = c.keyPaddingMask.length / b;
      const keyPaddingMask = fromArray(Int32Array.from(c.keyPaddingMask), [b, tk]);
      const attnMask = maskAs === "attnMask tensor"
        ? fromArray(Int32Array.from({ length: tq * tk }, (_, n) => Number(n % tk > Math.floor(n / tk))), [tq, tk])
        : undefined;
      const attnBias = float &&
        new Variable(fromArray(float.attnBias.data.map((x) => x ?? -Infinity), float.attnBias.shape), true);
      const causal = maskAs === "causal flag" || maskAs === "causal flag and attnBias";
      const q = inputs.query;
      const out = c.selfAttention
        ? mha.forward(q, q, q, { causal, attnMask, keyPaddingMask, attnBias })
        : mha.forward(q, inputs.key, inputs.value, { keyPaddingMask, attnBias });
      assertRelClose(await out.toArray(), c.output, 1e-4, `${c.name} output`);
      out.backward(fromArray(c.dout, out.shape));
      for (const [k, want] of Object.entries(c.inputGrads)) {
        assertRelClose(await inputs[k].grad!.toArray(), want, 1e-3, `${c.name} d${k}`);
      }
      for (const [k, p] of mha.namedParameters()) {
        assertRelClose(await p.grad!.toArray(), c.paramGrads[k as keyof typeof c.paramGrads], 1e-3, `${c.name} d${k}`);
      }
      if (float) assertRelClose(await attnBias!.grad!.toArray(), float.biasGrad, 1e-3, `${c.name} dAttnBias`);
    });
  }
}

gpuTest(
  "MultiheadAttention on odd shapes matches the f64 reference: output, inputs and weights' gradients",
  async () => {
    const rng = mulberry32(411);
    const dims = { b: 3, tq: 9, tk: 13, e: 10, h: 2 };
    const mha = new MultiheadAttention(dims.e, dims.h, { batchFirst: true, seed: 3 });
    const w = {
      inProjWeight: await mha.inProjWeight.toArray(),
      inProjBias: randn(30, rng),
      outProjWeight: await mha.outProj.weight.toArray(),
      outProjBias: randn(10, rng),
    };
    mha.inProjBias!.set(w.inProjBias);
    mha.outProj.bias!.set(w.outProjBias);
    const query = randn(3 * 9 * 10, rng), key = randn(3 * 13 * 10, rng), value = randn(3 * 13 * 10, rng);
    const dout = randn(3 * 9 * 10, rng);
    const kpm = Int32Array.from({ length: 39 }, (_, i) => Number(i % 13 === 4 || i === 38));
    const want = mhaRef(query, key, value, dims, w, { keyPaddingMask: kpm }, dout);
    const vq = new Variable(fromArray(query, [3, 9, 10]), true);
    const vk = new Variable(fromArray(key, [3, 13, 10]), true);
    const vv = new Variable(fromArray(value, [3, 13, 10]), true);
    const out = mha.forward(vq, vk, vv, { keyPaddingMask: fromArray(kpm, [3, 13]) });
    out.backward(fromArray(dout, [3, 9, 10]));
    assertRelClose(await out.toArray(), want.out, 1e-4, "out");
    assertRelClose(await vq.grad!.toArray(), want.dQuery, 1e-3, "dQuery");
    assertRelClose(await vk.grad!.toArray(), want.dKey, 1e-3, "dKey");
    assertRelClose(await vv.grad!.toArray(), want.dValue, 1e-3, "dValue");
    assertRelClose(await mha.inProjWeight.grad!.toArray(), want.dInProjWeight, 1e-3, "dInProjWeight");
    assertRelClose(await mha.inProjBias!.grad!.toArray(), want.dInProjBias, 1e-3, "dInProjBias");
    assertRelClose(await mha.outProj.weight.grad!.toArray(), want.dOutProjWeight, 1e-3, "dOutProjWeight");
    assertRelClose(await mha.outProj.bias!.grad!.toArray(), want.dOutProjBias, 1e-3, "dOutProjBias");
  },
);

gpuTest(
  "MultiheadAttention: PyTorch's init (Xavier in_proj, zero biases) and attention dropout only in training",
  async () => {
    const mha = new MultiheadAttention(16, 4, { dropout: 0.4, batchFirst: true, seed: 8 });
    const bound = Math.sqrt(6 / (16 + 48));
    const wIn = await mha.inProjWeight.toArray();
    assert(
      wIn.every((x) => Math.abs(x) <= bound) && wIn.some((x) => Math.abs(x) > bound / 2),
      "in_proj_weight in U(±√(6/(E+3E)))",
    );
    assert((await mha.inProjBias!.toArray()).every((x) => x === 0), "in_proj_bias is 0");
    assert((await mha.outProj.bias!.toArray()).every((x) => x === 0), "out_proj.bias is 0");
    const x = new Variable(fromArray(randn(2 * 11 * 16, mulberry32(9)), [2, 11, 16]));
    const train1 = await mha.forward(x, x, x, { causal: true }).toArray();
    const train2 = await mha.forward(x, x, x, { causal: true }).toArray();
    mha.eval();
    const eval1 = await mha.forward(x, x, x, { causal: true }).toArray();
    const eval2 = await mha.forward(x, x, x, { causal: true }).toArray();
    assertEquals([...eval1], [...eval2], "eval is deterministic");
    assert(
      train1.every(Number.isFinite) && train1.some((v, i) => Math.abs(v - eval1[i]) > 1e-3),
      "training drops weights",
    );
    assert(train1.some((v, i) => v !== train2[i]), "each training call draws a new mask");
  },
);

gpuTest("MultiheadAttention and scaledDotProductAttention reject bad sizes naming them", () => {
  assertThrows(() => new MultiheadAttention(10, 3), RangeError, "numHeads", "10", "3");
  assertThrows(() => new MultiheadAttention(8, 2, { dropout: 1 }), RangeError, "dropout", "1");
  const mha = new MultiheadAttention(8, 2);
  assertThrows(
    () => mha.forward(new Variable(fromArray(new Float32Array(12), [2, 1, 6]))),
    RangeError,
    "query",
    "[T, B, E]",
    "E = 8",
    "2,1,6",
  );
  const q = new Variable(fromArray(new Float32Array(24), [1, 2, 3, 4]));
  assertThrows(() => scaledDotProductAttention(q, q, q, { dropoutP: -0.1 }), RangeError, "dropoutP", "-0.1");
});

gpuTest("scaledDotProductAttention on Variables: gradients reach q, k, v through the tape", async () => {
  const rng = mulberry32(12);
  const dims = { b: 1, h: 2, tq: 5, tk: 5, d: 3 };
  const q = randn(30, rng), k = randn(30, rng), v = randn(30, rng), dout = randn(30, rng);
  const vq = new Variable(fromArray(q, [1, 2, 5, 3]), true);
  const vk = new Variable(fromArray(k, [1, 2, 5, 3]), true);
  const vv = new Variable(fromArray(v, [1, 2, 5, 3]), true);
  const y = scaledDotProductAttention(vq, vk, vv, { causal: true });
  y.backward(fromArray(dout, [1, 2, 5, 3]));
  const want = sdpaRef(q, k, v, dims, { causal: true }, dout);
  assertRelClose(await vq.grad!.toArray(), want.dq, 1e-3, "dq");
  assertRelClose(await vk.grad!.toArray(), want.dk, 1e-3, "dk");
  assertRelClose(await vv.grad!.toArray(), want.dv, 1e-3, "dv");
});

// Tk = 9 (not a multiple of 4): the fused kernel on every adapter, against the composed path.
for (const dropoutP of [0, 0.3]) {
  gpuTest(
    `scaledDotProductAttention with attnBias (fused) = attentionWeights (composed)${
      dropoutP ? ", dropout" : ""
    }: output and every gradient`,
    async () => {
      const rng = mulberry32(61);
      const [b, h, tq, tk, d] = [2, 3, 7, 9, 5];
      const q = randn(b * h * tq * d, rng), k = randn(b * h * tk * d, rng), v = randn(b * h * tk * d, rng);
      const dout = randn(b * h * tq * d, rng), bias = randn(h * tq * tk, rng, 2); // ALiBi's [1, H, Tq, Tk]
      bias.fill(-Infinity, 2 * tk, 3 * tk); // head 0, query 2: no key
      bias[5 * tk + 1] = -Infinity;
      const attnMask = fromArray(Int32Array.from({ length: tq * tk }, (_, n) => Number(n % 11 === 4)), [tq, tk]);
      const keyPaddingMask = fromArray(Int32Array.from({ length: b * tk }, (_, n) => Number(n === 2 * tk - 1)), [
        b,
        tk,
      ]);
      const run = (composed: boolean) => {
        const [vq, vk, vv] = [q, k, v].map((x, i) => new Variable(fromArray(x, [b, h, i ? tk : tq, d]), true));
        const vb = new Variable(fromArray(bias, [1, h, tq, tk]), true);
        const options = { attnBias: vb, attnMask, keyPaddingMask, causal: true, dropoutP, seed: 9 };
        const y = composed
          ? attentionWeights(vq, vk, vv, options).output
          : scaledDotProductAttention(vq, vk, vv, options);
        y.backward(fromArray(dout, [b, h, tq, d]));
        return Promise.all([y, vq.grad!, vk.grad!, vv.grad!, vb.grad!].map((t) => t.toArray()));
      };
      const fused = await run(false), composed = await run(true);
      assert(fused[0].every(Number.isFinite), "no NaN in the output (query 2 of head 0 sees no key)");
      assert(fused[0].slice(2 * d, 3 * d).every((x) => x === 0), "the fully hidden row gives zeros");
      for (const [i, name] of ["output", "dq", "dk", "dv", "dBias"].entries()) {
        assertRelClose(fused[i], composed[i], 1e-4, `${name}: fused vs composed`);
      }
    },
  );
}

gpuTest("scaledDotProductAttention with a Tensor attnBias: the bias gets no gradient, q, k, v match f64", async () => {
  const rng = mulberry32(62);
  const dims = { b: 2, h: 2, tq: 5, tk: 6, d: 3 };
  const q = randn(60, rng), k = randn(72, rng), v = randn(72, rng), dout = randn(60, rng), bias = randn(12, rng, 2);
  const vq = new Variable(fromArray(q, [2, 2, 5, 3]), true);
  const vk = new Variable(fromArray(k, [2, 2, 6, 3]), true);
  const vv = new Variable(fromArray(v, [2, 2, 6, 3]), true);
  const y = scaledDotProductAttention(vq, vk, vv, { attnBias: fromArray(bias, [2, 1, 1, 6]) });
  y.backward(fromArray(dout, [2, 2, 5, 3]));
  const full = Float64Array.from({ length: 120 }, (_, n) => bias[Math.floor(n / 60) * 6 + (n % 6)]);
  const want = sdpaRef(q, k, v, dims, { bias: full }, dout);
  assertRelClose(await y.toArray(), want.o, 1e-4, "o");
  assertRelClose(await vq.grad!.toArray(), want.dq, 1e-3, "dq");
  assertRelClose(await vk.grad!.toArray(), want.dk, 1e-3, "dk");
  assertRelClose(await vv.grad!.toArray(), want.dv, 1e-3, "dv");
});

gpuTest(
  "weight tying: one Parameter in Embedding and the output Linear, listed once, gradient from both uses",
  async () => {
    const rng = mulberry32(21);
    const vocab = 11, dim = 6;
    class TinyLm extends Module {
      emb = new Embedding(vocab, dim, { seed: 1 });
      head = new Linear(dim, vocab, { bias: false, seed: 2 });
      constructor() {
        super();
        // The pattern: point the Linear's field at the Embedding's Parameter (readonly is only a type-level guard).
        (this.head as { weight: Parameter }).weight = this.emb.weight;
      }
      forward(x: Variable): Variable {
        return this.head.forward(this.emb.forward(x));
      }
    }
    const model = new TinyLm();
    assertEquals(
      model.namedParameters().map(([n]) => n),
      ["emb.weight"],
      "a tied parameter is listed once, under its first name",
    );
    const emb = model.emb;
    const idx = [3, 0, 10, 3, 7];
    const dy = randn(idx.length * vocab, rng);
    const w = await emb.weight.toArray();
    const y = model.forward(new Variable(fromArray(Int32Array.from(idx), [idx.length])));
    y.backward(fromArray(dy, [idx.length, vocab]));
    // f64: x = W[idx]; y = x Wᵀ; dW = dyᵀ x (as the head's weight) + scatter of dy W into rows idx (as the table).
    const want = new Float64Array(vocab * dim);
    idx.forEach((r, n) => {
      for (let o = 0; o < vocab; o++) {
        for (let c = 0; c < dim; c++) {
          want[o * dim + c] += dy[n * vocab + o] * w[r * dim + c];
          want[r * dim + c] += dy[n * vocab + o] * w[o * dim + c];
        }
      }
    });
    assertRelClose(await emb.weight.grad!.toArray(), want, 1e-4, "tied weight gradient");
  },
);

gpuTest("RMSNorm layer: weight of ones named 'weight', output and gradients against f64", async () => {
  const rng = mulberry32(31);
  const norm = new RMSNorm(7);
  assertEquals(norm.namedParameters().map(([n]) => n), ["weight"], "parameter names");
  const w = randn(7, rng), x = randn(3 * 5 * 7, rng, 3), dy = randn(3 * 5 * 7, rng);
  assert((await norm.weight!.toArray()).every((v) => v === 1), "weight starts at ones");
  norm.weight!.set(w);
  const vx = new Variable(fromArray(x, [3, 5, 7]), true);
  const y = norm.forward(vx);
  y.backward(fromArray(dy, [3, 5, 7]));
  const want = rmsNormRef(x, 15, 7, w, 1e-5, dy);
  assertRelClose(await y.toArray(), want.y, 1e-4, "y");
  assertRelClose(await vx.grad!.toArray(), want.dx, 1e-4, "dx");
  assertRelClose(await norm.weight!.grad!.toArray(), want.dw, 1e-4, "dw");
  assertThrows(() => new RMSNorm(4, { eps: -1 }), RangeError, "eps", "-1");
});

gpuTest("PositionalEmbedding returns rows offset..offset+T-1 of its table; gradient lands on those rows", async () => {
  const pe = new PositionalEmbedding(20, 4, { seed: 5 });
  const table = await pe.weight.toArray();
  const pos = pe.forward(6, 3);
  assertEquals([...pos.shape], [6, 4], "shape [T, dim]");
  assertEquals([...await pos.toArray()], [...table.slice(12, 36)], "rows 3..8");
  pos.sum().backward();
  const g = await pe.weight.grad!.toArray();
  assertEquals([...g], Array.from({ length: 80 }, (_, i) => (i >= 12 && i < 36 ? 1 : 0)), "ones on rows 3..8");
  assertThrows(() => pe.forward(18, 3), RangeError, "PositionalEmbedding(20)", "3..20", "[0, 20)");
});

gpuTest("rotaryEmbedding on Variables: y and the gradient of x against f64", async () => {
  const rng = mulberry32(41);
  const x = randn(2 * 3 * 9 * 8, rng), dy = randn(2 * 3 * 9 * 8, rng);
  const vx = new Variable(fromArray(x, [2, 3, 9, 8]), true);
  const y = rotaryEmbedding(vx, { offset: 2 });
  y.backward(fromArray(dy, [2, 3, 9, 8]));
  const want = ropeRef(x, 9, 8, { base: 10000, offset: 2, interleaved: false }, dy);
  assertRelClose(await y.toArray(), want.y, 1e-4, "y");
  assertRelClose(await vx.grad!.toArray(), want.dx, 1e-4, "dx");
});
