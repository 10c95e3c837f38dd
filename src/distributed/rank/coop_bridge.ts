/**
 * The cooperative tier's rank side: where a rank runtime's `train(plan)` calls
 * meet the user-driven loop of `intoWorker()`. Runs wherever the rank runs (a worker, or
 * this thread on a single device).
 */
import type { Module } from "../../nn/mod.ts";
import type { ChunkPlan, ChunkReport } from "../protocol/messages.ts";
import type { RankRuntime } from "./rank_runtime.ts";

/** A plan waiting for the user's loop, with the train call's settlers. */
export interface Queued {
  plan: ChunkPlan;
  resolve: (r: ChunkReport) => void;
  reject: (e: unknown) => void;
}

/** Connects a rank runtime's `train(plan)` calls to a user-driven loop. */
export class CoopBridge<M extends Module> {
  #queue: Queued[] = [];
  #wait?: () => void;
  #closed = false;
  runtime?: RankRuntime<M>;

  /** The runtime hands each plan here instead of running trainFn. */
  submit(plan: ChunkPlan): Promise<ChunkReport> {
    return new Promise<ChunkReport>((resolve, reject) => {
      this.#queue.push({ plan, resolve, reject });
      this.#wake();
    });
  }

  /** No more plans will come. */
  close(): void {
    this.#closed = true;
    this.#wake();
  }

  #wake(): void {
    const w = this.#wait;
    this.#wait = undefined;
    w?.();
  }

  /** The next queued plan, or null once closed and drained. */
  async take(): Promise<Queued | null> {
    for (;;) {
      const q = this.#queue.shift();
      if (q) return q;
      if (this.#closed) return null;
      await new Promise<void>((r) => (this.#wait = r));
    }
  }
}
