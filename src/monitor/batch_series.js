// @ts-check
/**
 * The dashboard's batch-loss series, bounded. Plain checked JavaScript: part of the view
 * script the saved HTML inlines (dashboard_script.ts), and used by the recorder
 * (dashboard_data.ts).
 */
/** @import { BatchPoint, BatchRow } from "./dashboard_data.ts" */

/**
 * One rank's points, and the batches not yet folded into a point.
 * @typedef {object} RankSeries
 * @property {BatchPoint[]} points Stored points, oldest first.
 * @property {number} count Batches of the rank so far.
 * @property {number} stride Batches per point now (doubles at each merge).
 * @property {number} sum Loss sum of the pending batches.
 * @property {number} n Pending batches.
 * @property {number} epoch Epoch of the last batch.
 */

/**
 * Per-rank batch losses, bounded: at most `maxPerRank` points per rank. When a rank
 * overflows, neighbouring points merge pairwise (batch-weighted means; NaN propagates)
 * and later points average twice as many batches. Also tracks the mean batch loss since
 * the last reduce (the loss of a reduce window).
 */
export class BatchSeries {
  /** @param {number} [maxPerRank] Points kept per rank before pairs merge (default 2000, at least 2). */
  constructor(maxPerRank = 2000) {
    /** Points kept per rank before pairs merge. */
    this.max = Math.max(2, maxPerRank | 0);
    /** @type {Map<number, RankSeries>} Each rank's series, by rank. */
    this.ranks = new Map();
    /** Loss sum of the batches since the last {@link takeWindowLoss}. */
    this.winSum = 0;
    /** Batches since the last {@link takeWindowLoss}. */
    this.winN = 0;
  }
  /**
   * @param {number} r
   * @returns {RankSeries}
   */
  #rank(r) {
    let s = this.ranks.get(r);
    if (!s) this.ranks.set(r, s = { points: [], count: 0, stride: 1, sum: 0, n: 0, epoch: 0 });
    return s;
  }
  /**
   * Count one batch of a rank.
   * @param {BatchRow} ev The coordinator's batch event (rank, epoch, loss are read).
   */
  add(ev) {
    const s = this.#rank(ev.rank);
    s.count++;
    s.sum += ev.loss;
    s.n++;
    s.epoch = ev.epoch;
    this.winSum += ev.loss;
    this.winN++;
    if (s.n >= s.stride) {
      s.points.push({ rank: ev.rank, epoch: ev.epoch, index: s.count, loss: s.sum / s.n, n: s.n });
      s.sum = 0;
      s.n = 0;
      if (s.points.length > this.max) {
        const merged = [];
        for (let i = 0; i < s.points.length; i += 2) {
          const a = s.points[i], b = s.points[i + 1];
          merged.push(b ? { ...b, loss: (a.loss * a.n + b.loss * b.n) / (a.n + b.n), n: a.n + b.n } : a);
        }
        s.points = merged;
        s.stride *= 2;
      }
    }
  }
  /**
   * Mean loss of the batches since the previous call, or undefined when none ran.
   * @returns {number | undefined}
   */
  takeWindowLoss() {
    const v = this.winN ? this.winSum / this.winN : undefined;
    this.winSum = 0;
    this.winN = 0;
    return v;
  }
  /**
   * Replace every rank's points with stored ones (`DashboardData.batches`).
   * @param {readonly BatchPoint[] | undefined} points
   */
  load(points) {
    this.ranks.clear();
    for (const p of points || []) {
      const s = this.#rank(p.rank);
      s.points.push({ ...p });
      s.count = Math.max(s.count, p.index);
      s.stride = Math.max(s.stride, p.n || 1);
    }
  }
  /**
   * Every rank's points in rank order, each rank's pending batches as a last point.
   * @returns {BatchPoint[]}
   */
  points() {
    const out = [];
    for (const [r, s] of [...this.ranks].sort((a, b) => a[0] - b[0])) {
      out.push(...s.points);
      if (s.n) out.push({ rank: r, epoch: s.epoch, index: s.count, loss: s.sum / s.n, n: s.n });
    }
    return out;
  }
}
