// @ts-check
/**
 * The dashboard's activity bins (the timeline's rank lanes), bounded. Plain checked
 * JavaScript: part of the view script the saved HTML inlines (dashboard_script.ts), and
 * used by the recorder (dashboard_data.ts).
 */
/** @import { RankActivityData, RankActivityRank } from "./dashboard_data.ts" */

/**
 * Ms of each kind in one bin of a rank.
 * @typedef {{ compute: number, throttle: number, reduce: number, idle: number }} ActivityBin
 */

/**
 * What each rank did over time, bounded: per rank, bins of `binMs` from `t0` holding the ms
 * spent computing, throttled (a simulated slow rank's sleep) and in reduces; the rest of a
 * bin between the rank's first and last batch is idle. A batch arriving at time `t` after
 * `ms` of work covers [t - ms, t]: its last (s - 1)/s is throttle for a rank slowed down s
 * times, except the rank's first batch (pipeline compilation, which a slowed-down rank
 * does not stretch: src/distributed/rank/chunk_run.ts). A reduce of `ms` ending at `t` covers [t - ms, t] on the ranks that took part.
 * When a rank would need more than `maxBins` bins, neighbouring bins merge pairwise and
 * `binMs` doubles, so a long run keeps its shape at the resolution a screen can show.
 */
export class RankActivity {
  /**
   * @param {number} [maxBins] Most bins per rank before pairs merge (default 1500, at least 8).
   * @param {number} [binMs] Width of a bin at the start, ms (default 20).
   */
  constructor(maxBins = 1500, binMs = 20) {
    /** Most bins per rank before pairs merge. */
    this.max = Math.max(8, maxBins | 0);
    /** Width of one bin, ms (doubles at each merge). */
    this.binMs = binMs;
    /** @type {number | undefined} Start of bin 0 (ms since the Unix epoch); undefined before the first batch. */
    this.t0 = undefined;
    /** @type {number | undefined} End of the last span recorded (ms since the Unix epoch). */
    this.end = undefined;
    /** @type {RankActivityRank[]} Per rank: { compute, throttle, reduce } ms per bin, and its first batch start / last batch end. */
    this.ranks = [];
    /** @type {number[]} Reduce ms per bin, whole run (the coordinator lane when no timeline events came). */
    this.sync = [];
  }
  /**
   * @param {number} r
   * @returns {RankActivityRank}
   */
  #rank(r) {
    while (this.ranks.length <= r) {
      this.ranks.push({ compute: [], throttle: [], reduce: [], from: undefined, to: undefined });
    }
    return this.ranks[r];
  }
  /**
   * Add [from, to) to the bins `owner[key]` (looked up after any merge, which replaces them).
   * @template {string} K
   * @param {Record<K, number[]>} owner
   * @param {K} key
   * @param {number} from
   * @param {number} to
   */
  #spread(owner, key, from, to) {
    if (!(to > from)) return;
    if (this.t0 === undefined) this.t0 = from;
    from = Math.max(from, this.t0);
    if (!(to > from)) return;
    for (;;) {
      const last = Math.floor((to - this.t0) / this.binMs);
      if (last < this.max) break;
      this.#coarsen();
    }
    const bins = owner[key];
    for (let i = Math.floor((from - this.t0) / this.binMs);; i++) {
      const a = this.t0 + i * this.binMs, b = a + this.binMs;
      const overlap = Math.min(b, to) - Math.max(a, from);
      if (overlap > 0) {
        while (bins.length <= i) bins.push(0);
        bins[i] += overlap;
      }
      if (b >= to) break;
    }
    this.end = Math.max(this.end ?? to, to);
  }
  #coarsen() {
    /** @param {number[]} bins */
    const half = (bins) => {
      const out = [];
      for (let i = 0; i < bins.length; i += 2) out.push(bins[i] + (bins[i + 1] || 0));
      return out;
    };
    for (const r of this.ranks) {
      r.compute = half(r.compute);
      r.throttle = half(r.throttle);
      r.reduce = half(r.reduce);
    }
    this.sync = half(this.sync);
    this.binMs *= 2;
  }
  /**
   * A batch of `rank` that ended at `t` after `ms` (slowed down `slowdown` times).
   * @param {number} rank
   * @param {number} t End of the batch, ms since the Unix epoch.
   * @param {number} ms Wall ms of the batch; a non-finite or negative one is ignored.
   * @param {number} [slowdown] How many times slower the rank was made (default 1).
   */
  batch(rank, t, ms, slowdown = 1) {
    if (!(Number.isFinite(t) && Number.isFinite(ms) && ms >= 0)) return;
    const s = this.#rank(rank);
    if (this.t0 === undefined) this.t0 = t - ms;
    const work = slowdown > 1 && s.from !== undefined ? ms / slowdown : ms;
    this.#spread(s, "compute", t - ms, t - ms + work);
    this.#spread(s, "throttle", t - ms + work, t);
    s.from = Math.min(s.from ?? t - ms, t - ms);
    s.to = Math.max(s.to ?? t, t);
  }
  /**
   * A reduce that ended at `t` after `ms`; `ranks` took part (all when omitted).
   * @param {number} t End of the reduce, ms since the Unix epoch.
   * @param {number} ms Wall ms of the reduce.
   * @param {readonly number[]} [ranks] The ranks that took part (default all).
   */
  reduce(t, ms, ranks) {
    if (!(Number.isFinite(t) && Number.isFinite(ms) && ms >= 0) || this.t0 === undefined) return;
    for (const r of ranks ?? this.ranks.map((_, i) => i)) this.#spread(this.#rank(r), "reduce", t - ms, t);
    this.#spread(this, "sync", t - ms, t);
  }
  /**
   * Ms per kind of `rank` in bin `i`: compute, throttle, reduce as recorded (the sum capped
   * at the bin's span), idle the rest of the part of the bin between its first and last batch.
   * @param {number} rank
   * @param {number} i Bin index.
   * @returns {ActivityBin}
   */
  bin(rank, i) {
    const s = this.ranks[rank];
    // NOTE: `?? NaN` is what undefined does in this arithmetic: before the first batch (no
    // t0), or for a stored rank with a start but no end, the bin has no idle time to give.
    const a = (this.t0 ?? NaN) + i * this.binMs, b = a + this.binMs;
    const span = s && s.from !== undefined ? Math.max(0, Math.min(b, s.to ?? NaN) - Math.max(a, s.from)) : 0;
    const compute = s?.compute[i] || 0, throttle = s?.throttle[i] || 0, reduce = s?.reduce[i] || 0;
    const busy = compute + throttle + reduce;
    const k = busy > this.binMs ? this.binMs / busy : 1;
    return { compute: compute * k, throttle: throttle * k, reduce: reduce * k, idle: Math.max(0, span - busy * k) };
  }
  /** Bins per rank (the longest). */
  get length() {
    return Math.max(
      this.sync.length,
      ...this.ranks.map((r) => Math.max(r.compute.length, r.throttle.length, r.reduce.length)),
    );
  }
  /** @returns {RankActivityData} The bins as JSON (`DashboardData.activity`). */
  toJSON() {
    return { t0: this.t0, end: this.end, binMs: this.binMs, max: this.max, ranks: this.ranks, sync: this.sync };
  }
  /**
   * Replace everything with stored bins (`DashboardData.activity`); nothing changes when absent.
   * @param {RankActivityData | undefined} obj
   * @returns {this}
   */
  load(obj) {
    if (!obj) return this;
    this.t0 = obj.t0;
    this.end = obj.end;
    this.binMs = obj.binMs;
    this.max = obj.max ?? this.max;
    this.ranks = (obj.ranks || []).map((r) => ({
      ...r,
      compute: [...r.compute],
      throttle: [...r.throttle],
      reduce: [...r.reduce],
    }));
    this.sync = [...(obj.sync || [])];
    return this;
  }
}
