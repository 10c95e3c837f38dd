/**
 * Convergence guards: each reduce they read the ranks' divergence from the
 * consensus and answer Stable, SuppressGrowth or NudgeDown{factor}; ElChe applies it.
 */
import type { SyncAck } from "../../protocol/messages.ts";

export type { SyncAck };

/** Default TrendGuard threshold of the builder, and with EASGD (blending leaves a standing spread). */
export const DEFAULT_TREND_THRESHOLD = 0.05;
export const DEFAULT_TREND_THRESHOLD_EASGD = 0.3;

/** A guard's (or the meta-controller's) answer for one reduce. */
export type Verdict = { kind: "stable" } | { kind: "suppressGrowth" } | { kind: "nudgeDown"; factor: number };


/**
 * The divergence of one reduce as the controller sees it: per-rank deltas
 * (missing ranks 0), pre-norms only when every rank supplied one, and the consensus norm.
 */
export class DivergenceReport {
  /** A report from its parts; {@link DivergenceReport.fromAcks} builds one from a reduce's acks. */
  constructor(
    /** Per rank, `‖pre − consensus‖ / ‖consensus‖` (0 for a rank without an ack). */
    readonly deltas: readonly number[],
    /** ‖consensus‖, the norm of the averaged parameters. */
    readonly postNorm: number,
    /** Per rank, ‖pre‖ of its parameters before the sync; undefined unless every rank sent one. */
    readonly preNorms?: readonly number[],
  ) {}

  /**
   * Build the report from the acks of one reduce.
   * @param worldSize Ranks in the run; ranks without an ack get delta 0.
   */
  static fromAcks(worldSize: number, acks: readonly SyncAck[]): DivergenceReport {
    const deltas = new Array<number>(worldSize).fill(0);
    const pre = new Array<number>(worldSize).fill(NaN);
    let postNorm = 0;
    for (const a of acks) {
      if (!Number.isInteger(a.rank) || a.rank < 0 || a.rank >= worldSize) {
        throw new RangeError(`DivergenceReport.fromAcks: rank must be in [0, ${worldSize}), got ${a.rank}`);
      }
      deltas[a.rank] = a.divergence;
      if (a.preNorm !== undefined) pre[a.rank] = a.preNorm;
      postNorm = a.postNorm;
    }
    // Pre-norms only when every ack carried one; ranks without an ack (dead) read NaN.
    const allPre = acks.length > 0 && acks.every((a) => a.preNorm !== undefined);
    return new DivergenceReport(deltas, postNorm, allPre ? pre : undefined);
  }

  /** D = max_r deltas[r] (0 for an empty report); what the guards read. */
  maxDelta(): number {
    let d = 0;
    for (const x of this.deltas) if (x > d) d = x;
    return d;
  }

  /**
   * Cosine between each rank's pre-sync parameters and the consensus, from the law of
   * cosines: `(pre² + post² - (δ·post)²) / (2·pre·post)`, clamped to [-1, 1]; NaN where a
   * norm is 0. Undefined without pre-norms.
   */
  cosines(): number[] | undefined {
    if (!this.preNorms) return undefined;
    const post = this.postNorm;
    return this.preNorms.map((pre, r) => {
      if (!(pre > 0 && post > 0)) return NaN;
      const d = this.deltas[r] * post;
      return Math.min(1, Math.max(-1, (pre * pre + post * post - d * d) / (2 * pre * post)));
    });
  }

  /** Magnitude shift `pre - post` per rank; undefined without pre-norms. */
  magnitudeShifts(): number[] | undefined {
    return this.preNorms?.map((pre) => pre - this.postNorm);
  }
}

/** A pluggable convergence guard (flodl `ConvergenceGuard`). */
export interface ConvergenceGuard {
  /** The guard's name, for the timeline and messages (`"TrendGuard"`). */
  readonly name: string;
  /**
   * Verdict for one reduce.
   * @param kUsed Σ n_r, batches the cohort ran this window.
   * @param kMax max n_r.
   */
  report(div: DivergenceReport, kUsed: number, kMax: number): Verdict;
  /** Name/value pairs for the timeline (GuardTelemetry); empty when there is nothing to say. */
  telemetry(): [string, number][];
  /** Forget what the guard has seen (its ring, EMA, streaks); its settings stay. */
  reset(): void;
  /** State persisted in checkpoints (TrendGuard's ring; empty for the others). */
  trendHistory(): number[];
  /** An independent copy with the same settings and state. */
  clone(): ConvergenceGuard;
}

const STABLE: Verdict = { kind: "stable" };

/** Always Stable: overhead auto-tune alone drives the anchor. */
export class NoGuard implements ConvergenceGuard {
  /** `"NoGuard"`. */
  readonly name = "NoGuard";
  report(_div: DivergenceReport, _kUsed?: number, _kMax?: number): Verdict {
    return STABLE;
  }
  telemetry(): [string, number][] {
    return [];
  }
  /** Nothing to forget: NoGuard keeps no state. */
  reset(): void {}
  trendHistory(): number[] {
    return [];
  }
  /** A new NoGuard. */
  clone(): NoGuard {
    return new NoGuard();
  }
}

/** Samples TrendGuard keeps. */
export const TREND_RING = 5;

/**
 * SuppressGrowth when the last three D values rise strictly and the latest exceeds the
 * threshold; otherwise Stable. Never nudges.
 * @example
 * ```ts
 * import { DivergenceReport, TrendGuard } from "./guards.ts";
 * const g = new TrendGuard(0.05);
 * for (const d of [0.04, 0.05, 0.06]) g.report(new DivergenceReport([d], 1), 1, 1); // last: suppressGrowth
 * ```
 */
export class TrendGuard implements ConvergenceGuard {
  /** `"TrendGuard"`. */
  readonly name = "TrendGuard";
  #ring: number[] = [];

  /**
   * A TrendGuard with an empty ring.
   * @param threshold Floor the rising trend must clear; 0.01 when constructed directly (the builder uses 0.05).
   * @throws {RangeError} When the threshold is not finite and >= 0.
   */
  constructor(/** Floor the latest D must exceed for SuppressGrowth. */ readonly threshold = 0.01) {
    if (!(Number.isFinite(threshold) && threshold >= 0)) {
      throw new RangeError(`TrendGuard: threshold must be finite and >= 0, got ${threshold}`);
    }
  }

  /** Seed the ring (resume); only the newest 5 values are kept. */
  withHistory(history: readonly number[]): this {
    this.#ring = history.slice(-TREND_RING);
    return this;
  }

  report(div: DivergenceReport, _kUsed?: number, _kMax?: number): Verdict {
    this.#ring.push(div.maxDelta());
    if (this.#ring.length > TREND_RING) this.#ring.shift();
    const n = this.#ring.length;
    if (n < 3) return STABLE;
    const [a, b, c] = this.#ring.slice(n - 3);
    return a < b && b < c && c > this.threshold ? { kind: "suppressGrowth" } : STABLE;
  }

  telemetry(): [string, number][] {
    return [];
  }
  /** Empty the ring of D values. */
  reset(): void {
    this.#ring = [];
  }
  trendHistory(): number[] {
    return [...this.#ring];
  }
  /** A TrendGuard with the same threshold and a copy of the ring. */
  clone(): TrendGuard {
    return new TrendGuard(this.threshold).withHistory(this.#ring);
  }
}

/** D below this carries no rate information (the estimator's previous value resets). */
export const MSF_MIN_D = 1e-8;

/**
 * Rate detector: `λ_raw = ln(D_t / D_{t-1}) / k_max`, bias-corrected EMA; a
 * sustained λ above the suppress / nudge thresholds answers SuppressGrowth / NudgeDown.
 * Builder methods reject out-of-range values (flodl clamps `withAlpha`).
 * @example
 * ```ts
 * import { MsfGuard } from "./guards.ts";
 * const g = new MsfGuard().withSuppress(1e-3, 3).withNudge(1e-2, 3, 0.5);
 * ```
 */
export class MsfGuard implements ConvergenceGuard {
  /** `"MsfGuard"`. */
  readonly name = "MsfGuard";
  /** λ_ema above this counts toward SuppressGrowth; default 1e-3 (`withSuppress`). */
  suppressThreshold = 1e-3;
  /** Consecutive events above `suppressThreshold` that answer SuppressGrowth; default 3. */
  suppressSustain = 3;
  /** λ_ema above this counts toward NudgeDown; default 1e-2 (`withNudge`; ∞ after `withoutNudge`). */
  nudgeThreshold = 1e-2;
  /** Consecutive events above `nudgeThreshold` that answer NudgeDown; default 3. */
  nudgeSustain = 3;
  /** The factor of a NudgeDown verdict, [0.1, 1]; default 0.5. */
  nudgeFactor = 0.5;
  /** EMA weight of the previous value, (0, 1]; default 0.9 (`withAlpha`). */
  alpha = 0.9;
  #prevD: number | null = null;
  #ema = 0;
  #samples = 0;
  #lambdaRaw = NaN;
  #lambdaEma = NaN;
  #suppressStreak = 0;
  #nudgeStreak = 0;

  /** SuppressGrowth after `n` consecutive events with λ_ema > `th`. */
  withSuppress(th: number, n: number): this {
    checkThreshold("withSuppress", th);
    checkSustain("withSuppress", n);
    this.suppressThreshold = th;
    this.suppressSustain = n;
    return this;
  }

  /** NudgeDown{factor} after `n` consecutive events with λ_ema > `th`; factor in [0.1, 1]. */
  withNudge(th: number, n: number, factor: number): this {
    checkThreshold("withNudge", th);
    checkSustain("withNudge", n);
    if (!(factor >= 0.1 && factor <= 1)) {
      throw new RangeError(`MsfGuard.withNudge: factor must be in [0.1, 1], got ${factor}`);
    }
    this.nudgeThreshold = th;
    this.nudgeSustain = n;
    this.nudgeFactor = factor;
    return this;
  }

  /** Never nudge (threshold ∞). */
  withoutNudge(): this {
    this.nudgeThreshold = Infinity;
    return this;
  }

  /** EMA weight of the previous value, in (0, 1]. */
  withAlpha(a: number): this {
    if (!(a > 0 && a <= 1)) throw new RangeError(`MsfGuard.withAlpha: alpha must be in (0, 1], got ${a}`);
    this.alpha = a;
    return this;
  }

  report(div: DivergenceReport, _kUsed: number, kMax: number): Verdict {
    const d = div.maxDelta();
    let fresh = false;
    if (d > MSF_MIN_D && this.#prevD !== null && kMax > 0) {
      this.#lambdaRaw = Math.log(d / this.#prevD) / kMax;
      this.#samples += 1;
      this.#ema = this.alpha * this.#ema + (1 - this.alpha) * this.#lambdaRaw;
      // NOTE: with alpha = 1 the EMA never moves and 1 - alpha^t is 0; report the raw EMA (0) then.
      const debias = 1 - this.alpha ** this.#samples;
      this.#lambdaEma = debias > 0 ? this.#ema / debias : this.#ema;
      fresh = true;
    }
    this.#prevD = d > MSF_MIN_D ? d : null;
    // An event without a fresh rate sample (D collapsed, or nobody moved) breaks both streaks.
    this.#suppressStreak = fresh && this.#lambdaEma > this.suppressThreshold ? this.#suppressStreak + 1 : 0;
    this.#nudgeStreak = fresh && this.#lambdaEma > this.nudgeThreshold ? this.#nudgeStreak + 1 : 0;
    const suppress = this.#suppressStreak >= this.suppressSustain;
    const nudge = this.#nudgeStreak >= this.nudgeSustain;
    if (suppress) this.#suppressStreak = 0;
    if (nudge) this.#nudgeStreak = 0;
    if (nudge) return { kind: "nudgeDown", factor: this.nudgeFactor };
    return suppress ? { kind: "suppressGrowth" } : STABLE;
  }

  telemetry(): [string, number][] {
    return this.#samples > 0 ? [["lambda_raw", this.#lambdaRaw], ["lambda_ema", this.#lambdaEma]] : [];
  }

  /** Forget the previous D, the EMA and both streaks; the thresholds stay. */
  reset(): void {
    this.#prevD = null;
    this.#ema = 0;
    this.#samples = 0;
    this.#lambdaRaw = this.#lambdaEma = NaN;
    this.#suppressStreak = this.#nudgeStreak = 0;
  }

  trendHistory(): number[] {
    return [];
  }

  /** An MsfGuard with the same settings, EMA and streaks. */
  clone(): MsfGuard {
    const g = new MsfGuard();
    Object.assign(g, {
      suppressThreshold: this.suppressThreshold,
      suppressSustain: this.suppressSustain,
      nudgeThreshold: this.nudgeThreshold,
      nudgeSustain: this.nudgeSustain,
      nudgeFactor: this.nudgeFactor,
      alpha: this.alpha,
    });
    g.#prevD = this.#prevD;
    g.#ema = this.#ema;
    g.#samples = this.#samples;
    g.#lambdaRaw = this.#lambdaRaw;
    g.#lambdaEma = this.#lambdaEma;
    g.#suppressStreak = this.#suppressStreak;
    g.#nudgeStreak = this.#nudgeStreak;
    return g;
  }
}

function checkThreshold(method: string, th: number): void {
  if (!(th >= 0)) throw new RangeError(`MsfGuard.${method}: threshold must be >= 0, got ${th}`);
}

function checkSustain(method: string, n: number): void {
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(`MsfGuard.${method}: sustain must be an integer >= 1, got ${n}`);
  }
}

/** Inputs of the guard precedence rule. */
export interface GuardChoice {
  explicit?: ConvergenceGuard;
  noDivergenceGuard: boolean;
  divergenceThreshold?: number;
  /** EASGD α in effect (undefined when the blend is off); raises the default threshold to 0.3. */
  easgdAlpha?: number;
  /** Saved TrendGuard ring (resume), used by the default guard only. */
  trendHistory?: readonly number[];
}

/**
 * The guard of a run: explicit guard > `noDivergenceGuard` (NoGuard) >
 * TrendGuard(divergenceThreshold, else 0.05, or 0.3 with EASGD), seeded with the saved ring.
 * @example
 * ```ts
 * import { resolveGuard } from "./guards.ts";
 * resolveGuard({ noDivergenceGuard: false, easgdAlpha: 0.5 }).name; // "TrendGuard" (threshold 0.3)
 * ```
 */
export function resolveGuard(c: GuardChoice): ConvergenceGuard {
  if (c.explicit) return c.explicit;
  if (c.noDivergenceGuard) return new NoGuard();
  const th = c.divergenceThreshold ??
    (c.easgdAlpha !== undefined ? DEFAULT_TREND_THRESHOLD_EASGD : DEFAULT_TREND_THRESHOLD);
  return new TrendGuard(th).withHistory(c.trendHistory ?? []);
}
