/**
 * The per-epoch chunk pool of progressive dispatch (spec §3.10, §8.1, §8.3, §8.4): each
 * rank reserves a contiguous span of batches; chunks come from reclaimed ranges first,
 * then the front of the rank's own span, then the tail of the largest other span.
 * Completion is accounted per rank; a dead rank's uncompleted chunks are forfeited to the
 * reclaimed queue; coverage is exported as uncovered ranges and a pool can be rebuilt from them.
 *
 * Internally everything is in batches relative to the pool start; chunks and coverage
 * are in pick positions (samples). The pool covers floor(samples / B) · B picks: the
 * partial tail batch is dropped.
 */

import { chunkSize, type ChunkSizeInput, finalWindowSplit, isFinalWindow } from "./chunk_size.ts";
import type { Range } from "./partition.ts";

/** One unit of dispatched work: picks `[offset, offset + size)` of the epoch's permutation. */
export interface Chunk {
  readonly id: number;
  readonly epoch: number;
  readonly rank: number;
  readonly offset: number;
  readonly size: number;
  readonly batches: number;
}

/** Coverage of one epoch in a checkpoint (`coverage.per_epoch[]` of `<stem>.meta.json`, keys verbatim). */
export interface EpochCoverage {
  epoch: number;
  /** Picks the pool covers (floor(P/B)·B of the slice). */
  total_samples: number;
  /** `[offset, size]` pick ranges not yet completed, ascending, merged. */
  uncovered_ranges: [number, number][];
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

interface Seg {
  start: number;
  end: number;
}

/**
 * @example
 * ```ts
 * import { ChunkPool } from "./chunk_pool.ts";
 * const pool = new ChunkPool({ epoch: 0, samples: 100, batchSize: 8, worldSize: 2 }); // 12 batches
 * const c = pool.takeChunk(4, 1)!; // { offset: 48, size: 32, ... }: the front of rank 1's span
 * pool.complete(1, c.id);
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
  #inFlight: Chunk[][];
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
    this.#dispatched = new Array(W).fill(0);
    this.#completed = new Array(W).fill(0);
    this.#spans = reserve(this.totalBatches, o.counts, this.#alive);
  }

  /**
   * A pool holding only the uncovered ranges of a checkpoint (resume, spec §8.3), staged
   * as reclaimed ranges; everything else counts as completed.
   * @throws {RangeError} When a range falls outside the pool or off batch boundaries.
   */
  static fromCoverage(cov: EpochCoverage, o: Omit<ChunkPoolOptions, "epoch" | "samples" | "counts">): ChunkPool {
    const pool = new ChunkPool({ ...o, epoch: cov.epoch, samples: cov.total_samples, counts: undefined });
    const B = pool.batchSize, T = pool.totalBatches;
    pool.#spans = pool.#spans.map(() => ({ start: T, end: T }));
    const segs = cov.uncovered_ranges.map(([offset, size]) => {
      const s = (offset - pool.start) / B, n = size / B;
      if (!Number.isInteger(s) || !Number.isInteger(n) || s < 0 || n < 0 || s + n > T) {
        throw new RangeError(
          `ChunkPool.fromCoverage: uncovered range [${offset}, ${size}] must lie on batch boundaries (B = ${B}) ` +
            `within [${pool.start}, ${pool.start + T * B})`,
        );
      }
      return { start: s, end: s + n };
    });
    pool.#reclaimed = merge(segs);
    let at = 0;
    for (const r of pool.#reclaimed) {
      if (r.start > at) pool.#done.push({ start: at, end: r.start });
      at = r.end;
    }
    if (at < T) pool.#done.push({ start: at, end: T });
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
  /** Drained and nothing in flight: the epoch can be aggregated. */
  isComplete(): boolean {
    return this.isDrained() && this.#inFlight.every((q) => q.length === 0);
  }
  isAlive(rank: number): boolean {
    return this.#alive[rank];
  }
  /** In-flight chunks of a rank, oldest first. */
  inFlight(rank: number): readonly Chunk[] {
    return [...this.#inFlight[rank]];
  }
  /** Batches dispatched to a rank and not rolled back or forfeited. */
  dispatched(rank: number): number {
    return this.#dispatched[rank];
  }
  /** Batches a rank completed. */
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
    this.#inFlight[rank].push(chunk);
    this.#dispatched[rank] += n;
    this.#windowTaken += n;
    return chunk;
  }

  /**
   * Size (rules 1–5 of spec §3.10) and take the rank's next chunk. Barrier-paced ranks hold
   * at most one outstanding chunk; when the remainder at the window's start (what is left plus
   * what other ranks hold in flight) is below Σc + W, the whole of what is left is planned as
   * the final window (replanned if deaths or rollbacks leave batches after it).
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
   * Mark a rank's chunk done (default: its oldest in flight).
   * @throws {RangeError} When the rank has no such chunk in flight.
   */
  complete(rank: number, id?: number): Chunk {
    const chunk = this.#remove("complete", rank, id ?? this.#inFlight[rank][0]?.id);
    const s = (chunk.offset - this.start) / this.batchSize;
    this.#done.push({ start: s, end: s + chunk.batches });
    this.#completed[rank] += chunk.batches;
    return chunk;
  }

  /**
   * Undo a dispatch whose send failed (default: the rank's newest chunk); its range is
   * served first to the next taker.
   * @throws {RangeError} When the rank has no such chunk in flight.
   */
  rollback(rank: number, id?: number): Chunk {
    const q = this.#inFlight[rank];
    const chunk = this.#remove("rollback", rank, id ?? q[q.length - 1]?.id);
    this.#dispatched[rank] -= chunk.batches;
    this.#windowTaken = Math.max(0, this.#windowTaken - chunk.batches);
    this.#reclaimed.unshift(this.#seg(chunk));
    if (this.#finalPlan) this.#finalPlan[rank] += chunk.batches;
    return chunk;
  }

  /**
   * A rank died: its in-flight chunks move to the reclaimed queue (served first to
   * survivors); the rest of its span stays stealable. Returns the forfeited chunks.
   */
  forfeit(rank: number): Chunk[] {
    this.#checkAlive("forfeit", rank);
    this.#alive[rank] = false;
    const lost = this.#inFlight[rank];
    this.#inFlight[rank] = [];
    for (const c of lost) {
      this.#reclaimed.push(this.#seg(c));
      this.#dispatched[rank] -= c.batches;
      this.#windowTaken = Math.max(0, this.#windowTaken - c.batches);
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

  /** Uncovered ranges: everything not completed, in flight included (redone on resume, never lost). */
  coverage(): EpochCoverage {
    const done = merge(this.#done);
    const uncovered: [number, number][] = [];
    let at = 0;
    for (const d of done) {
      if (d.start > at) uncovered.push([this.#pos(at), (d.start - at) * this.batchSize]);
      at = d.end;
    }
    if (at < this.totalBatches) uncovered.push([this.#pos(at), (this.totalBatches - at) * this.batchSize]);
    return { epoch: this.epoch, total_samples: this.totalBatches * this.batchSize, uncovered_ranges: uncovered };
  }

  #pos(batch: number): number {
    return this.start + batch * this.batchSize;
  }

  #seg(c: Chunk): Seg {
    const s = (c.offset - this.start) / this.batchSize;
    return { start: s, end: s + c.batches };
  }

  #remove(what: string, rank: number, id: number | undefined): Chunk {
    const q = this.#inFlight[rank] ?? [];
    const i = q.findIndex((c) => c.id === id);
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

function merge(segs: readonly Seg[]): Seg[] {
  const sorted = segs.filter((s) => s.end > s.start).map((s) => ({ ...s })).sort((a, b) => a.start - b.start);
  const out: Seg[] = [];
  for (const s of sorted) {
    const last = out[out.length - 1];
    if (last && s.start <= last.end) last.end = Math.max(last.end, s.end);
    else out.push(s);
  }
  return out;
}
