/**
 * Per-epoch metrics: how the controller folds the ranks' chunk reports into
 * one `EpochMetrics`. The record-tree roll-ups are monitor/roll_up.ts's.
 */

import type { ChunkReport } from "../../protocol/messages.ts";
import { type DataCounters, foldCounters } from "../../../data/mod.ts";

export type { ChunkReport };

/** One aggregated epoch (flodl `EpochMetrics`, [0.7] fields). Arrays are indexed by rank. */
export interface EpochMetrics {
  /** The epoch (0-based). */
  epoch: number;
  /** Σ loss·batches / Σ batches over all ranks; NaN when no batch ran. */
  avgLoss: number;
  /** Wall ms of the epoch: the longest rank's summed chunk wall time. */
  epochMs: number;
  /** Work-weighted mean of each user scalar over the ranks that reported it. */
  scalars: Record<string, number>;
  /** Per rank, each scalar's sum / count. */
  perRank: Record<string, number>[];
  /** Mean loss over each rank's batches; NaN for a rank that ran none. */
  perRankLoss: number[];
  /** Samples each rank trained that a reduce folded into the consensus (Σ over ranks: the epoch's samples). */
  perRankSamples: number[];
  /**
   * Samples each rank trained that no reduce folded (the rank was lost, or its frame refused,
   * before a reduce took its work): trained again by the others, so not in `perRankSamples`.
   */
  perRankDiscardedSamples: number[];
  /** Samples trained per ms of share-complete time (discarded ones included: it is a speed). */
  perRankThroughput: number[];
  /** Each rank's share of the epoch's folded samples (sums to 1; 0 when none were folded). */
  perRankBatchShare: number[];
  /** Σ over each rank's chunks of the ms until its share was done (barrier idle excluded). */
  perRankShareCompleteMs: number[];
  /** Σ train-step ms per rank (recording + GPU, without data waits). */
  perRankComputeOnlyMs: number[];
  /** Ms each rank waited for data. */
  perRankDataStarveMs: number[];
  /**
   * Per rank, the data plane in this epoch (data/plane_counters.ts keys: tier hits, source
   * reads, evictions and waits summed over its chunks; bytes held at its last chunk). `{}`
   * for a rank that reported none.
   */
  perRankData?: DataCounters[];
  /** Index of each rank's device; the rank's own index (0..W-1). */
  deviceIndices: number[];
}

/**
 * What a run reports per epoch (`DdpHandle.history`, `nextMetrics`, the monitor): the
 * aggregated {@link EpochMetrics} plus the averaging plane's counters. The single-device
 * path fills the same fields (no reduces: zeros, anchor 0, its one rank's batch count).
 */
export interface RunEpochMetrics extends EpochMetrics {
  /** Reduces completed in this epoch. */
  reduces: number;
  /** Mean wire bytes (up + down) per reduce in this epoch. */
  wireBytesPerReduce: number;
  /** Mean ms per reduce (trigger to adoption). */
  reduceMs: number;
  /** ElChe anchor at epoch end (0 on a single device). */
  anchor: number;
  /** ElChe batch counts at epoch end (a single device: the batches it ran). */
  batchCounts: number[];
}

interface RankTotals {
  batches: number;
  samples: number;
  discarded: number;
  lossSum: number;
  wallMs: number;
  shareMs: number;
  computeMs: number;
  starveMs: number;
  scalars: Map<string, { sum: number; count: number }>;
  data: DataCounters;
}

/**
 * Folds the chunk reports of one epoch into {@link EpochMetrics}.
 * @example
 * ```ts
 * import { EpochAggregator } from "./metrics.ts";
 * const agg = new EpochAggregator(0, 2);
 * agg.add({ rank: 0, epoch: 0, avgLoss: 1, batches: 3, samples: 96, epochMs: 30, shareCompleteMs: 30,
 *   computeOnlyMs: 25, dataStarveMs: 1, scalars: {} });
 * agg.finish().avgLoss; // 1
 * ```
 */
export class EpochAggregator {
  readonly #totals: RankTotals[];

  constructor(readonly epoch: number, readonly worldSize: number) {
    this.#totals = Array.from({ length: worldSize }, () => ({
      batches: 0,
      samples: 0,
      discarded: 0,
      lossSum: 0,
      wallMs: 0,
      shareMs: 0,
      computeMs: 0,
      starveMs: 0,
      scalars: new Map(),
      data: {},
    }));
  }

  /**
   * Add one chunk report.
   * @throws {RangeError} When the report's epoch or rank does not belong here.
   */
  add(r: ChunkReport): void {
    if (r.epoch !== this.epoch) {
      throw new RangeError(`EpochAggregator.add: expected epoch ${this.epoch}, got ${r.epoch}`);
    }
    if (!Number.isInteger(r.rank) || r.rank < 0 || r.rank >= this.worldSize) {
      throw new RangeError(`EpochAggregator.add: rank must be in [0, ${this.worldSize}), got ${r.rank}`);
    }
    const t = this.#totals[r.rank];
    t.batches += r.batches;
    t.samples += r.samples;
    if (r.batches > 0) t.lossSum += r.avgLoss * r.batches;
    t.wallMs += r.epochMs;
    t.shareMs += r.shareCompleteMs;
    t.computeMs += r.computeOnlyMs;
    t.starveMs += r.dataStarveMs;
    if (r.data) t.data = foldCounters(t.data, r.data);
    for (const [k, v] of Object.entries(r.scalars)) {
      const acc = t.scalars.get(k) ?? { sum: 0, count: 0 };
      acc.sum += v.sum;
      acc.count += v.count;
      t.scalars.set(k, acc);
    }
  }

  /**
   * `samples` of what `rank` trained never reached the consensus (lost before a reduce folded
   * it): they leave its `perRankSamples` for `perRankDiscardedSamples`.
   */
  discard(rank: number, samples: number): void {
    this.#totals[rank].discarded += samples;
  }

  /**
   * The epoch's metrics.
   * @param opts.epochMs Pool wall time (progressive dispatch); default: max over ranks of Σ chunk wall time.
   * @param opts.batchShare Shares to report instead of samples_r / Σ samples (e.g. ElChe's recentBatchShare).
   * @param opts.deviceIndices Adapter index per rank; default 0..W-1.
   */
  finish(opts: { epochMs?: number; batchShare?: number[]; deviceIndices?: number[] } = {}): EpochMetrics {
    const T = this.#totals;
    const batches = T.reduce((a, t) => a + t.batches, 0);
    const samples = T.reduce((a, t) => a + t.samples - t.discarded, 0);
    const lossSum = T.reduce((a, t) => a + t.lossSum, 0);
    const perRank = T.map((t) => Object.fromEntries([...t.scalars].map(([k, v]) => [k, v.sum / v.count])));
    const scalars: Record<string, number> = {};
    const keys = new Set(T.flatMap((t) => [...t.scalars.keys()]));
    for (const k of keys) {
      let num = 0, den = 0;
      T.forEach((t, r) => {
        if (k in perRank[r]) {
          num += perRank[r][k] * t.batches;
          den += t.batches;
        }
      });
      if (den > 0) scalars[k] = num / den;
    }
    return {
      epoch: this.epoch,
      avgLoss: batches > 0 ? lossSum / batches : NaN,
      epochMs: opts.epochMs ?? Math.max(0, ...T.map((t) => t.wallMs)),
      scalars,
      perRank,
      perRankLoss: T.map((t) => (t.batches > 0 ? t.lossSum / t.batches : NaN)),
      perRankSamples: T.map((t) => t.samples - t.discarded),
      perRankDiscardedSamples: T.map((t) => t.discarded),
      perRankThroughput: T.map((t) => (t.shareMs > 0 ? t.samples / t.shareMs : 0)),
      perRankBatchShare: opts.batchShare ? [...opts.batchShare] : T.map((t) => (samples > 0 ? (t.samples - t.discarded) / samples : 0)),
      perRankShareCompleteMs: T.map((t) => t.shareMs),
      perRankComputeOnlyMs: T.map((t) => t.computeMs),
      perRankDataStarveMs: T.map((t) => t.starveMs),
      perRankData: T.map((t) => ({ ...t.data })),
      deviceIndices: opts.deviceIndices ? [...opts.deviceIndices] : T.map((_, r) => r),
    };
  }
}
