/**
 * Text from a character model (char-rnn, gpt-nano of the model zoo, src/zoo/): the demo page's
 * live samples and `npm start`'s end-of-run sample use this.
 */
import { type CharVocab, fromArray, type Module, noGrad, Variable } from "../src/index.ts";

/** Options of {@link sampleText}. */
export interface SampleOptions {
  /** Characters of context fed back each step (the last ones); default 128, gpt-nano's maxLen. */
  contextLen?: number;
  /** Uniform numbers in [0, 1) for the draws; default Math.random. Pass a seeded one for repeatable text. */
  random?: () => number;
  /**
   * Called after each character with how many are drawn so far and `n`: each one re-runs the
   * model, so a long sample on a software adapter takes minutes (gpt-nano on lavapipe: about
   * 1.5 s a character) and a caller shows progress with this.
   */
  onProgress?: (done: number, n: number) => void;
}

/**
 * Continue `prompt` by `n` characters drawn one at a time from `model`'s next-character
 * distribution softmax(logits / temperature) at the last position, in eval mode, without the
 * tape (each step re-runs the model on the last `contextLen` characters: simple, not fast).
 * @param model Ids i32 [1, T] → logits [1, T, vocab.itos.length].
 * @param prompt Start text; every character must be in `vocab`; "" starts from `vocab.itos[0]`.
 * @param temperature > 0: below 1 sharper, above 1 flatter; near 0 is greedy.
 * @returns The `n` new characters (without the prompt).
 * @throws {RangeError} For a prompt character outside the vocabulary, n not an integer >= 0 or
 *   temperature <= 0.
 * @example
 * ```ts ignore
 * const { vocab } = await loadBrown();
 * console.log("The " + await sampleText(model, vocab, "The ", 200, 0.8));
 * ```
 */
export async function sampleText(
  model: Module,
  vocab: CharVocab,
  prompt: string,
  n: number,
  temperature: number,
  options: SampleOptions = {},
): Promise<string> {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`sampleText: n must be an integer >= 0, got ${n}`);
  if (!(temperature > 0)) throw new RangeError(`sampleText: temperature must be > 0, got ${temperature}`);
  const contextLen = options.contextLen ?? 128, random = options.random ?? Math.random;
  const ids = prompt === "" ? [0] : Array.from(vocab.encode(prompt, "sampleText prompt"));
  const device = model.device();
  const wasTraining = model.training;
  model.eval();
  let out = "";
  try {
    for (let k = 0; k < n; k++) {
      const ctx = ids.slice(-contextLen);
      const x = fromArray(Int32Array.from(ctx), [1, ctx.length], { device });
      const logits = noGrad(() => model.forward(new Variable(x)));
      const V = logits.shape[2];
      const last = await logits.data.reshape([ctx.length, V]).toArray();
      device.endStep();
      const row = Array.from(last.subarray((ctx.length - 1) * V, ctx.length * V) as ArrayLike<number>);
      const next = draw(row, temperature, random());
      ids.push(next);
      out += vocab.itos[next];
      options.onProgress?.(k + 1, n);
    }
  } finally {
    model.train(wasTraining);
  }
  return out;
}

/** Index drawn from softmax(logits / t) by inverse CDF at u ∈ [0, 1) (max subtracted first, so exp never overflows). */
export function draw(logits: readonly number[], t: number, u: number): number {
  const m = Math.max(...logits);
  const w = logits.map((z) => Math.exp((z - m) / t));
  const total = w.reduce((a, b) => a + b, 0);
  let acc = 0;
  for (let i = 0; i < w.length; i++) {
    acc += w[i] / total;
    if (u < acc) return i;
  }
  return w.length - 1;
}
