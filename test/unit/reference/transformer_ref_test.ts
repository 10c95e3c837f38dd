/**
 * The TransformerDecoder reference (test/reference/transformer.ts): its gradients of tgt, memory
 * and every parameter match central differences, pre-norm and post-norm under all the masks, and
 * its output and gradients are PyTorch's float64 ones (test/fixtures/decoder_golden.json).
 */
import golden from "../../fixtures/decoder_golden.json" with { type: "json" };
import { type DecoderRefOptions, swapLeadingDims, transformerDecoderRef } from "../../reference/transformer.ts";
import { assertEquals, assertRelClose } from "../../util/assert.ts";
import { numGradInPlace } from "../../util/numerical_gradient.ts";
import { mulberry32, randn } from "../../util/random.ts";

const f64 = (n: number, rng: () => number, scale = 1) => Float64Array.from(randn(n, rng, scale));

for (const [normFirst, activation] of [[false, "relu"], [true, "gelu"]] as const) {
  Deno.test(`decoder reference gradients (tgt, memory, every parameter; normFirst ${normFirst}) match central differences`, () => {
    const rng = mulberry32(normFirst ? 2832 : 2833);
    const b = 2, t = 3, s = 4, e = 4, ff = 5;
    const o: DecoderRefOptions = {
      b, t, s, e, h: 2, numLayers: 2, finalNorm: true, normFirst, activation, eps: 1e-5,
      tgtCausal: true,
      tgtKeyPaddingMask: [0, 0, 0, 0, 0, 1],
      memoryMask: [0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0],
      memoryKeyPaddingMask: [0, 0, 0, 1, 1, 0, 0, 0],
    };
    const shapes: Record<string, number> = {
      "self_attn.in_proj_weight": 3 * e * e, "self_attn.in_proj_bias": 3 * e,
      "self_attn.out_proj.weight": e * e, "self_attn.out_proj.bias": e,
      "multihead_attn.in_proj_weight": 3 * e * e, "multihead_attn.in_proj_bias": 3 * e,
      "multihead_attn.out_proj.weight": e * e, "multihead_attn.out_proj.bias": e,
      "linear1.weight": ff * e, "linear1.bias": ff, "linear2.weight": e * ff, "linear2.bias": e,
      "norm1.weight": e, "norm1.bias": e, "norm2.weight": e, "norm2.bias": e, "norm3.weight": e, "norm3.bias": e,
    };
    const state: Record<string, Float64Array> = {};
    for (const i of [0, 1]) for (const [k, n] of Object.entries(shapes)) state[`layers.${i}.${k}`] = f64(n, rng, 0.6);
    state["norm.weight"] = f64(e, rng);
    state["norm.bias"] = f64(e, rng);
    const tgt = f64(b * t * e, rng), memory = f64(b * s * e, rng), dy = f64(b * t * e, rng);
    const r = transformerDecoderRef(tgt, memory, state, o, dy);
    const loss = () => transformerDecoderRef(tgt, memory, state, o, dy).y.reduce((acc, v, i) => acc + v * dy[i], 0);
    assertRelClose(r.dTgt, numGradInPlace(tgt, loss, 1e-5), 1e-5, "dTgt");
    assertRelClose(r.dMemory, numGradInPlace(memory, loss, 1e-5), 1e-5, "dMemory");
    assertEquals(Object.keys(r.grads).sort(), Object.keys(state).sort(), "a gradient for every parameter");
    for (const [k, v] of Object.entries(state)) assertRelClose(r.grads[k], numGradInPlace(v, loss, 1e-5), 1e-5, k);
  });
}

const vals = (t: { data: (number | null)[] }) => t.data.map((v) => v ?? NaN);
/** The float32 inputs exactly (the JSON's 9 digits name a float32, they are not its value). */
const f32 = (t: { data: (number | null)[] }) => vals(t).map(Math.fround);

for (const c of golden.cases) {
  Deno.test(`decoder reference matches PyTorch's float64 values: ${c.name}`, () => {
    const bf = c.options.batchFirst, [d0, d1, e] = c.tgt.shape, s = c.memory.shape[bf ? 1 : 0];
    const [b, t] = bf ? [d0, d1] : [d1, d0];
    const toBf = (x: number[], len: number) => (bf ? x : swapLeadingDims(x, len, b, e));
    const m = c.masks as Record<string, { data: number[] } | undefined>;
    const o: DecoderRefOptions = {
      b, t, s, e, h: 2, numLayers: 2, finalNorm: c.finalNorm, normFirst: c.options.normFirst,
      activation: c.options.activation as "relu" | "gelu", eps: 1e-5,
      tgtMask: m.tgtMask?.data, tgtKeyPaddingMask: m.tgtKeyPaddingMask?.data,
      memoryMask: m.memoryMask?.data, memoryKeyPaddingMask: m.memoryKeyPaddingMask?.data,
    };
    const state = Object.fromEntries(Object.entries(c.state).map(([k, v]) => [k, f32(v)]));
    const r = transformerDecoderRef(toBf(f32(c.tgt), t), toBf(f32(c.memory), s), state, o, toBf(f32(c.dy), t));
    const back = (x: Float64Array, len: number) => (bf ? x : swapLeadingDims(x, b, len, e));
    assertRelClose(back(r.y, t), vals(c.y), 1e-8, "y");
    assertRelClose(back(r.dTgt, t), vals(c.dtgt), 1e-8, "dtgt");
    assertRelClose(back(r.dMemory, s), vals(c.dmemory), 1e-8, "dmemory");
    for (const [k, g] of Object.entries(c.grads)) assertRelClose(r.grads[k], vals(g), 1e-8, k);
  });
}
