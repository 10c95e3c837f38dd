/**
 * Terminal progress of a training run: a live bar per epoch (samples, loss, samples/s,
 * ETA) on a TTY, plain lines otherwise; per epoch the eval accuracy, each rank's batch
 * share and throughput, the anchor and the reduces.
 */
import type { BatchEvent, ReduceEvent, RunEpochMetrics } from "../src/index.ts";

const enc = new TextEncoder();

export interface ProgressOptions {
  epochs: number;
  samplesPerEpoch: number;
  tty: boolean;
  write?: (s: string) => void;
  /** How an eval result reads on the epoch line; default test accuracy in percent. */
  formatEval?: (value: number) => string;
}

export class Progress {
  #o: ProgressOptions;
  #write: (s: string) => void;
  #epoch = 0;
  #samples = 0;
  #lossSum = 0;
  #lossN = 0;
  #t0 = performance.now();
  #lastDraw = 0;
  #reduces = 0;
  #anchor = 0;
  #evals = new Map<number, number>();
  #pending?: RunEpochMetrics;

  constructor(o: ProgressOptions) {
    this.#o = o;
    this.#write = o.write ?? ((s) => Deno.stdout.writeSync(enc.encode(s)));
  }

  batch(e: BatchEvent): void {
    if (e.epoch !== this.#epoch) this.#startEpoch(e.epoch);
    this.#samples += e.samples;
    if (Number.isFinite(e.loss) || Number.isNaN(e.loss)) {
      this.#lossSum += e.loss;
      this.#lossN++;
    }
    const now = performance.now();
    if (this.#o.tty && now - this.#lastDraw > 100) {
      this.#lastDraw = now;
      this.#write(`\r${this.#bar()}`);
    }
  }

  reduce(e: ReduceEvent): void {
    this.#reduces++;
    this.#anchor = e.anchor;
  }

  eval(epoch: number, acc: number): void {
    this.#evals.set(epoch, acc);
    // Eval of boundary k scores the model after epoch k-1: print with that epoch's line.
    if (this.#pending && this.#pending.epoch + 1 === epoch) this.#line(this.#pending);
  }

  #startEpoch(epoch: number): void {
    this.#epoch = epoch;
    this.#samples = 0;
    this.#lossSum = 0;
    this.#lossN = 0;
    this.#t0 = performance.now();
  }

  #bar(): string {
    const total = this.#o.samplesPerEpoch;
    const frac = Math.min(1, this.#samples / total);
    const width = 24;
    const fill = Math.round(frac * width);
    const secs = (performance.now() - this.#t0) / 1000;
    const rate = secs > 0 ? this.#samples / secs : 0;
    const eta = rate > 0 ? (total - this.#samples) / rate : 0;
    const loss = this.#lossN ? (this.#lossSum / this.#lossN).toFixed(4) : "—";
    return `epoch ${this.#epoch + 1}/${this.#o.epochs} [${"#".repeat(fill)}${".".repeat(width - fill)}] ` +
      `${this.#samples}/${total}  loss ${loss}  ${rate.toFixed(0)} samples/s  ETA ${eta.toFixed(0)} s   `;
  }

  /** An aggregated epoch: printed now, or once its eval arrives (it follows the epoch). */
  epoch(m: RunEpochMetrics): void {
    if (this.#pending) this.#line(this.#pending);
    this.#pending = m;
    if (this.#evals.has(m.epoch + 1)) this.#line(m);
  }

  #line(m: RunEpochMetrics): void {
    if (this.#pending === m) this.#pending = undefined;
    const acc = this.#evals.get(m.epoch + 1);
    const shares = m.perRankBatchShare.map((s) => `${(s * 100).toFixed(0)}%`).join("/");
    const thr = m.perRankThroughput.map((t) => `${(t * 1000).toFixed(0)}`).join("/");
    const total = m.perRankSamples.reduce((a, b) => a + b, 0);
    const line = `epoch ${m.epoch + 1}/${this.#o.epochs}  loss ${m.avgLoss.toFixed(4)}` +
      (acc !== undefined ? `  ${(this.#o.formatEval ?? ((a) => `test acc ${(a * 100).toFixed(2)}%`))(acc)}` : "") +
      `  ${(total / (m.epochMs / 1000)).toFixed(0)} samples/s  share ${shares}  rank samples/s ${thr}` +
      `  anchor ${m.anchor}  reduces ${m.reduces}`;
    this.#write(this.#o.tty ? `\r\x1b[2K${line}\n` : `${line}\n`);
  }

  /** Flush the last epoch's line. */
  done(): void {
    if (this.#pending) this.#line(this.#pending);
  }
}

/** Options of {@link sampleProgress}. */
export interface SampleProgressOptions {
  /** Redraw one counter in place (a terminal) instead of printing a line per tenth of the sample. */
  tty: boolean;
  write: (s: string) => void;
  /** Milliseconds; default performance.now. */
  now?: () => number;
}

/**
 * Progress of the end-of-run text sample (`sampleText`'s `onProgress`): each character re-runs
 * the model, so 100 characters of gpt-nano take minutes on a software adapter, which a silent
 * terminal hides. On a TTY a counter is redrawn (and cleared at the end); otherwise one line per
 * tenth of the sample: `sampling: 40/100 characters, 56 s, about 84 s left`.
 */
export function sampleProgress(o: SampleProgressOptions): (done: number, n: number) => void {
  const now = o.now ?? (() => performance.now());
  const t0 = now();
  return (done, n) => {
    const secs = (now() - t0) / 1000;
    const left = done > 0 ? (secs / done) * (n - done) : 0;
    const text = `sampling: ${done}/${n} characters, ${secs.toFixed(0)} s` +
      (done < n ? `, about ${left.toFixed(0)} s left` : "");
    if (o.tty) o.write(done < n ? `\r\x1b[2K${text}` : "\r\x1b[2K");
    else if (done === n || done % Math.max(1, Math.ceil(n / 10)) === 0) o.write(`${text}\n`);
  };
}
