/**
 * TransformerDecoder (src/nn/transformer.ts) against PyTorch's nn.TransformerDecoder
 * (decoder_golden.json, make_decoder_golden.py: 2 layers, every parameter random, post-norm and
 * pre-norm, relu and gelu, batchFirst both ways, with and without the final norm, under each of
 * the four masks): the state dict loads strict by PyTorch's names and the output and the
 * gradients of tgt, memory and every parameter match; against the float64 reference
 * (test/reference/transformer.ts) on other sizes with the causal flag; the copies; the refusal.
 */
import {
  fromArray,
  LayerNorm,
  type Tensor,
  TransformerDecoder,
  TransformerDecoderLayer,
  type TransformerLayerOptions,
  Variable,
} from "../../../../src/index.ts";
import golden from "../../../fixtures/decoder_golden.json" with { type: "json" };
import { swapLeadingDims, transformerDecoderRef } from "../../../reference/transformer.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { mulberry32, randn } from "../../../util/random.ts";
import { type GoldenTensor, values } from "./golden.ts";

const input = (x: ArrayLike<number>, shape: number[]) => new Variable(fromArray(x, shape), true);
const mask = (m: { shape: number[]; data: number[] } | undefined) => m && fromArray(Float32Array.from(m.data), m.shape);

function decoder(options: TransformerLayerOptions, finalNorm: boolean, e = 8, h = 2): TransformerDecoder {
  return new TransformerDecoder(new TransformerDecoderLayer(e, h, options), 2, { norm: finalNorm ? new LayerNorm(e) : undefined });
}

/** The output and the gradients of tgt, memory and every parameter, by name, after backward(dy). */
async function run(dec: TransformerDecoder, tgt: Variable, memory: Variable, masks: Parameters<TransformerDecoder["forward"]>[2], dy: Tensor) {
  const y = dec.forward(tgt, memory, masks);
  y.backward(dy);
  const grads: Record<string, Float32Array> = {};
  for (const [name, p] of dec.namedParameters()) grads[name] = (await p.grad!.toArray()) as Float32Array;
  return { y: await y.toArray(), dtgt: await tgt.grad!.toArray(), dmemory: await memory.grad!.toArray(), grads };
}

for (const c of golden.cases) {
  gpuTest(`TransformerDecoder ${c.name}: PyTorch's state dict loads by name; output and every gradient match`, async () => {
    const dec = decoder(c.options as TransformerLayerOptions, c.finalNorm);
    const state = new Map<string, Tensor>(Object.entries(c.state).map(([k, t]) => [k, fromArray(values(t), t.shape)]));
    assertEquals(dec.loadStateDict(state, { source: "decoder_golden.json" }), { missing: [], unexpected: [] }, "strict load");
    const m = c.masks as Record<string, { shape: number[]; data: number[] } | undefined>;
    const masks = {
      tgtMask: mask(m.tgtMask),
      memoryMask: mask(m.memoryMask),
      tgtKeyPaddingMask: mask(m.tgtKeyPaddingMask),
      memoryKeyPaddingMask: mask(m.memoryKeyPaddingMask),
    };
    const g = (t: GoldenTensor) => values(t);
    const r = await run(dec, input(g(c.tgt), c.tgt.shape), input(g(c.memory), c.memory.shape), masks, fromArray(g(c.dy), c.dy.shape));
    assertRelClose(r.y, g(c.y), 1e-4, "output");
    assertRelClose(r.dtgt, g(c.dtgt), 1e-3, "dtgt");
    assertRelClose(r.dmemory, g(c.dmemory), 1e-3, "dmemory");
    assertEquals(Object.keys(r.grads), Object.keys(c.grads), "parameter names in PyTorch's order");
    for (const [name, want] of Object.entries(c.grads)) assertRelClose(r.grads[name], g(want), 1e-3, `${name} grad`);
  });
}

for (const [batchFirst, normFirst, activation] of [[false, false, "gelu"], [true, true, "relu"]] as const) {
  gpuTest(`TransformerDecoder batchFirst ${batchFirst}, normFirst ${normFirst}, ${activation}, tgtCausal: output and every gradient match the f64 reference`, async () => {
    const rng = mulberry32(batchFirst ? 2834 : 2835);
    const b = 2, t = 5, s = 3, e = 12, h = 3;
    const dec = decoder({ dimFeedforward: 10, dropout: 0, activation, batchFirst, normFirst }, true, e, h);
    const state: Record<string, Float32Array> = {};
    const load = new Map<string, Tensor>();
    for (const [name, p] of dec.namedParameters()) load.set(name, fromArray(state[name] = randn(p.data.numel, rng, 0.5), p.shape));
    dec.loadStateDict(load); // every parameter random, each layer its own
    const tgtKeyPaddingMask = [0, 0, 0, 0, 1, 0, 0, 0, 1, 1], memoryKeyPaddingMask = [0, 1, 0, 0, 0, 0];
    const tgt = randn(b * t * e, rng), memory = randn(b * s * e, rng), dy = randn(b * t * e, rng);
    // Our layout from batch first ([B, ·, E]), and back.
    const lay = (x: ArrayLike<number>, len: number) => (batchFirst ? x : swapLeadingDims(x, b, len, e));
    const unlay = (x: ArrayLike<number>, len: number) => (batchFirst ? x : swapLeadingDims(x, len, b, e));
    const shape = (len: number) => (batchFirst ? [b, len, e] : [len, b, e]);
    const r = await run(dec, input(lay(tgt, t), shape(t)), input(lay(memory, s), shape(s)), {
      tgtCausal: true,
      tgtKeyPaddingMask: fromArray(tgtKeyPaddingMask, [b, t]),
      memoryKeyPaddingMask: fromArray(memoryKeyPaddingMask, [b, s]),
    }, fromArray(lay(dy, t), shape(t)));
    const want = transformerDecoderRef(tgt, memory, state, {
      b, t, s, e, h, numLayers: 2, finalNorm: true, normFirst, activation, eps: 1e-5,
      tgtCausal: true, tgtKeyPaddingMask, memoryKeyPaddingMask,
    }, dy);
    assertRelClose(unlay(r.y, t), want.y, 1e-4, "output");
    assertRelClose(unlay(r.dtgt, t), want.dTgt, 1e-3, "dtgt");
    assertRelClose(unlay(r.dmemory, s), want.dMemory, 1e-3, "dmemory");
    for (const name of Object.keys(state)) assertRelClose(r.grads[name], want.grads[name], 1e-3, `${name} grad`);
  });
}

gpuTest("TransformerDecoder's copies start from the layer's values, each its own; numLayers is checked", async () => {
  const layer = new TransformerDecoderLayer(8, 2, { dimFeedforward: 4, batchFirst: true, normFirst: true });
  const dec = new TransformerDecoder(layer, 3);
  assertEquals(dec.layers.length, 3, "layers");
  assertEquals(dec.norm, undefined, "no final norm unless given");
  const first = Array.from(await layer.multiheadAttn.inProjWeight.data.toArray());
  const copies = [0, 1, 2].map((i) => dec.layers.at(i) as TransformerDecoderLayer);
  for (const [i, copy] of copies.entries()) {
    assertEquals(Array.from(await copy.multiheadAttn.inProjWeight.data.toArray()), first, `layers.${i}.multihead_attn.in_proj_weight`);
    assertEquals(copy.settings, layer.settings, `layers.${i} settings`);
    assert(copy !== layer && copy.linear1.weight !== layer.linear1.weight, `layers.${i} is a copy`);
  }
  copies[1].loadStateDict(new Map([["norm3.bias", fromArray(new Float32Array(8).fill(5), [8])]]), { strict: false });
  assertEquals(Array.from(await copies[0].norm3.bias!.data.toArray()), new Array(8).fill(0), "the others unchanged");
  assertThrows(() => new TransformerDecoder(layer, 0), RangeError, "TransformerDecoder", "numLayers", "0");
  assertThrows(() => new TransformerDecoder(layer, 1.5), RangeError, "TransformerDecoder", "numLayers", "1.5");
});
