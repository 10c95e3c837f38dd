/**
 * Text from a character model on the page's own device: the consensus of the latest reduce
 * (parameters flattened in `namedParameters()` order, as the trainer's frames are) or the
 * final trained state is loaded into a copy of the model, which continues a prompt
 * (examples/sample.ts). Runs on the page only.
 */
import { type CharVocab, type Device, fromArray, type Module, type Tensor, type TrainedState } from "../src/index.ts";
import { sampleText } from "../examples/sample.ts";

export class TextSampler {
  readonly model: Module;
  readonly device: Device;
  readonly vocab: CharVocab;

  constructor(device: Device, makeModel: (device: Device) => Module, vocab: CharVocab) {
    this.device = device;
    this.model = makeModel(device);
    this.vocab = vocab;
  }

  /**
   * Load a consensus frame (f32, parameters in `namedParameters()` order).
   * @throws {RangeError} When its length is not the model's parameter count.
   */
  loadFlat(params: Float32Array): void {
    const list = this.model.parameters();
    const total = list.reduce((a, p) => a + p.data.numel, 0);
    if (params.length !== total) {
      throw new RangeError(`TextSampler: the consensus has ${params.length} values, the model ${total} parameters`);
    }
    let at = 0;
    for (const p of list) {
      p.data.write(params.subarray(at, at + p.data.numel));
      at += p.data.numel;
    }
  }

  /** Load the run's final state (names checked by the model). */
  loadState(state: TrainedState): void {
    const tensors = new Map<string, Tensor>();
    for (const [name, t] of [...state.params, ...state.buffers]) tensors.set(name, fromArray(t.data, t.shape, { device: this.device }));
    this.model.loadStateDict(tensors, { source: "the trained consensus" });
    this.device.endStep();
  }

  /** `n` characters continuing `prompt` (temperature 0.8). */
  sample(prompt: string, n: number): Promise<string> {
    return sampleText(this.model, this.vocab, prompt, n, 0.8);
  }
}
