/**
 * Where a rank's next batches come from in one epoch: the progressive chunk pool
 * (Cadence/Async default) or static per-rank partitions (Sync default, or
 * `progressiveDispatch(false)`). The coordinator sees both through one interface.
 */
import { type Chunk, ChunkPool, type EpochCoverage, type NextChunkContext } from "./chunk_pool.ts";
import { planPartitions, type Range } from "./partition.ts";
import type { ApplyPolicy, ResolvedRunConfig } from "../control/config.ts";
import type { ElChe } from "../control/elche.ts";

/**
 * One epoch's dispatchable work. A chunk is covered only once a reduce folded the rank's work
 * on it into the consensus: `complete` says the rank trained it, `fold` that a reduce holds
 * (a prefix of) it, and `forfeit` gives back whatever a lost rank trained that no reduce took.
 */
export interface WorkSource {
  readonly epoch: number;
  /** The rank's next chunk, or null when it must hold (or has nothing left). */
  next(rank: number, ctx: NextChunkContext): Chunk | null;
  /** The rank trained `trained` batches of the chunk (its reply); an untrained tail goes back. */
  complete(rank: number, id: number, trained: number): void;
  /** A reduce folded the next `batches` of the rank's chunk (trained or in flight). */
  fold(rank: number, id: number, batches: number): void;
  /** True when this rank can take nothing more from this epoch (or is no member of it). */
  exhaustedFor(rank: number): boolean;
  /** Every batch trained: nothing left to dispatch or in flight (folds may be pending). */
  isTrained(): boolean;
  /** Every batch folded into the consensus. */
  isComplete(): boolean;
  /** A rank died: what it had not trained, or trained without a reduce folding it, goes back for survivors. */
  forfeit(rank: number): void;
  /** A reduce closed the window; the next chunks belong to a new one. */
  beginWindow(): void;
  /** Ranges not yet completed (in flight included: redone on resume, never lost). */
  coverage(): EpochCoverage;
}

/** Progressive dispatch: the chunk pool. */
export class PoolSource implements WorkSource {
  readonly pool: ChunkPool;
  readonly epoch: number;
  constructor(pool: ChunkPool) {
    this.pool = pool;
    this.epoch = pool.epoch;
  }
  /** A fresh pool over the epoch. */
  static fresh(epoch: number, samples: number, batchSize: number, worldSize: number, counts: readonly number[], alive: readonly boolean[]): PoolSource {
    return new PoolSource(new ChunkPool({ epoch, samples, batchSize, worldSize, counts, alive }));
  }
  /** A pool holding only a checkpoint's uncovered ranges (resume). */
  static resumed(cov: EpochCoverage, batchSize: number, worldSize: number, alive: readonly boolean[]): PoolSource {
    return new PoolSource(ChunkPool.fromCoverage(cov, { batchSize, worldSize, alive }));
  }
  coverage(): EpochCoverage {
    return this.pool.coverage();
  }
  next(rank: number, ctx: NextChunkContext): Chunk | null {
    return this.pool.nextChunk(rank, ctx);
  }
  complete(rank: number, id: number, trained: number): void {
    this.pool.complete(rank, id, trained);
  }
  fold(rank: number, id: number, batches: number): void {
    this.pool.fold(rank, id, batches);
  }
  exhaustedFor(rank: number): boolean {
    // A rank admitted after this pool was planned (elastic, async streaming ahead) is no member of it.
    return this.pool.isDrained() || !this.pool.isAlive(rank);
  }
  isTrained(): boolean {
    return this.pool.isTrained();
  }
  isComplete(): boolean {
    return this.pool.isComplete();
  }
  forfeit(rank: number): void {
    if (this.pool.isAlive(rank)) this.pool.forfeit(rank);
  }
  beginWindow(): void {
    this.pool.beginWindow();
  }
}

interface Segment {
  offset: number;
  batches: number;
}

/** A chunk not wholly folded yet, and how many of its leading batches a reduce folded. */
interface Open {
  chunk: Chunk;
  folded: number;
}

/**
 * Static partitions: each rank walks its own contiguous share (equal split, partition
 * ratios, or proportional to speed), in windows of `c[r] - n_r` batches; the partial
 * tail batch of each share is dropped. A dead rank's remaining share and its unfinished
 * chunks go to the survivors, round robin (flodl's ExtendPartition).
 */
export class PartitionSource implements WorkSource {
  #queues: Segment[][];
  #inFlight: Open[][];
  #trained: Open[][];
  #alive: boolean[];
  #nextId = 0;
  #all: Segment[];
  #done: Segment[] = [];
  constructor(
    readonly epoch: number,
    readonly batchSize: number,
    queues: Segment[][],
    alive: readonly boolean[],
  ) {
    this.#alive = [...alive];
    this.#queues = queues;
    this.#inFlight = queues.map(() => []);
    this.#trained = queues.map(() => []);
    this.#all = queues.flat().map((q) => ({ ...q }));
  }

  /** Each alive rank's share of the epoch (equal, by partition ratios, or by speed). */
  static plan(
    epoch: number,
    samples: number,
    batchSize: number,
    policy: ApplyPolicy,
    worldSize: number,
    alive: readonly boolean[],
    partitionRatios?: readonly number[],
    msPerBatch?: readonly number[],
  ): PartitionSource {
    const ranges = planPartitions({ policy, worldSize, total: samples, partitionRatios, msPerBatch, alive });
    const queues = ranges.map((r: Range) => {
      const batches = Math.floor(r.size / batchSize);
      return batches > 0 ? [{ offset: r.offset, batches }] : [];
    });
    return new PartitionSource(epoch, batchSize, queues, alive);
  }

  /** A checkpoint's uncovered ranges, dealt round robin to the alive ranks (resume). */
  static resumed(cov: EpochCoverage, batchSize: number, worldSize: number, alive: readonly boolean[]): PartitionSource {
    const heirs = alive.flatMap((a, r) => (a ? [r] : []));
    const queues: Segment[][] = Array.from({ length: worldSize }, () => []);
    cov.uncovered_ranges.forEach(([offset, size], i) => {
      const batches = Math.floor(size / batchSize);
      if (batches > 0) queues[heirs[i % heirs.length]].push({ offset, batches });
    });
    return new PartitionSource(cov.epoch, batchSize, queues, alive);
  }

  coverage(): EpochCoverage {
    const B = this.batchSize;
    const done = this.#done.map((d) => [d.offset, d.offset + d.batches * B]).sort((a, b) => a[0] - b[0]);
    const uncovered: [number, number][] = [];
    for (const seg of this.#all) {
      let at = seg.offset;
      const end = seg.offset + seg.batches * B;
      for (const [s, e] of done) {
        if (e <= at || s >= end) continue;
        if (s > at) uncovered.push([at, s - at]);
        at = Math.max(at, e);
      }
      if (at < end) uncovered.push([at, end - at]);
    }
    uncovered.sort((a, b) => a[0] - b[0]);
    const total = this.#all.reduce((a, q) => a + q.batches * B, 0);
    return { epoch: this.epoch, total_samples: total, uncovered_ranges: uncovered };
  }
  next(rank: number, ctx: NextChunkContext): Chunk | null {
    const q = this.#queues[rank];
    if (!this.#alive[rank] || this.#inFlight[rank].length > 0 || q.length === 0) return null;
    const want = ctx.policy === "async"
      ? Math.max(1, ctx.counts[rank] + ctx.maxOvershoot - ctx.stepsSinceAvg)
      : ctx.counts[rank] - ctx.stepsSinceAvg;
    const head = q[0];
    const batches = Math.min(want, head.batches);
    if (batches <= 0) return null;
    const chunk: Chunk = { id: this.#nextId++, epoch: this.epoch, rank, offset: head.offset, size: batches * this.batchSize, batches };
    head.offset += chunk.size;
    head.batches -= batches;
    if (head.batches === 0) q.shift();
    this.#inFlight[rank].push({ chunk, folded: 0 });
    return chunk;
  }
  complete(rank: number, id: number, trained: number): void {
    const f = this.#inFlight[rank];
    const i = f.findIndex((o) => o.chunk.id === id);
    if (i < 0) throw new RangeError(`PartitionSource.complete: rank ${rank} has no chunk ${id} in flight`);
    const [o] = f.splice(i, 1);
    const n = Math.min(Math.max(trained, o.folded), o.chunk.batches);
    // A rank stopped short: its untrained tail is the first thing its queue serves again.
    if (n < o.chunk.batches) this.#queues[rank].unshift(this.#rest(o.chunk, n));
    if (o.folded < n) this.#trained[rank].push({ chunk: { ...o.chunk, size: n * this.batchSize, batches: n }, folded: o.folded });
  }
  fold(rank: number, id: number, batches: number): void {
    const q = [this.#trained[rank], this.#inFlight[rank]].find((l) => l.some((o) => o.chunk.id === id));
    const o = q?.find((x) => x.chunk.id === id);
    if (!q || !o || batches < 0 || o.folded + batches > o.chunk.batches) {
      throw new RangeError(`PartitionSource.fold: rank ${rank} has no open chunk ${id} with ${batches} unfolded batches`);
    }
    this.#done.push({ offset: o.chunk.offset + o.folded * this.batchSize, batches });
    o.folded += batches;
    if (q === this.#trained[rank] && o.folded === o.chunk.batches) q.splice(q.indexOf(o), 1);
  }
  exhaustedFor(rank: number): boolean {
    return this.#queues[rank].length === 0;
  }
  isTrained(): boolean {
    return this.#queues.every((q) => q.length === 0) && this.#inFlight.every((f) => f.length === 0);
  }
  isComplete(): boolean {
    return this.isTrained() && this.#trained.every((f) => f.length === 0);
  }
  beginWindow(): void {}
  forfeit(rank: number): void {
    this.#alive[rank] = false;
    const open = [...this.#trained[rank], ...this.#inFlight[rank]];
    const pieces = [...open.flatMap((o) => (o.folded < o.chunk.batches ? [this.#rest(o.chunk, o.folded)] : [])), ...this.#queues[rank]];
    this.#trained[rank] = [];
    this.#inFlight[rank] = [];
    this.#queues[rank] = [];
    const heirs = this.#alive.flatMap((a, r) => (a ? [r] : []));
    pieces.forEach((piece, i) => heirs.length && this.#queues[heirs[i % heirs.length]].push(piece));
  }

  /** What follows the first `batches` of a chunk. */
  #rest(c: Chunk, batches: number): Segment {
    return { offset: c.offset + batches * this.batchSize, batches: c.batches - batches };
  }
}

/**
 * The work source of an epoch: resumed from its checkpoint coverage when the run resumed
 * inside it, else planned fresh: the chunk pool (progressive dispatch) or partitions sized
 * by ElChe's measured speeds once calibrated (or by `partitionRatios`).
 */
export function planSource(
  epoch: number,
  o: { cfg: ResolvedRunConfig; pickSpace: number; alive: boolean[]; resumed?: EpochCoverage; elche: ElChe },
): WorkSource {
  const B = o.cfg.batchSize, W = o.alive.length;
  if (o.resumed) {
    return o.cfg.progressive ? PoolSource.resumed(o.resumed, B, W, o.alive) : PartitionSource.resumed(o.resumed, B, W, o.alive);
  }
  return o.cfg.progressive
    ? PoolSource.fresh(epoch, o.pickSpace, B, W, o.elche.batchCounts, o.alive)
    : PartitionSource.plan(
      epoch,
      o.pickSpace,
      B,
      o.cfg.policy,
      W,
      o.alive,
      o.cfg.elche.partitionRatios,
      o.elche.calibrated ? o.elche.smoothedMsPerBatch : undefined,
    );
}
