/**
 * When a rank serves the coordinator's control calls (load, snapshot, adopt, collective,
 * evaluate, ...): at once while no chunk trains, else queued and served between the next
 * two batches (chunk_run.ts drains the queue after each step), so a reduce never waits for
 * a whole chunk and a call never runs in the middle of a step. Once the rank stops, every
 * call rejects.
 */

type Pending = { run: () => Promise<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void };

/** One rank's control calls, in arrival order, never overlapping a training step. */
export class ControlQueue {
  #pending: Pending[] = [];
  #busy = false;
  #stopped = false;

  /** @param who Names the rank in errors (`rank 2`). */
  constructor(readonly who: () => string) {}

  /** The rank stopped: calls reject from now on. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /**
   * A chunk starts training: calls queue until {@link drain} or {@link end}.
   * @throws {Error} When a chunk is already running.
   */
  begin(): void {
    if (this.#busy) throw new Error(`${this.who()}: a chunk is already running`);
    this.#busy = true;
  }

  /** The chunk ended: serve the calls that queued during it. */
  end(): Promise<void> {
    this.#busy = false;
    return this.drain();
  }

  /** The rank stops: calls reject from now on (queued ones are served by the chunk's end). */
  stop(): void {
    this.#stopped = true;
  }

  /** Run `fn` now when no chunk trains, else between the next two batches. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#stopped) return Promise.reject(new Error(`${this.who()}: stopped`));
    if (!this.#busy) return fn();
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ run: fn, resolve: resolve as (v: unknown) => void, reject });
    });
  }

  /** Serve every queued call, in order (between two batches, or at the chunk's end). */
  async drain(): Promise<void> {
    while (this.#pending.length) {
      const c = this.#pending.shift()!;
      try {
        c.resolve(await c.run());
      } catch (e) {
        c.reject(e);
      }
    }
  }
}
