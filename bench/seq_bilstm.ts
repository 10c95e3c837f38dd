/**
 * `bilstm` of the sequence-model bench (issue 28): Embedding(85, 128) → a 2-layer
 * bidirectional LSTM of 128 per direction (256 out) → Linear(256, 85), next-character cross
 * entropy over every position, Adam 2e-3, no dropout.
 *   - ours: `LSTM(128, 128, { numLayers: 2, bidirectional: true, batchFirst: true })`.
 *   - TF.js: `tf.layers.bidirectional({ layer: tf.layers.lstm(…), mergeMode: "concat" })` twice
 *     (recurrent activation sigmoid, as PyTorch's), `tf.train.adam` minimize.
 *   - jax-js: no LSTM layer (and this bench's char-rnn writes none from its array API either).
 * Both start from our weights seeded with BILSTM_SEED (TF.js loads them, as char-rnn's), so
 * their first losses agree. The reverse direction sees the characters after each position,
 * the target among them: the loss falls fast, which is fine for a step's speed.
 */
import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-webgpu";
import { Adam, type Device, Embedding, Linear, LSTM, manualSeed, type Module, Sequential } from "../src/index.ts";
import {
  batchIds,
  type HostWeight,
  hostWeights,
  kerasLstm,
  type SeqMode,
  type SeqShape,
  type StepTiming,
  tfTimeSteps,
  V,
} from "./seq_common.ts";

/** Our bilstm's weights (and so TF.js's) come from the global stream seeded with this. */
export const BILSTM_SEED = 13;
/** Embedding width, LSTM hidden size per direction, stacked layers, Adam's learning rate. */
export const BILSTM = { embed: 128, hidden: 128, layers: 2, lr: 2e-3 } as const;

function bilstmModel(device: Device): Module {
  manualSeed(BILSTM_SEED);
  const { embed, hidden, layers } = BILSTM;
  return new Sequential(
    new Embedding(V, embed, { device }),
    new LSTM(embed, hidden, { numLayers: layers, bidirectional: true, batchFirst: true, device }),
    new Linear(2 * hidden, V, { device }),
  );
}

/** Our bilstm (seeded with BILSTM_SEED) and its `foreach` Adam. */
export function bilstmOurs(device: Device): { model: Module; opt: Adam } {
  const model = bilstmModel(device);
  return { model, opt: new Adam(model.parameters(), { lr: BILSTM.lr, foreach: true }) };
}

/**
 * Our seeded bilstm's weights in the order and layout of the TF.js model's `setWeights`:
 * embedding [V, 128]; per layer the forward LSTM's kernel, recurrent kernel and bias, then
 * the reverse one's (Keras' layout, bench/seq_common.ts's `kerasLstm`); dense kernel [256, V], bias [V].
 */
export async function bilstmKerasWeights(device: Device): Promise<HostWeight[]> {
  const w = await hostWeights(bilstmModel(device), "bilstmKerasWeights");
  const out = [w.get("0.weight")];
  for (let l = 0; l < BILSTM.layers; l++) {
    out.push(...kerasLstm(w, "1.", `_l${l}`), ...kerasLstm(w, "1.", `_l${l}_reverse`));
  }
  out.push(w.t("2.weight"), w.get("2.bias"));
  return out;
}

/** TF.js's bilstm from our weights: a timed run. */
export async function tfBilstm(device: Device, s: SeqShape, mode: SeqMode): Promise<StepTiming> {
  const B = s.batch, T = s.seq;
  const { x, y } = batchIds(B, T);
  // Zero initializers, then our seeded weights (Keras' orthogonal init is a QR decomposition in tf ops).
  const bi = () =>
    tf.layers.bidirectional({
      layer: tf.layers.lstm({
        units: BILSTM.hidden,
        returnSequences: true,
        recurrentActivation: "sigmoid",
        kernelInitializer: "zeros",
        recurrentInitializer: "zeros",
      }),
      mergeMode: "concat",
    });
  const model = tf.sequential({
    layers: [
      tf.layers.embedding({
        inputDim: V,
        outputDim: BILSTM.embed,
        inputLength: T,
        inputShape: [T],
        embeddingsInitializer: "zeros",
      }),
      ...Array.from({ length: BILSTM.layers }, bi),
      tf.layers.dense({ units: V, kernelInitializer: "zeros" }),
    ],
  });
  const init = (await bilstmKerasWeights(device)).map((w) => tf.tensor(w.values, w.shape));
  model.setWeights(init);
  tf.dispose(init);
  const xs = tf.tensor2d(x, [B, T], "int32");
  const onehot = tf.oneHot(tf.tensor1d(y, "int32"), V).toFloat();
  const opt = tf.train.adam(BILSTM.lr, 0.9, 0.999, 1e-8);
  const vars = model.trainableWeights.map((w) => (w as unknown as { val: tf.Variable }).val);
  const lossFn = () => {
    const logits = (model.apply(xs, { training: true }) as tf.Tensor).reshape([B * T, V]);
    return tf.losses.softmaxCrossEntropy(onehot, logits) as tf.Scalar;
  };
  try {
    return await tfTimeSteps(s, mode, opt, lossFn, vars);
  } finally {
    opt.dispose();
    tf.dispose([xs, onehot]);
    model.dispose();
  }
}
