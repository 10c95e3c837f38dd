/**
 * The cooperative tier: the user writes the loop body, the controller keeps
 * authority over cadence, partitioning, reduces, eval and callbacks. The same chunk
 * machinery as `run()` (ChunkRun) serves both, so the trained model matches.
 *
 * Where the loop runs: with one rank, in this thread; with several, inside each rank
 * worker (it re-runs the entry module, whose `intoWorker()` returns the rank's worker),
 * while the coordinator's `intoWorker()` returns a worker whose `nextPlan()` resolves
 * `null` when training is over.
 */
import type { Variable } from "../../autograd/mod.ts";
import type { Module } from "../../nn/mod.ts";
import type { Tensor } from "../../tensor/mod.ts";
import type { BuilderState } from "./builder_state.ts";
import { CoopBridge, type Queued } from "../rank/coop_bridge.ts";
import type { ChunkRun } from "../rank/chunk_run.ts";
import type { DdpHandle, EvalRecord, TrainedState } from "./handle.ts";
import { launch } from "./launch.ts";
import type { EpochMetrics } from "../coordinator/report/metrics.ts";
import type { ChunkPlan } from "../protocol/messages.ts";

/** Result of {@link CoopWorker.step}. */
export interface StepOutcome {
  /** The controller is shutting down: leave the loop, then call `finish()`. */
  shutdown: boolean;
}

/**
 * The user-driven worker. Loop shape:
 * ```ts ignore
 * const w = await builder.intoWorker();
 * for (let plan = await w.nextPlan(); plan; plan = await w.nextPlan()) {
 *   for (let batch = await w.nextBatch(); batch; batch = await w.nextBatch()) {
 *     const loss = myForward(w.model(), batch);
 *     loss.backward();
 *     if ((await w.step(loss)).shutdown) break;
 *   }
 * }
 * const state = await w.finish();
 * ```
 */
export class CoopWorker<M extends Module> {
  #bridge?: CoopBridge<M>;
  #handle?: DdpHandle;
  #current?: { run: ChunkRun; q: Queued };
  #shutdown = false;
  #metrics: EpochMetrics[] = [];
  #latest?: EpochMetrics;
  #evals = 0;

  /**
   * Made by `intoWorker()`: `bridge` is undefined on the coordinator of a multi-rank run (the
   * loops run in the ranks), `handle` inside a rank worker.
   */
  constructor(bridge: CoopBridge<M> | undefined, handle: DdpHandle | undefined) {
    this.#bridge = bridge;
    this.#handle = handle;
  }

  /** The next unit of work (one chunk; `plan.epoch` repeats across chunks), or null when training is over. */
  async nextPlan(): Promise<ChunkPlan | null> {
    await this.#closeCurrent();
    if (!this.#bridge) {
      // Coordinator of a multi-rank run: the loops run in the ranks.
      await this.#handle!.join().catch(() => {});
      return null;
    }
    const q = await this.#bridge.take();
    if (!q) return null;
    try {
      const run = await this.#bridge.runtime!.begin(q.plan);
      this.#current = { run, q };
    } catch (e) {
      q.reject(e);
      throw e;
    }
    return q.plan;
  }

  /** The next batch of the current plan on the device, or null at its end. */
  async nextBatch(): Promise<Tensor[] | null> {
    if (!this.#current) return null;
    return await this.#current.run.nextBatch();
  }

  /** The rank's model. */
  model(): M {
    const m = this.#bridge?.runtime?.model;
    if (!m) throw new Error("CoopWorker.model: this worker is the coordinator of a multi-rank run; the model lives in the ranks");
    return m;
  }

  /** The framework tail of a step after your `loss.backward()`: clip, LR, optimizer, counters, control. */
  async step(loss: Variable): Promise<StepOutcome> {
    if (!this.#current) throw new Error("CoopWorker.step: no plan is running (call nextPlan() and nextBatch() first)");
    await this.#current.run.step(loss);
    this.#drainMetrics();
    return { shutdown: this.#shutdown };
  }

  async #closeCurrent(): Promise<void> {
    const c = this.#current;
    if (!c) return;
    this.#current = undefined;
    try {
      const report = await c.run.finish();
      await this.#bridge!.runtime!.end();
      c.q.resolve(report);
    } catch (e) {
      c.q.reject(e);
      throw e;
    }
  }

  #drainMetrics(): void {
    if (!this.#handle) return;
    for (const m of this.#handle.pollMetrics()) {
      this.#metrics.push(m);
      this.#latest = m;
    }
  }

  /** The latest aggregated epoch's metrics (coordinator-side view; single device and coordinator only). */
  epochMetrics(): EpochMetrics | undefined {
    this.#drainMetrics();
    return this.#latest;
  }

  /** Every epoch's metrics since the last call, without waiting. */
  pollMetrics(): EpochMetrics[] {
    this.#drainMetrics();
    return this.#metrics.splice(0);
  }

  /** Eval results since the last call (the final eval arrives during the last `nextPlan`). */
  pollEval(): EvalRecord[] {
    const all = this.#handle?.evals ?? [];
    const out = all.slice(this.#evals);
    this.#evals = all.length;
    return out;
  }

  /** Ask the controller to stop after this step (cooperative cancel). */
  requestShutdown(): void {
    this.#shutdown = true;
    void this.#handle?.shutdown();
  }

  /** Wait for the end of training and return the consensus (coordinator / single device). */
  async finish(): Promise<TrainedState | null> {
    await this.#closeCurrent();
    return this.#handle ? await this.#handle.join() : null;
  }
}

/** `intoWorker()` on the coordinator (or the only process of a single-device run). */
export async function intoWorker<M extends Module>(state: BuilderState<M>): Promise<CoopWorker<M>> {
  const bridge = new CoopBridge<M>();
  state.coop = bridge;
  const handle = await launch(state);
  if (handle.worldSize() > 1) {
    state.coop = undefined;
    return new CoopWorker<M>(undefined, handle);
  }
  handle.join().then(() => bridge.close(), () => bridge.close());
  return new CoopWorker<M>(bridge, handle);
}

/** `intoWorker()` inside a rank worker: the loop that serves the coordinator's plans. */
export function rankWorker<M extends Module>(state: BuilderState<M>): CoopWorker<M> {
  const bridge = new CoopBridge<M>();
  state.coop = bridge;
  return new CoopWorker<M>(bridge, undefined);
}
