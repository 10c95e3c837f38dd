/**
 * The per-epoch chunk pool of progressive dispatch: each
 * rank reserves a contiguous span of batches; chunks come from reclaimed ranges first,
 * then the front of the rank's own span, then the tail of the largest other span.
 * A chunk lives three states: in flight (dispatched), trained (its rank reported it) and
 * folded (a reduce put the rank's work on it into the consensus): only folded batches are
 * covered. A dead rank's in-flight and trained-but-unfolded batches go back to the
 * reclaimed queue, so work a lost rank took with it is trained again by the survivors;
 * coverage is exported as uncovered ranges and a pool can be rebuilt from them (the
 * translation is `pool_coverage.ts`).
 *
 * Internally everything is in batches relative to the pool start; chunks and coverage
 * are in pick positions (samples). The pool covers floor(samples / B) · B picks: the
 * partial tail batch is dropped.
 */

import { chunkSize, type ChunkSizeInput, finalWindowSplit, isFinalWindow } from "./chunk_size.ts";
import type { Range } from "./partition.ts";
import { coverageSegments, type EpochCoverage, type Seg, uncoveredRanges } from "./pool_coverage.ts";

// Checkpoints and the package import it from here, beside the pool that writes it.
export type { EpochCoverage };

/** One unit of dispatched work: picks `[offset, offset + size)` of the epoch's permutation. */
export interface Chunk {
  readonly id: number;
  readonly epoch: number;
  readonly rank: number;
  readonly offset: number;
  readonly size: number;
  readonly batches: number;
}

/** Options of a fresh pool. */
export interface ChunkPoolOptions {
  epoch: number;
  /** Picks in the epoch slice (P or P / epochSplits). */
  samples: number;
  batchSize: number;
  worldSize: number;
  /** First pick position of the slice; default 0. */
  start?: number;
  /** Reservation weights (ElChe's c); equal spans when absent. */
  counts?: readonly number[];
  alive?: readonly boolean[];
}

/** Sizing context for {@link ChunkPool.nextChunk}; the pool supplies rank, rem and alive. */
export type NextChunkContext = Omit<ChunkSizeInput, "rank" | "rem" | "alive">;

/** A chunk not yet wholly in the model, and how many of its leading batches a reduce folded. */
interface Open {
  chunk: Chunk;
  folded: number;
}

/**
 * @example
 * ```ts
 * import { ChunkPool } from "./chunk_pool.ts";
 * const pool = new ChunkPool({ epoch: 0, samples: 100, batchSize: 8, worldSize: 2 }); // 12 batches
 * const c = pool.takeChunk(4, 1)!; // { offset: 48, size: 32, ... }: the front of rank 1's span
 * pool.complete(1, c.id); // trained: covered once a reduce folds it
 * pool.fold(1, c.id, 4);
 * pool.coverage().uncovered_ranges; // [[0, 48]]
 * ```
 */
export class ChunkPool {
  readonly epoch: number;
  readonly batchSize: number;
  readonly worldSize: number;
  readonly start: number;
  /** Batches in the pool. */
  readonly totalBatches: number;
  #spans: Seg[];
  #reclaimed: Seg[] = [];
  /** Dispatched, not yet reported trained, oldest first. */
  #inFlight: Open[][];
  /** Trained, not yet wholly folded, oldest first. */
  #trained: Open[][];
  /** Folded batches: what the consensus holds (coverage). */
  #done: Seg[] = [];
  #dispatched: number[];
  #completed: number[];
  #alive: boolean[];
  #nextId = 0;
  #finalPlan: number[] | null = null;
  /** Batches taken (and not given back) since {@link beginWindow}: the window's remainder is rem + this. */
  #windowTaken = 0;

  constructor(o: ChunkPoolOptions) {
    if (!Number.isInteger(o.batchSize) || o.batchSize < 1) {
      throw new RangeError(`ChunkPool: batchSize must be an integer >= 1, got ${o.batchSize}`);
    }
    if (!Number.isInteger(o.samples) || o.samples < 0) {
      throw new RangeError(`ChunkPool: samples must be an integer >= 0, got ${o.samples}`);
    }
    if (!Number.isInteger(o.worldSize) || o.worldSize < 1) {
      throw new RangeError(`ChunkPool: worldSize must be an integer >= 1, got ${o.worldSize}`);
    }
    const W = o.worldSize;
    this.epoch = o.epoch;
    this.batchSize = o.batchSize;
    this.worldSize = W;
    this.start = o.start ?? 0;
    this.totalBatches = Math.floor(o.samples / o.batchSize);
    this.#alive = o.alive ? [...o.alive] : new Array(W).fill(true);
    if (this.#alive.length !== W || !this.#alive.some((a) => a)) {
      throw new RangeError(
        `ChunkPool: alive must list ${W} ranks with at least one alive, got [${this.#alive.join(", ")}]`,
      );
    }
    this.#inFlight = Array.from({ length: W }, () => []);
    this.#trained = Array.from({ length: W }, () => []);
    this.#dispatched = new Array(W).fill(0);
    this.#completed = new Array(W).fill(0);
    this.#spans = reserve(this.totalBatches, o.counts, this.#alive);
  }

  /**
   * A pool holding only the uncovered ranges of a checkpoint (resume), staged
   * as reclaimed ranges; everything else counts as completed.
   * @throws {RangeError} When a range falls outside the pool or off batch boundaries.
   */
  static fromCoverage(cov: EpochCoverage, o: Omit<ChunkPoolOptions, "epoch" | "samples" | "counts">): ChunkPool {
    const pool = new ChunkPool({ ...o, epoch: cov.epoch, samples: cov.total_samples, counts: undefined });
    const T = pool.totalBatches;
    pool.#spans = pool.#spans.map(() => ({ start: T, end: T }));
    const { uncovered, done } = coverageSegments(cov, pool);
    pool.#reclaimed = uncovered;
    pool.#done = done;
    return pool;
  }

  /** Batches not yet dispatched (span residues + reclaimed). */
  remaining(): number {
    return this.#spans.reduce((a, s) => a + s.end - s.start, 0) +
      this.#reclaimed.reduce((a, s) => a + s.end - s.start, 0);
  }
  /** Nothing left to dispatch. */
  isDrained(): boolean {
    return this.remaining() === 0;
  }
  /** Drained and nothing in flight: every batch is trained (some may still await their fold). */
  isTrained(): boolean {
    return this.isDrained() && this.#inFlight.every((q) => q.length === 0);
  }
  /** Every batch folded into the consensus: the epoch is covered. */
  isComplete(): boolean {
    return this.isTrained() && this.#trained.every((q) => q.length === 0);
  }
  isAlive(rank: number): boolean {
    return this.#alive[rank];
  }
  /** In-flight chunks of a rank, oldest first. */
  inFlight(rank: number): readonly Chunk[] {
    return this.#inFlight[rank].map((o) => o.chunk);
  }
  /** Batches a rank trained that no reduce has folded yet. */
  unfolded(rank: number): number {
    return this.#trained[rank].reduce((a, o) => a + o.chunk.batches - o.folded, 0);
  }
  /** Batches dispatched to a rank and not rolled back or forfeited. */
  dispatched(rank: number): number {
    return this.#dispatched[rank];
  }
  /** Batches a rank trained (reported complete) and did not forfeit unfolded. */
  completed(rank: number): number {
    return this.#completed[rank];
  }
  /** What is left of a rank's reserved span, in picks. */
  spanResidue(rank: number): Range {
    const s = this.#spans[rank];
    return { offset: this.#pos(s.start), size: (s.end - s.start) * this.batchSize };
  }

  /**
   * Take up to `batches` contiguous batches for `rank`: (1) the front of the oldest reclaimed
   * range, (2) the front of its own span, (3) the tail of the span with the largest residue
   * (lowest rank on ties). A chunk can be smaller than asked when its source is shorter.
   * @returns The chunk, or null when the pool is drained.
   * @throws {RangeError} When the rank is dead or `batches` is not an integer >= 1.
   */
  takeChunk(batches: number, rank: number): Chunk | null {
    this.#checkAlive("takeChunk", rank);
    if (!Number.isInteger(batches) || batches < 1) {
      throw new RangeError(`ChunkPool.takeChunk: batches must be an integer >= 1, got ${batches}`);
    }
    let seg: Seg;
    const own = this.#spans[rank];
    if (this.#reclaimed.length > 0) {
      const r = this.#reclaimed[0];
      seg = { start: r.start, end: Math.min(r.end, r.start + batches) };
      r.start = seg.end;
      if (r.start === r.end) this.#reclaimed.shift();
    } else if (own.end > own.start) {
      seg = { start: own.start, end: Math.min(own.end, own.start + batches) };
      own.start = seg.end;
    } else {
      let victim = -1;
      this.#spans.forEach((s, r) => {
        if (s.end > s.start && (victim < 0 || s.end - s.start > this.#spans[victim].end - this.#spans[victim].start)) {
          victim = r;
        }
      });
      if (victim < 0) return null;
      const v = this.#spans[victim];
      seg = { start: Math.max(v.start, v.end - batches), end: v.end };
      v.end = seg.start;
    }
    const n = seg.end - seg.start;
    const chunk: Chunk = {
      id: this.#nextId++,
      epoch: this.epoch,
      rank,
      offset: this.#pos(seg.start),
      size: n * this.batchSize,
      batches: n,
    };
    this.#inFlight[rank].push({ chunk, folded: 0 });
    this.#dispatched[rank] += n;
    this.#windowTaken += n;
    return chunk;
  }

  /**
   * Size (rules 1–5 of flodl's chunk sizing) and take the rank's next chunk. Barrier-paced
   * ranks hold at most one outstanding chunk; when the remainder at the window's start (what
   * is left plus what other ranks hold in flight) is below Σc + W, the whole of what is left
   * is planned as the final window (replanned if deaths or rollbacks leave batches after it).
   * @returns The chunk, or null when the rank must hold.
   */
  nextChunk(rank: number, ctx: NextChunkContext): Chunk | null {
    this.#checkAlive("nextChunk", rank);
    const barrier = ctx.policy !== "async";
    if (barrier && this.#inFlight[rank].length > 0) return null;
    const rem = this.remaining();
    if (rem === 0) return null;
    let size: number;
    if (barrier) {
      // Decide on the window's remainder as it stood when the window began, not on what is
      // left now: a rank that finished a short chunk asks again mid-window, after its peers
      // finished theirs. Planning the final window then gave shares to ranks that had met
      // their quota and would not be dispatched again before the reduce: the asking rank got
      // too little to meet its own, and the reduce never came (a hang seen in npm start).
      const windowRem = rem + this.#windowTaken;
      const plan = this.#finalPlan;
      const replan = plan === null ? isFinalWindow(windowRem, ctx.counts, this.#alive) : plan.every((x) => x === 0);
      if (replan) this.#finalPlan = finalWindowSplit(rem, ctx.counts, this.#alive);
    }
    if (barrier && this.#finalPlan) size = this.#finalPlan[rank];
    else size = chunkSize({ ...ctx, rank, rem, alive: this.#alive });
    if (size <= 0) return null;
    const chunk = this.takeChunk(size, rank);
    if (chunk && barrier && this.#finalPlan) this.#finalPlan[rank] -= chunk.batches;
    return chunk;
  }

  /** A reduce closed the window: the next chunks open a new one (see {@link nextChunk}). */
  beginWindow(): void {
    this.#windowTaken = 0;
  }

  /**
   * A rank reported its chunk trained (default: its oldest in flight). It counts as covered
   * only once {@link fold} says a reduce holds it. `trained` < the chunk's batches (a rank
   * stopped mid-chunk): the untrained tail is served first to the next taker.
   * @throws {RangeError} When the rank has no such chunk in flight, or `trained` is out of range.
   */
  complete(rank: number, id?: number, trained?: number): Chunk {
    const open = this.#remove("complete", rank, id ?? this.#inFlight[rank][0]?.chunk.id);
    const chunk = open.chunk, n = trained ?? chunk.batches;
    if (!Number.isInteger(n) || n < open.folded || n > chunk.batches) {
      throw new RangeError(`ChunkPool.complete: trained must be an integer in [${open.folded}, ${chunk.batches}], got ${trained}`);
    }
    if (n < chunk.batches) {
      const s = this.#seg(chunk);
      this.#giveBack(rank, { start: s.start + n, end: s.end }, true);
    }
    this.#completed[rank] += n;
    if (open.folded < n) this.#trained[rank].push({ chunk: { ...chunk, size: n * this.batchSize, batches: n }, folded: open.folded });
    return chunk;
  }

  /**
   * A reduce folded the next `batches` of a rank's chunk (trained or still in flight) into the
   * consensus: they are covered. A wholly folded trained chunk leaves the pool's books.
   * @throws {RangeError} When the rank has no such open chunk or `batches` exceeds its unfolded rest.
   */
  fold(rank: number, id: number, batches: number): void {
    const q = [this.#trained[rank], this.#inFlight[rank]].find((l) => l.some((o) => o.chunk.id === id));
    const open = q?.find((o) => o.chunk.id === id);
    if (!q || !open) throw new RangeError(`ChunkPool.fold: rank ${rank} has no open chunk ${id}`);
    if (!Number.isInteger(batches) || batches < 0 || open.folded + batches > open.chunk.batches) {
      throw new RangeError(
        `ChunkPool.fold: batches must be an integer in [0, ${open.chunk.batches - open.folded}] for chunk ${id}, got ${batches}`,
      );
    }
    const s = this.#seg(open.chunk);
    this.#done.push({ start: s.start + open.folded, end: s.start + open.folded + batches });
    open.folded += batches;
    if (q === this.#trained[rank] && open.folded === open.chunk.batches) q.splice(q.indexOf(open), 1);
  }

  /**
   * Undo a dispatch whose send failed (default: the rank's newest chunk); its range is
   * served first to the next taker.
   * @throws {RangeError} When the rank has no such chunk in flight.
   */
  rollback(rank: number, id?: number): Chunk {
    const q = this.#inFlight[rank];
    const { chunk } = this.#remove("rollback", rank, id ?? q[q.length - 1]?.chunk.id);
    this.#giveBack(rank, this.#seg(chunk), true);
    if (this.#finalPlan) this.#finalPlan[rank] += chunk.batches;
    return chunk;
  }

  /**
   * A rank died: what no reduce folded of its chunks, trained or in flight, moves to the
   * reclaimed queue (served first to survivors); the rest of its span stays stealable.
   * Returns the forfeited pieces (the unfolded rest of each chunk), oldest first.
   */
  forfeit(rank: number): Chunk[] {
    this.#checkAlive("forfeit", rank);
    this.#alive[rank] = false;
    const lost: Chunk[] = [];
    for (const [q, trained] of [[this.#trained[rank], true], [this.#inFlight[rank], false]] as const) {
      for (const { chunk, folded } of q.splice(0)) {
        if (!trained) this.#completed[rank] += folded; // trained as far as a snapshot took it
        if (folded === chunk.batches) continue;
        const rest = chunk.batches - folded;
        lost.push({ ...chunk, offset: chunk.offset + folded * this.batchSize, size: rest * this.batchSize, batches: rest });
        const s = this.#seg(chunk);
        this.#giveBack(rank, { start: s.start + folded, end: s.end }, false);
        if (trained) this.#completed[rank] -= rest;
      }
    }
    if (this.#finalPlan) this.#finalPlan[rank] = 0;
    return lost;
  }

  /**
   * What a rank's stager may prefetch: its own span residue, the reclaimed ranges, and the
   * last `windowBatches` of every other span (where a steal would land), in picks.
   */
  stageAdvisory(rank: number, windowBatches: number): Range[] {
    const out: Range[] = [];
    const add = (s: Seg) =>
      s.end > s.start && out.push({ offset: this.#pos(s.start), size: (s.end - s.start) * this.batchSize });
    this.#reclaimed.forEach(add);
    add(this.#spans[rank]);
    this.#spans.forEach((s, r) => r !== rank && add({ start: Math.max(s.start, s.end - windowBatches), end: s.end }));
    return out;
  }

  /** Uncovered ranges: everything no reduce folded, in flight and trained included (redone on resume, never lost). */
  coverage(): EpochCoverage {
    const uncovered = uncoveredRanges(this.#done, this);
    return { epoch: this.epoch, total_samples: this.totalBatches * this.batchSize, uncovered_ranges: uncovered };
  }

  #pos(batch: number): number {
    return this.start + batch * this.batchSize;
  }

  #seg(c: Chunk): Seg {
    const s = (c.offset - this.start) / this.batchSize;
    return { start: s, end: s + c.batches };
  }

  /** Batches that go back for the next takers (`first`: ahead of older reclaimed ranges). */
  #giveBack(rank: number, seg: Seg, first: boolean): void {
    const n = seg.end - seg.start;
    if (n <= 0) return;
    this.#dispatched[rank] -= n;
    this.#windowTaken = Math.max(0, this.#windowTaken - n);
    if (first) this.#reclaimed.unshift(seg);
    else this.#reclaimed.push(seg);
  }

  #remove(what: string, rank: number, id: number | undefined): Open {
    const q = this.#inFlight[rank] ?? [];
    const i = q.findIndex((o) => o.chunk.id === id);
    if (i < 0) {
      throw new RangeError(`ChunkPool.${what}: rank ${rank} has no chunk${id === undefined ? "" : ` ${id}`} in flight`);
    }
    return q.splice(i, 1)[0];
  }

  #checkAlive(what: string, rank: number): void {
    if (!Number.isInteger(rank) || rank < 0 || rank >= this.worldSize) {
      throw new RangeError(`ChunkPool.${what}: rank must be in [0, ${this.worldSize}), got ${rank}`);
    }
    if (!this.#alive[rank]) throw new RangeError(`ChunkPool.${what}: rank ${rank} is dead`);
  }
}

/** Reservation spans in rank order: T · w_r / Σw batches (floor), remainder +1 round-robin from rank 0. */
function reserve(T: number, counts: readonly number[] | undefined, alive: readonly boolean[]): Seg[] {
  let w = alive.map((a, r) => (a ? (counts ? Math.max(0, counts[r] ?? 0) : 1) : 0));
  if (!(w.reduce((a, b) => a + b, 0) > 0)) w = alive.map((a) => (a ? 1 : 0));
  const sum = w.reduce((a, b) => a + b, 0);
  const n = w.map((x) => (sum > 0 ? Math.floor((T * x) / sum) : 0));
  const takers = w.flatMap((x, r) => (x > 0 ? [r] : []));
  for (let left = T - n.reduce((a, b) => a + b, 0), i = 0; left > 0 && takers.length > 0; left--, i++) {
    n[takers[i % takers.length]] += 1;
  }
  let at = 0;
  return n.map((k) => {
    const s = { start: at, end: at + k };
    at += k;
    return s;
  });
}
