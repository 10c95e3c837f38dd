/**
 * MultiheadAttention.forwardWithWeights (PyTorch's need_weights, averaged or per head) and
 * float additive masks (`attnBias`, PyTorch's float attn_mask, 2-D and [B·H, Tq, Tk]) against
 * PyTorch (make_torch_golden.py "mha": every parameter random): outputs, weights and the
 * gradients of the inputs and every parameter; the composed path (F.attentionWeights)
 * against the f64 reference with every mask, a fully hidden row (zeros, no NaN) included.
 */
import { attentionWeights, fromArray, MultiheadAttention, type Tensor, Variable } from "../../../../src/index.ts";
import { sdpaRef } from "../../../reference/attention.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn } from "../../../util/random.ts";
import { golden, type GoldenTensor, values } from "./golden.ts";

interface Case {
  name: string;
  batchFirst: boolean;
  selfAttention: boolean;
  needWeights: boolean;
  averageAttnWeights: boolean;
  state: Record<string, GoldenTensor>;
  q: GoldenTensor;
  k: GoldenTensor;
  v: GoldenTensor;
  attnMask?: number[];
  keyPaddingMask?: number[];
  /** -inf is JSON's null here. */
  attnBias?: GoldenTensor;
  dy: GoldenTensor;
  y: GoldenTensor;
  weights?: GoldenTensor;
  dweights?: GoldenTensor;
  dq: GoldenTensor;
  dk: GoldenTensor | null;
  dv: GoldenTensor | null;
  grads: Record<string, GoldenTensor>;
}

const input = (t: GoldenTensor) => new Variable(fromArray(values(t), t.shape), true);
const dot = (v: Variable, t: GoldenTensor) => v.mul(new Variable(fromArray(values(t), t.shape))).sum();

for (const k of golden.mha as unknown as Case[]) {
  gpuTest(`MultiheadAttention against PyTorch: ${k.name}`, async () => {
    const m = new MultiheadAttention(8, 2, { batchFirst: k.batchFirst });
    const sd = new Map<string, Tensor>(Object.entries(k.state).map(([n, t]) => [n, fromArray(values(t), t.shape)]));
    assertEquals(m.loadStateDict(sd), { missing: [], unexpected: [] }, "strict load");
    const q = input(k.q), key = k.selfAttention ? q : input(k.k), value = k.selfAttention ? q : input(k.v);
    const b = k.batchFirst ? k.q.shape[0] : k.q.shape[1], tq = k.batchFirst ? k.q.shape[1] : k.q.shape[0];
    const tk = k.selfAttention ? tq : (k.batchFirst ? k.k.shape[1] : k.k.shape[0]);
    const options = {
      attnMask: k.attnMask && fromArray(Float32Array.from(k.attnMask), [tq, tk]),
      keyPaddingMask: k.keyPaddingMask && fromArray(Float32Array.from(k.keyPaddingMask), [b, tk]),
      attnBias: k.attnBias && fromArray(k.attnBias.data.map((x) => (x === null ? -Infinity : x)), k.attnBias.shape),
      averageAttnWeights: k.averageAttnWeights,
    };
    let loss: Variable, out: Variable, weights: Variable | undefined;
    if (k.needWeights) {
      ({ output: out, weights } = m.forwardWithWeights(q, key, value, options));
      assertEquals(weights.shape, k.weights!.shape, "weights shape");
      loss = dot(out, k.dy).add(dot(weights, k.dweights!));
    } else {
      out = m.forward(q, key, value, options);
      loss = dot(out, k.dy);
    }
    loss.backward();
    assertRelClose(await out.toArray(), values(k.y), 1e-4, `${k.name} output`);
    if (weights) assertRelClose(await weights.toArray(), values(k.weights!), 1e-4, `${k.name} weights`);
    assertRelClose(await q.grad!.toArray(), values(k.dq), 1e-3, `${k.name} dq`);
    if (k.dk) assertRelClose(await key.grad!.toArray(), values(k.dk), 1e-3, `${k.name} dk`);
    if (k.dv) assertRelClose(await value.grad!.toArray(), values(k.dv), 1e-3, `${k.name} dv`);
    for (const [n, p] of m.namedParameters()) assertRelClose(await p.grad!.toArray(), values(k.grads[n]), 1e-3, `${k.name} ${n} grad`);
  });
}

gpuTest("attentionWeights matches the f64 reference with every mask, and a fully hidden row gives zeros and no NaN", async () => {
  const rng = mulberry32(2815);
  const [b, h, tq, tk, d] = [2, 3, 4, 5, 6];
  const q = randn(b * h * tq * d, rng), kk = randn(b * h * tk * d, rng), v = randn(b * h * tk * d, rng);
  const dout = randn(b * h * tq * d, rng);
  const attnMask = new Float32Array(tq * tk);
  attnMask[1 * tk + 3] = 1;
  attnMask.fill(1, 2 * tk, 3 * tk); // query 2 sees no key
  const keyPaddingMask = new Float32Array(b * tk);
  keyPaddingMask[1 * tk + 4] = 1;
  const want = sdpaRef(q, kk, v, { b, h, tq, tk, d }, { attnMask, keyPaddingMask, causal: true }, dout);
  const vars = [q, kk, v].map((a, i) => new Variable(fromArray(a, [b, h, i ? tk : tq, d]), true));
  const { output, weights } = attentionWeights(vars[0], vars[1], vars[2], {
    attnMask: fromArray(attnMask, [tq, tk]),
    keyPaddingMask: fromArray(keyPaddingMask, [b, tk]),
    causal: true,
  });
  output.backward(fromArray(dout, [b, h, tq, d]));
  assertRelClose(await output.toArray(), want.o, 1e-4, "output");
  for (const [i, g] of [want.dq, want.dk, want.dv].entries()) assertRelClose(await vars[i].grad!.toArray(), g, 1e-3, `grad ${"qkv"[i]}`);
  const w = await weights.toArray();
  for (let r = 0; r < b * h; r++) {
    for (let j = 0; j < tk; j++) assertEquals(w[(r * tq + 2) * tk + j], 0, "a fully hidden row's weights are 0");
  }
  assertEquals(count(weights.shape), b * h * tq * tk);
});

gpuTest("attnBias and the composed path refuse shapes that do not fit, naming the option", () => {
  const x = new Variable(fromArray(new Float32Array(2 * 2 * 3 * 4), [2, 2, 3, 4]));
  assertThrows(() => attentionWeights(x, x, x, { attnBias: fromArray(new Float32Array(6), [2, 3]) }), RangeError, "attnBias", "[2,2,3,3]", "[2,3]");
  assertThrows(() => attentionWeights(x, x, x, { attnMask: fromArray(new Float32Array(4), [2, 2]) }), RangeError, "attnMask", "[3, 3]");
  const m = new MultiheadAttention(4, 2, { batchFirst: true });
  const y = new Variable(fromArray(new Float32Array(2 * 3 * 4), [2, 3, 4]));
  assertThrows(() => m.forward(y, y, y, { attnBias: fromArray(new Float32Array(27), [3, 3, 3]) }), RangeError, "MultiheadAttention", "[B·H, Tq, Tk] = [4, 3, 3]", "[3,3,3]");
});
