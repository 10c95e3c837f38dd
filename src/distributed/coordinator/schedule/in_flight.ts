/**
 * The work each rank holds, as the coordinator counts it: the chunk in flight, the batches
 * of the current window, and the chunks no reduce has wholly folded into the consensus.
 * A sample counts as trained only once a reduce folds it (`fold`); what a lost rank held
 * unfolded goes back to the survivors (`reclaim`).
 */
import type { ChunkReport } from "../../protocol/messages.ts";
import type { Chunk } from "./chunk_pool.ts";
import type { WorkSource } from "./work_source.ts";

/** A chunk on its way to a rank or being trained there. */
export interface Flight {
  chunk: Chunk;
  source: WorkSource;
  /** performance.now() when the chunk was sent. */
  since: number;
}

/**
 * A chunk a rank holds work on that no reduce has wholly folded into the consensus. A rank
 * trains its chunks in the order they were sent and each frame counts the batches since
 * the last one folded, so a reduce's `steps[r]` folds the next that many batches of this
 * list, across chunks and epochs.
 */
interface Unfolded {
  chunk: Chunk;
  source: WorkSource;
  /** Batches the rank reported trained (its reply); undefined while in flight. */
  trained?: number;
  /** Leading batches a reduce folded. */
  folded: number;
}

/** Per rank: the chunk in flight, the window's batch count, and the unfolded chunks. */
export class InFlight {
  readonly #flight: (Flight | null)[];
  /** Batches each rank trained in this window (what its next frame carries). */
  readonly #window: number[];
  /**
   * NOTE: batch events and chunk replies reach this thread on different message channels
   * (a worker's sink is a comlink proxy of its own port), so a chunk's reply may land
   * before its last batch events. Counting only events, a barrier-paced dispatch then saw a
   * rank short of its window quota and gave it a second chunk in the same window, a timing
   * dependent schedule. So a reply completes the chunk's count: `#seen` counts the events of
   * the chunk in flight, the reply adds what is missing to the window and owes it
   * (`#owed`), and the late events pay the debt instead of counting twice.
   */
  readonly #seen: number[];
  readonly #owed: number[];
  /** Per rank, its chunks not yet wholly in the consensus, oldest first. */
  readonly #unfolded: Unfolded[][];

  /** @param batchSize Samples per batch (the fold reports samples). */
  constructor(world: number, readonly batchSize: number) {
    this.#flight = new Array(world).fill(null);
    this.#window = new Array(world).fill(0);
    this.#seen = new Array(world).fill(0);
    this.#owed = new Array(world).fill(0);
    this.#unfolded = Array.from({ length: world }, () => []);
  }

  /** The chunk rank `r` is training, or null. */
  flight(r: number): Flight | null {
    return this.#flight[r];
  }

  /** No rank has a chunk in flight. */
  get idle(): boolean {
    return this.#flight.every((f) => f === null);
  }

  /** Batches rank `r` trained in this window. */
  window(r: number): number {
    return this.#window[r];
  }

  /** Every rank's window count (what a reduce folds). */
  windows(): number[] {
    return [...this.#window];
  }

  /** A chunk went to rank `r`. */
  sent(r: number, chunk: Chunk, source: WorkSource): void {
    this.#flight[r] = { chunk, source, since: performance.now() };
    this.#unfolded[r].push({ chunk, source, folded: 0 });
  }

  /** One batch event of rank `r`. */
  batch(r: number): void {
    if (this.#owed[r] > 0) this.#owed[r]--; // counted when its chunk's reply came first
    else {
      this.#window[r]++;
      this.#seen[r]++;
    }
  }

  /** Rank `r` answered `chunk`: its count is complete and its source learns what it trained. */
  completed(r: number, chunk: Chunk, source: WorkSource, report: ChunkReport): void {
    this.#flight[r] = null;
    const missing = Math.max(0, report.batches - this.#seen[r]);
    this.#window[r] += missing;
    this.#owed[r] += missing;
    this.#seen[r] = 0;
    const trained = Math.min(chunk.batches, Math.max(0, report.batches));
    source.complete(r, chunk.id, trained);
    const open = this.#unfolded[r].find((u) => u.chunk === chunk);
    if (open) {
      open.trained = Math.max(trained, open.folded);
      if (open.folded === open.trained) this.#unfolded[r].splice(this.#unfolded[r].indexOf(open), 1);
    }
  }

  /**
   * A reduce put `steps[r]` more batches of each rank's work into the consensus: the next
   * that many of its unfolded chunks' batches, oldest first. Only now do they count as
   * trained: each source folds them and `folded(epoch, rank, offset, samples)` hears of it.
   */
  fold(steps: readonly number[], folded: (epoch: number, rank: number, offset: number, samples: number) => void): void {
    const B = this.batchSize;
    steps.forEach((k, r) => {
      const q = this.#unfolded[r];
      while (k > 0 && q.length > 0) {
        const u = q[0];
        const t = Math.min(k, (u.trained ?? u.chunk.batches) - u.folded);
        if (t <= 0) break; // a count beyond what was sent: nothing of ours to fold
        u.source.fold(r, u.chunk.id, t);
        folded(u.chunk.epoch, r, u.chunk.offset + u.folded * B, t * B);
        u.folded += t;
        k -= t;
        if (u.folded === (u.trained ?? u.chunk.batches)) {
          if (u.trained !== undefined) q.shift();
          else break; // in flight, every batch folded: its reply settles it
        }
      }
    });
  }

  /** A reduce cycle took `steps[r]` of each window (folded or not: a zero-mass cycle folds nothing). */
  windowDone(steps: readonly number[]): void {
    steps.forEach((k, r) => (this.#window[r] = Math.max(0, this.#window[r] - k)));
  }

  /** Rank `r` is gone or starts afresh: nothing in flight, an empty window. */
  reset(r: number): void {
    this.#flight[r] = null;
    this.#window[r] = 0;
    this.#seen[r] = 0;
    this.#owed[r] = 0;
  }

  /**
   * Rank `r` was lost: forget its unfolded chunks, reporting the batches it trained that no
   * reduce folded (`discarded(epoch, samples)`); its sources serve them to the survivors.
   */
  reclaim(r: number, discarded: (epoch: number, batches: number) => void): void {
    for (const u of this.#unfolded[r]) {
      const wasted = (u.trained ?? 0) - u.folded;
      if (wasted > 0) discarded(u.chunk.epoch, wasted * this.batchSize);
    }
    this.#unfolded[r] = [];
  }
}
