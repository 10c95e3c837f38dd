/**
 * Non-progressive dispatch: one contiguous plan per rank per epoch, used by
 * Sync (and by Cadence/Async when progressive dispatch is turned off).
 */

import type { ApplyPolicy } from "../control/config.ts";

/** A contiguous range of pick positions `[offset, offset + size)` in an epoch's permutation. */
export interface Range {
  offset: number;
  size: number;
}

/** Inputs of {@link planPartitions}. */
export interface PartitionInput {
  policy: ApplyPolicy;
  worldSize: number;
  /** Picks to split (the epoch slice). */
  total: number;
  /** First pick position of the slice; default 0. */
  start?: number;
  /** Static shares (honoured under Sync only). */
  partitionRatios?: readonly number[];
  /** Smoothed ms/batch per rank (Cadence/Async, when calibrated or hinted). */
  msPerBatch?: readonly number[];
  /** Ranks that take part; default all. A dead rank gets an empty range. */
  alive?: readonly boolean[];
}

/**
 * Split an epoch into one contiguous range per rank, in rank order:
 * partitionRatios (Sync) → floor(ratio · total), remainder +1 to the largest ratios;
 * Sync → equal sizes, remainder +1 to the first ranks; Cadence/Async with timing →
 * proportional to 1 / max(m, 0.001), floor, whole remainder to the fastest rank; else equal.
 * @example
 * ```ts
 * import { planPartitions } from "./partition.ts";
 * planPartitions({ policy: "sync", worldSize: 3, total: 10 }).map((r) => r.size); // [4, 3, 3]
 * ```
 */
export function planPartitions(p: PartitionInput): Range[] {
  const W = p.worldSize;
  const alive = p.alive ?? new Array(W).fill(true);
  let sizes: number[];
  if (p.policy === "sync" && p.partitionRatios) {
    if (p.partitionRatios.length !== W) {
      throw new RangeError(`planPartitions: partitionRatios needs ${W} entries, got ${p.partitionRatios.length}`);
    }
    sizes = byWeights(p.total, p.partitionRatios.map((r, i) => (alive[i] ? r : 0)), "largest");
  } else if (p.policy !== "sync" && p.msPerBatch && p.msPerBatch.some((m, i) => alive[i] && m > 0)) {
    // A rank not measured yet (one admitted at this boundary) is sized as the
    // slowest measured one, as ElChe gives it the anchor's count: never 1/0.
    const ms = p.msPerBatch;
    const slowest = Math.max(...ms.filter((m, i) => alive[i] && m > 0));
    sizes = byWeights(p.total, ms.map((m, i) => (alive[i] ? 1 / Math.max(m > 0 ? m : slowest, 0.001) : 0)), "fastest");
  } else {
    sizes = byWeights(p.total, alive.map((a) => (a ? 1 : 0)), "first");
  }
  let offset = p.start ?? 0;
  return sizes.map((size) => {
    const r = { offset, size };
    offset += size;
    return r;
  });
}

/** Floor of each weighted share, then the remainder by `rule`. */
function byWeights(total: number, w: readonly number[], rule: "largest" | "fastest" | "first"): number[] {
  const sum = w.reduce((a, b) => a + b, 0);
  if (!(sum > 0)) throw new RangeError(`planPartitions: no rank can take data (weights [${w.join(", ")}])`);
  const sizes = w.map((x) => Math.floor((x / sum) * total));
  let left = total - sizes.reduce((a, b) => a + b, 0);
  const order = w.map((_, i) => i).filter((i) => w[i] > 0);
  if (rule !== "first") order.sort((a, b) => w[b] - w[a] || a - b);
  if (rule === "fastest") {
    sizes[order[0]] += left;
    return sizes;
  }
  for (let i = 0; left > 0; i = (i + 1) % order.length, left--) sizes[order[i]] += 1;
  return sizes;
}

/**
 * Split a dead rank's unprocessed range among survivors (ExtendPartition):
 * contiguous, in survivor order, equal sizes with the remainder to the first survivors.
 * @returns One range per survivor, in the order given.
 */
export function extendPartitions(range: Range, survivors: readonly number[]): Range[] {
  if (survivors.length === 0) throw new RangeError("extendPartitions: need at least one survivor, got none");
  const n = survivors.length, base = Math.floor(range.size / n), extra = range.size % n;
  let offset = range.offset;
  return survivors.map((_, i) => {
    const size = base + (i < extra ? 1 : 0);
    const r = { offset, size };
    offset += size;
    return r;
  });
}
