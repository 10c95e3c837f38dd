/**
 * ElChe, the cadence controller (flodl 0.7): the slowest ranks define the
 * window of A batches, faster ranks get proportionally more, A grows to amortize the
 * fixed per-window cost and shrinks on convergence signals.
 *
 * One state machine (anchor election, growth, overshoot) whose transitions read the same
 * fields; its pure arithmetic is apart in `elche_math.ts`, and its phases and the state a
 * bundle saves (with the check a resume runs on it) in `elche_state.ts`.
 */

import type { ApplyPolicy } from "./config.ts";
import type { Verdict } from "./guards.ts";
import { electAnchor, proposeGrowth, recomputeCounts } from "./elche_math.ts";
import { type ElCheState, type Phase, phaseAfter, phaseAtLeast, restoreElCheState } from "./elche_state.ts";

// The bundle and the package import these from here, beside the class that fills them.
export type { ElCheState, Phase };

/** ms/batch readings averaged per rank (the trust window). */
export const TRUST_WINDOW = 5;
/** Invalid reports in a row that clear a rank's trust window. */
export const INVALID_CLEAR = 5;
/** Consecutive Stable verdicts that re-arm growth after a veto. */
export const GROWTH_REARM = 5;
/** `c` snapshots behind recentBatchShare. */
export const SHARE_WINDOW = 10;
/** Auto max_overshoot: start, ceiling (Async). */
export const OVERSHOOT_INITIAL = 3;
export const OVERSHOOT_CEILING = 15;

/** Resolved ElChe knobs (see `resolveConfig`). */
export interface ElCheOptions {
  worldSize: number;
  policy: ApplyPolicy;
  anchor: number;
  /** Default: anchor. */
  minAnchor?: number;
  /** Default: 1000. */
  maxAnchor?: number;
  /** τ; default 0.05. */
  overheadTarget?: number;
  maxBatchDiff?: number;
  /** User-set overshoot (fixed); unset = auto (Async). */
  maxOvershoot?: number;
  /** Relax A up on Stable (honoured under Async only). */
  relaxUp?: boolean;
  /** Window cap: batches per epoch slice, floor((N·augment/epochSplits)/B). */
  maxTotalBatches?: number;
  /** Pins the initial anchor rank to the smallest ratio. */
  partitionRatios?: readonly number[];
}

/**
 * The cadence controller. Feed it one `reportTiming` per reduce, then the cycle's verdict.
 * @example
 * ```ts
 * import { ElChe } from "./elche.ts";
 * const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10 });
 * e.reportTiming([100, 50], [10, 10], 0); // rank 0 takes 10 ms/batch, rank 1 takes 5
 * e.batchCounts; // [10, 20]
 * ```
 */
export class ElChe {
  readonly worldSize: number;
  readonly policy: ApplyPolicy;
  readonly minAnchor: number;
  readonly maxAnchor: number;
  readonly overheadTarget: number;
  readonly maxBatchDiff?: number;
  #A: number;
  #c: number[];
  #win: number[][];
  #invalid: number[];
  #alive: boolean[];
  #b: number | null = null;
  #phase: Phase = "probe";
  #calCount = 0;
  #calibrated = false;
  #pending: number | null = null;
  #growthEnabled = true;
  #stableRun = 0;
  #maxTotal?: number;
  #capBinding = false;
  #slack: number[];
  #fill: number[];
  #shares: number[][] = [];
  #relaxUp: boolean;
  #userOvershoot?: number;
  #overshoot = OVERSHOOT_INITIAL;
  #hint: { slow: number; ratio: number } | null = null;

  /** @throws {RangeError} When W < 2 or the anchor bounds are inconsistent. */
  constructor(o: ElCheOptions) {
    const W = o.worldSize;
    if (!Number.isInteger(W) || W < 2) throw new RangeError(`ElChe: worldSize must be an integer >= 2, got ${W}`);
    this.worldSize = W;
    this.policy = o.policy;
    this.minAnchor = o.minAnchor ?? o.anchor;
    this.maxAnchor = o.maxAnchor ?? 1000;
    if (
      !(Number.isInteger(o.anchor) && this.minAnchor >= 1 && this.minAnchor <= o.anchor && o.anchor <= this.maxAnchor)
    ) {
      throw new RangeError(
        `ElChe: need integers 1 <= minAnchor <= anchor <= maxAnchor, got ${this.minAnchor}, ${o.anchor}, ${this.maxAnchor}`,
      );
    }
    this.overheadTarget = o.overheadTarget ?? 0.05;
    this.maxBatchDiff = o.maxBatchDiff;
    this.#A = o.anchor;
    this.#c = new Array(W).fill(o.anchor);
    this.#win = Array.from({ length: W }, () => []);
    this.#invalid = new Array(W).fill(0);
    this.#alive = new Array(W).fill(true);
    this.#slack = new Array(W).fill(0);
    this.#fill = new Array(W).fill(0);
    this.#maxTotal = o.maxTotalBatches;
    this.#relaxUp = o.relaxUp ?? false;
    this.#userOvershoot = o.maxOvershoot;
    if (o.partitionRatios) {
      const r = o.partitionRatios;
      if (r.length !== W) throw new RangeError(`ElChe: partitionRatios needs ${W} entries, got ${r.length}`);
      this.#b = r.indexOf(Math.min(...r));
    }
  }

  /** Current anchor A. */
  get anchor(): number {
    return this.#A;
  }
  /** The anchor rank b, or null before election. */
  get anchorRank(): number | null {
    return this.#b;
  }
  get phase(): Phase {
    return this.#phase;
  }
  get calibrationCount(): number {
    return this.#calCount;
  }
  get calibrated(): boolean {
    return this.#calibrated;
  }
  /** Seeded by a speed hint (uncalibrated ranks may still be sized proportionally). */
  get hinted(): boolean {
    return this.#hint !== null;
  }
  /** c[r], batches per rank this window (0 for dead ranks). */
  get batchCounts(): number[] {
    return [...this.#c];
  }
  /** m[r], mean of the trust window (0 when empty). */
  get smoothedMsPerBatch(): number[] {
    return this.#win.map((_, r) => this.#m(r));
  }
  get growthEnabled(): boolean {
    return this.#growthEnabled;
  }
  /** The staged Grow(n) proposal, committed by the next Stable verdict. */
  get pendingGrowth(): number | null {
    return this.#pending;
  }
  get windowCapBinding(): boolean {
    return this.#capBinding;
  }
  /** Steps an Async rank may run past c[r]: the user value, else the auto-tuned one; 0 otherwise. */
  get maxOvershoot(): number {
    return this.policy === "async" ? this.#userOvershoot ?? this.#overshoot : 0;
  }
  /** Steps rank r may take before it is held: c[r] (+ overshoot under Async). */
  budget(r: number): number {
    return this.#c[r] + this.maxOvershoot;
  }
  isAlive(r: number): boolean {
    return this.#alive[r];
  }
  aliveRanks(): number[] {
    return this.#alive.flatMap((a, r) => (a ? [r] : []));
  }

  /**
   * Seed counts from a known speed ratio: `c[slow] = A`, others `round(A · ratio)`; pins the anchor rank.
   * @throws {RangeError} When `ratio` is not finite and >= 1 (flodl floors it at 1).
   */
  withSpeedRatio(slowRank: number, ratio: number): this {
    this.#checkRank("withSpeedRatio", slowRank);
    if (!(Number.isFinite(ratio) && ratio >= 1)) {
      throw new RangeError(`ElChe.withSpeedRatio: ratio must be >= 1, got ${ratio}`);
    }
    this.#hint = { slow: slowRank, ratio };
    this.#b = slowRank;
    this.#recompute();
    return this;
  }

  /** Pin the initial anchor rank (e.g. from a micro-benchmark prior). */
  pinAnchorRank(r: number): this {
    this.#checkRank("pinAnchorRank", r);
    this.#b = r;
    return this;
  }

  /** Set or clear the window cap (batches per epoch slice). */
  setMaxTotalBatches(n: number | undefined): void {
    this.#maxTotal = n;
  }

  /** Stage callback time (ms) rank r will spend in the last window of an epoch; consumed by the next recompute. */
  stageCallbackSlack(rank: number, ms: number): void {
    this.#checkRank("stageCallbackSlack", rank);
    this.#slack[rank] = ms;
  }

  /** Stage each rank's window fill (first-batch excess, ms) for the next report. */
  stageFill(fillMs: readonly number[]): void {
    this.#checkLen("stageFill", fillMs);
    this.#fill = [...fillMs];
  }

  /**
   * Feed one window's timing: per-rank ms and batches, and the previous reduce's wall time.
   * @throws {RangeError} When an array's length is not W.
   */
  reportTiming(ms: readonly number[], batches: readonly number[], syncMs: number): void {
    this.#checkLen("reportTiming ms", ms);
    this.#checkLen("reportTiming batches", batches);
    for (let r = 0; r < this.worldSize; r++) {
      if (!this.#alive[r]) continue;
      if (batches[r] > 0 && ms[r] > 0 && Number.isFinite(ms[r]) && Number.isFinite(batches[r])) {
        this.#win[r].push(ms[r] / batches[r]);
        if (this.#win[r].length > TRUST_WINDOW) this.#win[r].shift();
        this.#invalid[r] = 0;
      } else if (++this.#invalid[r] >= INVALID_CLEAR) {
        this.#win[r] = [];
      }
    }
    if (this.#b === null || this.#atLeast("stable")) this.#b = this.elect();
    if (this.#b === null) return;
    let slow = this.#m(this.#b);
    if (slow <= 0) {
      // Escape a pinned anchor rank that never reports.
      if (this.#invalid[this.#b] >= INVALID_CLEAR) {
        this.#b = this.elect();
        if (this.#b === null) return;
        slow = this.#m(this.#b);
      }
      if (slow <= 0) return;
    }
    this.#pending = null;
    if (this.#atLeast("stable") || (this.#phase === "warmup" && this.#calCount >= 1)) {
      this.#pending = this.propose(syncMs);
    }
    this.#fill.fill(0);
    this.#recompute(slow);
    this.#shares.push([...this.#c]);
    if (this.#shares.length > SHARE_WINDOW) this.#shares.shift();
    this.#calibrated = true;
    this.#calCount += 1;
    this.#phase = phaseAfter(this.#phase, this.#calCount);
  }

  /** Anchor-rank election over alive ranks; null when no rank has timing. */
  elect(): number | null {
    return electAnchor(this.smoothedMsPerBatch, this.#alive, this.#b);
  }

  /** Window-pressure growth proposal: the new A, or null. Pure. */
  propose(syncMs: number): number | null {
    if (this.policy === "sync" || !this.#growthEnabled || this.#capBinding || this.#b === null) return null;
    return proposeGrowth({
      anchor: this.#A,
      minAnchor: this.minAnchor,
      maxAnchor: this.maxAnchor,
      overheadTarget: this.overheadTarget,
      marginalMs: this.#m(this.#b),
      fillMs: this.#fill[this.#b],
      syncMs,
      stable: this.#atLeast("stable"),
    });
  }

  /** Apply the cycle's verdict, including the auto overshoot. */
  applyVerdict(v: Verdict): void {
    const autoOvershoot = this.policy === "async" && this.#userOvershoot === undefined;
    if (v.kind === "stable") {
      this.#stableRun += 1;
      if (this.#stableRun >= GROWTH_REARM) this.#growthEnabled = true;
      if (this.#pending !== null) {
        this.#A = this.#pending;
        this.#pending = null;
        this.#recompute();
      }
      if (this.#relaxUp && this.policy === "async") this.relaxAnchorUp();
      if (autoOvershoot) this.#overshoot = Math.min(this.#overshoot + 1, OVERSHOOT_CEILING);
      return;
    }
    this.#pending = null;
    this.#stableRun = 0;
    this.#growthEnabled = false;
    if (v.kind === "nudgeDown") {
      this.nudge(v.factor);
      if (autoOvershoot) this.#overshoot = OVERSHOOT_INITIAL;
    }
  }

  /**
   * Shrink A by `f` (clamped to [0.1, 1]), ignoring minAnchor; drops any pending growth
   * computed from the pre-nudge anchor. Non-finite `f` is ignored.
   */
  nudge(f: number): void {
    if (!Number.isFinite(f)) return;
    this.#pending = null;
    const k = Math.min(Math.max(f, 0.1), 1);
    this.#A = Math.min(this.#A, Math.max(1, Math.ceil(this.#A * k)));
    this.#recompute();
  }

  /** A += 1 unless at maxAnchor or the projected lead would exceed maxBatchDiff. Returns whether A grew. */
  relaxAnchorUp(): boolean {
    if (this.#A >= this.maxAnchor) return false;
    const d = this.maxBatchDiff;
    if (d !== undefined) {
      const ms = this.aliveRanks().map((r) => this.#m(r)).filter((m) => m > 0);
      if (ms.length > 0) {
        const proj = Math.round(((this.#A + 1) * Math.max(...ms)) / Math.min(...ms));
        if (proj - (this.#A + 1) > d) return false;
      }
    }
    this.#A += 1;
    this.#recompute();
    return true;
  }

  /** Take rank r out: its counts go to 0, the anchor rank is re-elected if it was r, counts are recomputed. */
  markDead(r: number): void {
    this.#checkRank("markDead", r);
    this.#alive[r] = false;
    this.#win[r] = [];
    this.#c[r] = 0;
    if (this.#b === r) this.#b = this.elect();
    this.#recompute();
  }

  /**
   * Admit rank r (elastic membership): alive again with an empty trust window,
   * so it is sized like an uncalibrated rank (c[r] = A) until its own windows report; the
   * anchor rank stays as elected (a rank without timing cannot be elected).
   */
  markJoined(r: number): void {
    this.#checkRank("markJoined", r);
    this.#alive[r] = true;
    this.#win[r] = [];
    this.#invalid[r] = 0;
    this.#c[r] = this.#A;
    this.#recompute();
  }

  /** Per-rank share of the last <= 10 windows' counts (equal shares over alive ranks when empty). */
  recentBatchShare(): number[] {
    const W = this.worldSize;
    const tot = new Array<number>(W).fill(0);
    for (const snap of this.#shares) snap.forEach((c, r) => (tot[r] += c));
    let sum = tot.reduce((a, b) => a + b, 0);
    const src = sum > 0 ? tot : [...this.#c];
    sum = src.reduce((a, b) => a + b, 0);
    if (sum > 0) return src.map((c) => c / sum);
    const alive = this.aliveRanks().length;
    return this.#alive.map((a) => (a ? 1 / alive : 0));
  }

  /** The alive rank with the lowest smoothed ms/batch; the lowest alive rank before calibration. */
  fastestRank(): number | null {
    const alive = this.aliveRanks();
    let best: number | null = null;
    for (const r of alive) if (this.#m(r) > 0 && (best === null || this.#m(r) < this.#m(best))) best = r;
    return best ?? alive[0] ?? null;
  }

  /** Checkpoint state (`elche_state`). */
  exportState(): ElCheState {
    return {
      anchor: this.#A,
      anchor_rank: this.#b,
      smoothed_ms_per_batch: this.smoothedMsPerBatch,
      phase: this.#phase,
      calibration_count: this.#calCount,
    };
  }

  /**
   * Restore from a checkpoint (see {@link restoreElCheState}): trust windows seeded with
   * one sample (the saved mean), the anchor kept within [1, maxAnchor].
   * @throws {RangeError} When the saved world size or a field does not fit.
   */
  importState(s: ElCheState): void {
    const r = restoreElCheState(s, this.worldSize, this.maxAnchor);
    this.#A = r.anchor;
    this.#b = r.anchorRank;
    this.#win = r.trustWindows;
    this.#phase = r.phase;
    this.#calCount = r.calibrationCount;
    this.#calibrated = r.calibrationCount > 0;
    this.#recompute();
  }

  #m(r: number): number {
    const w = this.#win[r];
    return w.length === 0 ? 0 : w.reduce((a, b) => a + b, 0) / w.length;
  }

  #atLeast(p: Phase): boolean {
    return phaseAtLeast(this.#phase, p);
  }

  /** Batch counts from the anchor rank's rate, then the window cap; consumes the slack. */
  #recompute(slow = this.#b === null ? 0 : this.#m(this.#b)): void {
    const r = recomputeCounts({
      anchor: this.#A,
      m: this.smoothedMsPerBatch,
      slow,
      counts: this.#c,
      alive: this.#alive,
      slackMs: this.#slack,
      calibrated: this.#calibrated,
      maxBatchDiff: this.maxBatchDiff,
      maxTotal: this.#maxTotal,
      hint: this.#hint,
    });
    this.#c = r.counts;
    this.#capBinding = r.capBinding;
    this.#slack.fill(0);
  }

  #checkRank(what: string, r: number): void {
    if (!Number.isInteger(r) || r < 0 || r >= this.worldSize) {
      throw new RangeError(`ElChe.${what}: rank must be in [0, ${this.worldSize}), got ${r}`);
    }
  }

  #checkLen(what: string, a: readonly number[]): void {
    if (a.length !== this.worldSize) {
      throw new RangeError(`ElChe.${what}: expected ${this.worldSize} entries, got ${a.length}`);
    }
  }
}
