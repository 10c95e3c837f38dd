/**
 * The trained model on the page: rebuilt on the page's own device from a program's model
 * factory, the run's consensus (`TrainedState`) loaded into it, and a forward pass for one
 * 28×28 input; the softmax of its ten logits is taken here, in f64 (ten numbers: a GPU
 * kernel would cost more than it computes).
 */
import { type Device, fromArray, type Module, noGrad, type Tensor, type TrainedState, Variable } from "../src/index.ts";

export class Predictor {
  readonly model: Module;
  readonly device: Device;

  /**
   * @throws {Error} When the state does not fit the model (names every mismatch).
   */
  constructor(device: Device, makeModel: (device: Device) => Module, state: TrainedState) {
    this.device = device;
    this.model = makeModel(device);
    const tensors = new Map<string, Tensor>();
    for (const [name, t] of [...state.params, ...state.buffers]) {
      tensors.set(name, fromArray(t.data, t.shape, { device }));
    }
    this.model.loadStateDict(tensors, { source: "the trained consensus" });
    this.model.eval();
    device.endStep();
  }

  /** Class probabilities (10, summing to 1) for one image of 784 values in [0, 1]. */
  async probabilities(image: Float32Array): Promise<Float64Array> {
    const x = fromArray(image, [1, 1, 28, 28], { device: this.device });
    const logits = noGrad(() => this.model.forward(new Variable(x)));
    try {
      return softmax(await logits.toArray());
    } finally {
      this.device.endStep();
    }
  }
}

/** Softmax in f64, shifted by the maximum so no exponent overflows; NaN logits give NaN. */
export function softmax(logits: ArrayLike<number>): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]);
  const out = new Float64Array(logits.length);
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += out[i] = Math.exp(logits[i] - max);
  for (let i = 0; i < out.length; i++) out[i] /= sum;
  return out;
}
