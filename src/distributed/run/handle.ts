import type { RunEpochMetrics } from "../coordinator/report/metrics.ts";
import type { EvalRecord, RunSink, TrainedState } from "../coordinator/report/observer.ts";

export type { EvalRecord, RunSink, TrainedState };

/**
 * A running training job (flodl's `DdpHandle`), returned by `run()` without blocking:
 * `join()` waits for the end and gives the consensus; metrics arrive per epoch.
 */
export class DdpHandle implements RunSink {
  #queue: RunEpochMetrics[] = [];
  #waiters: ((m: RunEpochMetrics | null) => void)[] = [];
  #done = false;
  #result: Promise<TrainedState>;
  #shutdown: () => void;
  #world: number;
  #devices: string[];
  /** Every eval result so far. */
  readonly evals: EvalRecord[] = [];
  /** Every epoch's metrics so far (the queue drains; this keeps them). */
  readonly history: RunEpochMetrics[] = [];

  #memory: () => Promise<({ liveBytes: number; pooledBytes: number; totalBytes: number; created: number } | null)[]>;

  /**
   * Made by the launch (`run()`), not by user code.
   * @param world Ranks of the run.
   * @param devices Each rank's adapter.
   * @param result Settles when training ends: the consensus, or the error that stopped it.
   * @param shutdown Asks the ranks to stop after their current batch.
   * @param memory Reads each alive rank's GPU memory (default: none).
   */
  constructor(
    world: number,
    devices: string[],
    result: Promise<TrainedState>,
    shutdown: () => void,
    memory: () => Promise<({ liveBytes: number; pooledBytes: number; totalBytes: number; created: number } | null)[]> = () =>
      Promise.resolve([]),
  ) {
    this.#memory = memory;
    this.#world = world;
    this.#devices = devices;
    this.#shutdown = shutdown;
    this.#result = result.finally(() => this.#end());
    this.#result.catch(() => {});
  }

  /** Coordinator side: an aggregated epoch. */
  metrics(m: RunEpochMetrics): void {
    this.history.push(m);
    const w = this.#waiters.shift();
    if (w) w(m);
    else this.#queue.push(m);
  }

  /** Coordinator side: an eval result. */
  evaluated(e: EvalRecord): void {
    this.evals.push(e);
  }

  #end(): void {
    this.#done = true;
    for (const w of this.#waiters.splice(0)) w(null);
  }

  /**
   * Wait for training to end. Resolves with the final consensus; rejects with the error
   * that stopped the run (a `RankLostError` names the rank and the cause).
   */
  join(): Promise<TrainedState> {
    return this.#result;
  }

  /** The next aggregated epoch's metrics; `null` once training is over and the queue is empty. */
  nextMetrics(): Promise<RunEpochMetrics | null> {
    const m = this.#queue.shift();
    if (m) return Promise.resolve(m);
    if (this.#done) return Promise.resolve(null);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Every queued epoch's metrics, without waiting. */
  pollMetrics(): RunEpochMetrics[] {
    return this.#queue.splice(0);
  }

  /** Iterate over epochs as they complete: `for await (const m of handle) ...`. */
  async *[Symbol.asyncIterator](): AsyncGenerator<RunEpochMetrics> {
    for (let m = await this.nextMetrics(); m; m = await this.nextMetrics()) yield m;
  }

  /** Cooperative cancel: ranks stop after their current batch; then the same as {@link join}. */
  shutdown(): Promise<TrainedState> {
    this.#shutdown();
    return this.#result;
  }

  /** Number of ranks. */
  worldSize(): number {
    return this.#world;
  }

  /** The adapter of each rank. */
  devices(): string[] {
    return [...this.#devices];
  }

  /** GPU memory of each alive rank's device (live + pooled bytes); a lost rank reads null. */
  memory(): Promise<({ liveBytes: number; pooledBytes: number; totalBytes: number; created: number } | null)[]> {
    return this.#memory();
  }
}
