/**
 * The chunk pool's coverage bookkeeping: the segments of batches it keeps (relative to the
 * pool start), merged, and their translation to and from a checkpoint's `EpochCoverage`,
 * which lists what is not covered as `[offset, size]` pick ranges. `ChunkPool.coverage()`
 * writes one, `ChunkPool.fromCoverage` reads one back.
 */

/** Coverage of one epoch in a checkpoint (`coverage.per_epoch[]` of `<stem>.meta.json`, keys verbatim). */
export interface EpochCoverage {
  /** The epoch (0-based). */
  epoch: number;
  /** Picks the pool covers (floor(P/B)·B of the slice). */
  total_samples: number;
  /** `[offset, size]` pick ranges not yet completed, ascending, merged. */
  uncovered_ranges: [number, number][];
}

/** Batches `[start, end)`, relative to the pool start. */
export interface Seg {
  start: number;
  end: number;
}

/** Where a pool of `totalBatches` batches of `batchSize` picks starts, at pick `start`. */
export interface PoolFrame {
  start: number;
  batchSize: number;
  totalBatches: number;
}

/** Non-empty segments, ascending, overlapping and touching ones joined (the input is not changed). */
export function merge(segs: readonly Seg[]): Seg[] {
  const sorted = segs.filter((s) => s.end > s.start).map((s) => ({ ...s })).sort((a, b) => a.start - b.start);
  const out: Seg[] = [];
  for (const s of sorted) {
    const last = out[out.length - 1];
    if (last && s.start <= last.end) last.end = Math.max(last.end, s.end);
    else out.push(s);
  }
  return out;
}

/** The pick ranges of the pool that no `done` segment holds, ascending: a checkpoint's `uncovered_ranges`. */
export function uncoveredRanges(done: readonly Seg[], f: PoolFrame): [number, number][] {
  const pos = (batch: number) => f.start + batch * f.batchSize;
  const uncovered: [number, number][] = [];
  let at = 0;
  for (const d of merge(done)) {
    if (d.start > at) uncovered.push([pos(at), (d.start - at) * f.batchSize]);
    at = d.end;
  }
  if (at < f.totalBatches) uncovered.push([pos(at), (f.totalBatches - at) * f.batchSize]);
  return uncovered;
}

/**
 * A checkpoint's uncovered ranges as segments of the pool: `uncovered` (merged) to train
 * again, and `done`, the rest of the pool.
 * @throws {RangeError} When a range falls outside the pool or off batch boundaries.
 */
export function coverageSegments(cov: EpochCoverage, f: PoolFrame): { uncovered: Seg[]; done: Seg[] } {
  const B = f.batchSize, T = f.totalBatches;
  const segs = cov.uncovered_ranges.map(([offset, size]) => {
    const s = (offset - f.start) / B, n = size / B;
    if (!Number.isInteger(s) || !Number.isInteger(n) || s < 0 || n < 0 || s + n > T) {
      throw new RangeError(
        `ChunkPool.fromCoverage: uncovered range [${offset}, ${size}] must lie on batch boundaries (B = ${B}) ` +
          `within [${f.start}, ${f.start + T * B})`,
      );
    }
    return { start: s, end: s + n };
  });
  const uncovered = merge(segs), done: Seg[] = [];
  let at = 0;
  for (const r of uncovered) {
    if (r.start > at) done.push({ start: at, end: r.start });
    at = r.end;
  }
  if (at < T) done.push({ start: at, end: T });
  return { uncovered, done };
}
