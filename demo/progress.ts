/**
 * The status line while a run trains. Before a rank's first batch returns it is compiling
 * its pipelines (about a minute on a software adapter), and until the first epoch ends the
 * page used to say only "epoch 0/2…": this line counts seconds, each rank's batches and
 * the samples per second, so a slow start never looks like a hang.
 */

/** Seconds of batches the samples/s rate looks back over. */
const RATE_WINDOW_MS = 5000;

export class RunProgress {
  readonly #batches: number[];
  readonly #recent: { t: number; samples: number }[] = [];
  readonly #epochs: number;
  readonly #t0: number;
  #epochsDone = 0;
  #loss: number | undefined;
  #first: number | undefined;

  /** `t0`: when the ranks were started (ms, the clock later calls pass). */
  constructor(ranks: number, epochs: number, t0: number) {
    this.#batches = new Array(ranks).fill(0);
    this.#epochs = epochs;
    this.#t0 = t0;
  }

  /** A batch of `samples` from `rank`, seen at `t`. */
  batch(rank: number, samples: number, t: number): void {
    this.#batches[rank] = (this.#batches[rank] ?? 0) + 1;
    this.#first ??= t;
    this.#recent.push({ t, samples });
    while (this.#recent.length && this.#recent[0].t < t - RATE_WINDOW_MS) this.#recent.shift();
  }

  /** `done` epochs are complete, the last with consensus loss `loss`. */
  epoch(done: number, loss: number): void {
    this.#epochsDone = done;
    this.#loss = loss;
  }

  /** Samples per second over the last few seconds of batches (since the first batch when shorter), or undefined. */
  rate(t: number): number | undefined {
    if (this.#first === undefined) return undefined;
    const span = Math.min(RATE_WINDOW_MS, t - this.#first);
    if (span <= 0) return undefined;
    const samples = this.#recent.filter((b) => b.t >= t - RATE_WINDOW_MS).reduce((a, b) => a + b.samples, 0);
    return (samples / span) * 1000;
  }

  /** The status line at time `t`. */
  text(t: number): string {
    const secs = `${Math.max(0, (t - this.#t0) / 1000).toFixed(0)} s`;
    const n = this.#batches.length;
    const waiting = this.#batches.flatMap((b, r) => (b === 0 ? [r] : []));
    if (waiting.length === n) {
      return `Warming up: ${n === 1 ? "the rank compiles its" : `${n} ranks compile their`} GPU pipelines ` +
        `(the first batch; a minute or more on a software adapter)… ${secs}`;
    }
    const epoch = Math.min(this.#epochsDone + 1, this.#epochs);
    const counts = this.#batches.map((b, r) => `rank ${r} ${b}`).join(", ");
    const rate = this.rate(t);
    const parts = [
      `Epoch ${epoch}/${this.#epochs}`,
      `batches: ${counts}`,
      rate === undefined ? undefined : `${rate.toFixed(0)} samples/s`,
      this.#loss === undefined ? undefined : `loss ${this.#loss.toFixed(4)}`,
      waiting.length ? `still compiling: rank ${waiting.join(", ")}` : undefined,
      secs,
    ];
    return parts.filter((p) => p !== undefined).join(" · ");
  }
}
