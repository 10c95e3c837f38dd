/**
 * TransformerEncoderLayer, TransformerEncoder and TransformerDecoderLayer (src/nn/transformer.ts)
 * against PyTorch (make_torch_golden.py): PyTorch's state dicts (every parameter random) load
 * strict by its own names, and the output and the gradients of the input, the memory and
 * every parameter match, post-norm and pre-norm, relu and gelu, batchFirst both ways, with a
 * key-padding mask and a causal target mask; the errors name the option.
 */
import {
  fromArray,
  type Tensor,
  TransformerDecoderLayer,
  TransformerEncoder,
  TransformerEncoderLayer,
  type TransformerLayerOptions,
  Variable,
} from "../../../../src/index.ts";
import type { Module } from "../../../../src/nn/mod.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { golden, type GoldenTensor, values } from "./golden.ts";

function load(m: Module, state: Record<string, GoldenTensor>): void {
  const sd = new Map<string, Tensor>(Object.entries(state).map(([k, t]) => [k, fromArray(values(t), t.shape)]));
  assertEquals(m.loadStateDict(sd, { source: "torch_golden.json" }), { missing: [], unexpected: [] }, "strict load");
}

const input = (t: GoldenTensor) => new Variable(fromArray(values(t), t.shape), true);
const mask = (bits: number[], shape: number[]) => fromArray(Float32Array.from(bits), shape);

/** A case of the "transformer" section; JSON's inferred union of the three is too narrow to index by name. */
interface Case {
  name: string;
  kind: string;
  options: unknown;
  state: Record<string, GoldenTensor>;
  grads: Record<string, GoldenTensor>;
  x: GoldenTensor;
  memory?: GoldenTensor;
  keyPaddingMask?: number[] | null;
  tgtMask?: number[];
  dy: GoldenTensor;
  y: GoldenTensor;
  dx: GoldenTensor;
  dmemory?: GoldenTensor;
}

for (const k of golden.transformer as unknown as Case[]) {
  gpuTest(`${k.name}: PyTorch's state dict loads by name; output and every gradient match`, async () => {
    const options = k.options as TransformerLayerOptions;
    const x = input(k.x);
    let m: Module, y: Variable, memory: Variable | undefined;
    if (k.kind === "encoder") {
      const enc = new TransformerEncoder(new TransformerEncoderLayer(8, 2, options), 2);
      m = enc;
      load(m, k.state);
      const b = options.batchFirst ? k.x.shape[0] : k.x.shape[1], t = options.batchFirst ? k.x.shape[1] : k.x.shape[0];
      y = enc.forward(x, { keyPaddingMask: k.keyPaddingMask ? mask(k.keyPaddingMask, [b, t]) : undefined });
    } else {
      const dec = new TransformerDecoderLayer(8, 2, options);
      m = dec;
      load(m, k.state);
      memory = input(k.memory!);
      const t = k.x.shape[1];
      y = dec.forward(x, memory, { tgtMask: mask(k.tgtMask!, [t, t]) });
    }
    y.backward(fromArray(values(k.dy), k.dy.shape));
    assertRelClose(await y.toArray(), values(k.y), 1e-4, `${k.name} output`);
    assertRelClose(await x.grad!.toArray(), values(k.dx), 1e-3, `${k.name} dx`);
    if (memory) assertRelClose(await memory.grad!.toArray(), values(k.dmemory!), 1e-3, `${k.name} dmemory`);
    const grads = k.grads;
    assertEquals(m.namedParameters().map(([n]) => n), Object.keys(grads), "parameter names in PyTorch's order");
    for (const [name, p] of m.namedParameters()) assertRelClose(await p.grad!.toArray(), values(grads[name]), 1e-3, `${k.name} ${name} grad`);
  });
}

gpuTest("TransformerEncoder's copies start from the layer's values; the layers refuse bad options naming them", async () => {
  const layer = new TransformerEncoderLayer(8, 2, { dimFeedforward: 4 });
  const enc = new TransformerEncoder(layer, 3);
  const first = await layer.linear1.weight.data.toArray();
  for (let i = 0; i < 3; i++) assertEquals(Array.from(await enc.namedParameters().find(([n]) => n === `layers.${i}.linear1.weight`)![1].data.toArray()), Array.from(first));
  assertThrows(() => new TransformerEncoderLayer(8, 3), RangeError, "TransformerEncoderLayer", "nhead", "dModel 8", "3");
  assertThrows(() => new TransformerDecoderLayer(8, 2, { dropout: 1 }), RangeError, "TransformerDecoderLayer", "dropout", "[0, 1)", "1");
  assertThrows(() => new TransformerEncoderLayer(8, 2, { activation: "tanh" as "relu" }), RangeError, "activation", "tanh");
  assertThrows(() => new TransformerEncoder(layer, 0), RangeError, "TransformerEncoder", "numLayers", "0");
});
