/**
 * `encoder` of the sequence-model bench (issue 28): token + learned position embedding (T
 * rows) → 2 post-norm `TransformerEncoderLayer`s (PyTorch's default layer: d 128, 4 heads,
 * feed-forward 512 with ReLU, LayerNorm after each residual add; dropout 0, causal
 * self-attention so the next character stays unseen) → Linear(128, 85), next-character cross
 * entropy over every position, Adam 3e-4.
 *   - ours: src/nn/transformer.ts's `TransformerEncoderLayer` (batchFirst, `{ causal: true }`).
 *   - TF.js: no encoder layer (nor MultiHeadAttention) in tfjs-layers 4.22: the same graph in
 *     tf ops, composed as this bench's gpt-nano TF.js contender composes its block.
 *   - jax-js: the same graph with its array API, as its gpt-nano contender: `nn.standardize`,
 *     `np.matmul`, `nn.dotProductAttention(…, { isCausal: true })`, `nn.relu`, one `jit` step.
 * All three start from our weights seeded with ENCODER_SEED (the peers load them, x @ W),
 * so their first losses agree.
 */
import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-webgpu";
import { jit, nn, numpy as np, tree, valueAndGrad } from "@jax-js/jax";
import {
  Adam,
  type Device,
  Embedding,
  Linear,
  manualSeed,
  Module,
  PositionalEmbedding,
  Sequential,
  TransformerEncoderLayer,
  type Variable,
} from "../src/index.ts";
import {
  type HostWeight,
  hostWeights,
  jaxAdam,
  jaxCe,
  jaxLn,
  jaxTimeSteps,
  type JP,
  type SeqMode,
  type SeqShape,
  type StepTiming,
  tfTransformerSteps,
  V,
} from "./seq_common.ts";

/** Our encoder's weights (and so the peers') come from the global stream seeded with this. */
export const ENCODER_SEED = 17;
/** Width, heads, layers, feed-forward width, Adam's learning rate. */
export const ENCODER = { d: 128, heads: 4, layers: 2, dFF: 512, lr: 3e-4 } as const;

/** Ids i32 [B, T] → logits [B, T, V] through causal post-norm encoder layers. */
export class EncoderLm extends Module {
  /** Token embedding [V, d]. */
  readonly tok: Embedding;
  /** Learned position embedding [maxLen, d]. */
  readonly pos: PositionalEmbedding;
  /** The TransformerEncoderLayers, in order. */
  readonly layers: Sequential;
  /** Linear(d, V) to the logits. */
  readonly head: Linear;

  /** A fresh model (each layer its PyTorch-default init) for sequences up to `maxLen`. */
  constructor(device: Device, maxLen: number) {
    super();
    const { d, heads, layers, dFF } = ENCODER;
    this.tok = new Embedding(V, d, { device });
    this.pos = new PositionalEmbedding(maxLen, d, { device });
    this.layers = new Sequential(
      ...Array.from(
        { length: layers },
        () => new TransformerEncoderLayer(d, heads, { dimFeedforward: dFF, dropout: 0, batchFirst: true, device }),
      ),
    );
    this.head = new Linear(d, V, { device });
  }

  /** ids i32 [B, T] → logits [B, T, V]; position i attends to 0..i. */
  forward(ids: Variable): Variable {
    let x = this.tok.forward(ids).add(this.pos.forward(ids.shape[1]));
    for (const layer of this.layers.children() as TransformerEncoderLayer[]) x = layer.forward(x, { causal: true });
    return this.head.forward(x);
  }
}

function encoderModel(device: Device, T: number): EncoderLm {
  manualSeed(ENCODER_SEED);
  return new EncoderLm(device, T);
}

/** Our encoder (seeded with ENCODER_SEED, T position rows) and its `foreach` Adam. */
export function encoderOurs(device: Device, s: SeqShape): { model: Module; opt: Adam } {
  const model = encoderModel(device, s.seq);
  return { model, opt: new Adam(model.parameters(), { lr: ENCODER.lr, foreach: true }) };
}

/**
 * Our seeded encoder's weights for the peers, x @ W: tok [V, d], pos [T, d]; per layer `l.in`
 * (in_proj, [d, 3d], q|k|v), `l.out`, `l.ln1` (norm1), `l.up` (linear1), `l.down` (linear2),
 * `l.ln2` (norm2); head [d, V].
 */
export async function encoderInit(device: Device, T: number): Promise<Map<string, HostWeight>> {
  const w = await hostWeights(encoderModel(device, T), "encoderInit");
  const out = new Map<string, HostWeight>([["tok", w.get("tok.weight")], ["pos", w.get("pos.weight")]]);
  for (let l = 0; l < ENCODER.layers; l++) {
    const at = `layers.${l}.`;
    const rows: [string, HostWeight][] = [
      ["in.w", w.t(`${at}self_attn.in_proj_weight`)],
      ["in.b", w.get(`${at}self_attn.in_proj_bias`)],
      ["out.w", w.t(`${at}self_attn.out_proj.weight`)],
      ["out.b", w.get(`${at}self_attn.out_proj.bias`)],
      ["ln1.g", w.get(`${at}norm1.weight`)],
      ["ln1.b", w.get(`${at}norm1.bias`)],
      ["up.w", w.t(`${at}linear1.weight`)],
      ["up.b", w.get(`${at}linear1.bias`)],
      ["down.w", w.t(`${at}linear2.weight`)],
      ["down.b", w.get(`${at}linear2.bias`)],
      ["ln2.g", w.get(`${at}norm2.weight`)],
      ["ln2.b", w.get(`${at}norm2.bias`)],
    ];
    for (const [name, v] of rows) out.set(`${l}.${name}`, v);
  }
  out.set("head.w", w.t("head.weight")).set("head.b", w.get("head.bias"));
  return out;
}

/** TF.js's encoder in tf ops from our weights: a timed run. */
export async function tfEncoder(device: Device, s: SeqShape, mode: SeqMode): Promise<StepTiming> {
  return await tfTransformerSteps(
    s,
    mode,
    await encoderInit(device, s.seq),
    ENCODER.lr,
    ENCODER,
    (p, { ln, dense, causalAttention }, ids) => {
      let h = tf.gather(p.tok, ids).add(p.pos) as tf.Tensor;
      for (let l = 0; l < ENCODER.layers; l++) {
        const a = causalAttention(dense(h, p[`${l}.in.w`], p[`${l}.in.b`]));
        h = ln(h.add(dense(a, p[`${l}.out.w`], p[`${l}.out.b`])), p[`${l}.ln1.g`], p[`${l}.ln1.b`]);
        const u = tf.relu(dense(h, p[`${l}.up.w`], p[`${l}.up.b`]));
        h = ln(h.add(dense(u, p[`${l}.down.w`], p[`${l}.down.b`])), p[`${l}.ln2.g`], p[`${l}.ln2.b`]);
      }
      return dense(h, p["head.w"], p["head.b"]);
    },
  );
}

/** Mean next-character cross entropy of the jax-js encoder; every argument is consumed once. */
function jaxEncoderLoss(p: JP, idsHot: np.Array, onehot: np.Array): np.Array {
  const [B, T] = idsHot.shape, { d, heads: H, layers } = ENCODER, hd = d / H;
  let h = np.matmul(idsHot, p.tok).add(p.pos);
  for (let l = 0; l < layers; l++) {
    const [q, k, v] = np.split(np.matmul(h.ref, p[`${l}.in.w`]).add(p[`${l}.in.b`]), 3, -1);
    const a = nn.dotProductAttention(q.reshape([B, T, H, hd]), k.reshape([B, T, H, hd]), v.reshape([B, T, H, hd]), {
      isCausal: true,
    });
    h = jaxLn(
      h.add(np.matmul(a.reshape([B, T, d]), p[`${l}.out.w`]).add(p[`${l}.out.b`])),
      p[`${l}.ln1.g`],
      p[`${l}.ln1.b`],
    );
    const u = nn.relu(np.matmul(h.ref, p[`${l}.up.w`]).add(p[`${l}.up.b`]));
    h = jaxLn(h.add(np.matmul(u, p[`${l}.down.w`]).add(p[`${l}.down.b`])), p[`${l}.ln2.g`], p[`${l}.ln2.b`]);
  }
  return jaxCe(np.matmul(h, p["head.w"]).add(p["head.b"]), onehot);
}

const ADAM = { lr: ENCODER.lr, beta1: 0.9, beta2: 0.999, eps: 1e-8 };

// One jitted step: forward, backward, bias-corrected Adam (as the gpt-nano jax-js step).
const jaxEncoderStep = jit((p: JP, m: JP, v: JP, t: np.Array, ids: np.Array, onehot: np.Array) => {
  const [loss, g] = valueAndGrad(jaxEncoderLoss)(tree.ref(p), ids, onehot) as [np.Array, JP];
  return [...jaxAdam(ADAM, p, m, v, t, g), loss] as [JP, JP, JP, np.Array, np.Array];
});

/** jax-js's encoder from our weights: a timed run. */
export async function jaxEncoder(device: Device, s: SeqShape, mode: SeqMode): Promise<StepTiming> {
  return await jaxTimeSteps(s, mode, await encoderInit(device, s.seq), jaxEncoderStep);
}
