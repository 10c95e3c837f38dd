/**
 * ElChe's pure rules: anchor-rank election, batch counts with dead zone,
 * slack, max_batch_diff stepping and the window cap, and the growth proposal. The `ElChe`
 * class (elche.ts) holds the state and calls these.
 */

/** Ranks within 15% of the slowest form the slow cohort; clearly fast ranks never anchor. */
export const COHORT_BAND = 0.15;
/** A challenger must be 10% slower than the current anchor rank to take over (stickiness). */
export const DOMINANCE_MARGIN = 0.10;
/** Largest count ratio between a fast rank and the anchor rank. */
export const SPEED_RATIO_CAP = 64;
/** Count changes within 5% are ignored (dead zone; [0.5] used 10%). */
export const DEAD_ZONE = 0.05;
/** A grow proposal at most doubles A per cycle. */
export const GROWTH_STEP_CAP = 2;
/** Before Stable, growth fires only at overhead above 2τ. */
export const WARMUP_GROWTH_MARGIN = 2;

/**
 * The anchor rank: among alive ranks with timing, the slow cohort is every rank
 * with m >= 0.85 · max m; a lone member wins; the current anchor stays unless the slowest
 * other member is more than 10% slower; otherwise the lowest cohort rank. Null without timing.
 */
export function electAnchor(m: readonly number[], alive: readonly boolean[], current: number | null): number | null {
  const ranks = m.flatMap((_, r) => (alive[r] ? [r] : []));
  const maxM = Math.max(0, ...ranks.map((r) => m[r]));
  if (maxM <= 0) return null;
  const cohort = ranks.filter((r) => m[r] >= (1 - COHORT_BAND) * maxM);
  if (cohort.length === 1) return cohort[0];
  if (current !== null && cohort.includes(current)) {
    let ch = -1;
    for (const r of cohort) if (r !== current && (ch < 0 || m[r] > m[ch])) ch = r;
    return m[ch] > m[current] * (1 + DOMINANCE_MARGIN) ? ch : current;
  }
  return cohort[0];
}

/** Inputs of {@link recomputeCounts}. */
export interface CountsInput {
  anchor: number;
  /** m[r], smoothed ms/batch (0 = no timing). */
  m: readonly number[];
  /** m of the anchor rank; <= 0 means no timing: equal counts (or the speed hint's). */
  slow: number;
  /** Current c[r]; dead ranks are left untouched. */
  counts: readonly number[];
  alive: readonly boolean[];
  /** Staged callback time per rank, ms. */
  slackMs: readonly number[];
  calibrated: boolean;
  maxBatchDiff?: number;
  maxTotal?: number;
  hint?: { slow: number; ratio: number } | null;
}

/**
 * New batch counts: base `max(1, round(A · min(slow / m[r], 64)))` (A for the
 * anchor's rate or without timing), minus the callback slack in batches; changes inside
 * the 5% dead zone are ignored unless uncalibrated or slack applies; with max_batch_diff
 * d a calibrated count moves by at most d. Then the window cap.
 */
export function recomputeCounts(i: CountsInput): { counts: number[]; capBinding: boolean } {
  const A = i.anchor, d = i.maxBatchDiff, out = [...i.counts];
  for (let r = 0; r < out.length; r++) {
    if (!i.alive[r]) continue;
    const m = i.m[r];
    let base: number;
    if (i.slow <= 0 || m <= 0) {
      const h = i.hint;
      base = h && i.slow <= 0 && r !== h.slow ? Math.round(A * h.ratio) : A;
    } else if (Math.abs(m - i.slow) < 1e-6) base = A;
    else base = Math.max(1, Math.round(A * Math.min(i.slow / m, SPEED_RATIO_CAP)));
    const slackB = i.slackMs[r] > 0 && m > 0 ? Math.ceil(i.slackMs[r] / m) : 0;
    const target = Math.max(1, base - slackB);
    const c = out[r];
    if (Math.abs(target - c) > DEAD_ZONE * c || !i.calibrated || slackB > 0) {
      out[r] = d !== undefined && i.calibrated ? Math.max(1, c + Math.min(d, Math.max(-d, target - c))) : target;
    }
  }
  return { counts: out, capBinding: applyWindowCap(out, i.alive, i.maxTotal) };
}

/**
 * Window cap in place: when Σ c over alive ranks exceeds `cap`, scale each to
 * max(1, floor(c · cap / Σ)) and give the rounding remainder to the largest count (lowest
 * rank on ties). Returns whether the cap binds.
 */
export function applyWindowCap(c: number[], alive: readonly boolean[], cap: number | undefined): boolean {
  const ranks = c.flatMap((_, r) => (alive[r] ? [r] : []));
  const sum = ranks.reduce((a, r) => a + c[r], 0);
  if (cap === undefined || sum <= cap) return false;
  for (const r of ranks) c[r] = Math.max(1, Math.floor((c[r] * cap) / sum));
  const left = cap - ranks.reduce((a, r) => a + c[r], 0);
  if (left > 0) {
    let big = ranks[0];
    for (const r of ranks) if (c[r] > c[big]) big = r;
    c[big] += left;
  }
  return true;
}

/** Inputs of {@link proposeGrowth}. */
export interface GrowthInput {
  anchor: number;
  minAnchor: number;
  maxAnchor: number;
  /** τ. */
  overheadTarget: number;
  /** m of the anchor rank (marginal ms/batch). */
  marginalMs: number;
  /** Window fill of the anchor rank, ms. */
  fillMs: number;
  /** Previous reduce's wall time, ms. */
  syncMs: number;
  /** Phase >= Stable (fires at τ, else at 2τ). */
  stable: boolean;
}

/**
 * Window-pressure growth: overhead = fixed / (A · marginal + fixed) with fixed =
 * reduce + fill; above the firing point, A grows by min(overhead / τ, 2), clamped to
 * [minAnchor, maxAnchor]. Returns the new A, or null when it would not grow.
 */
export function proposeGrowth(g: GrowthInput): number | null {
  if (!(g.marginalMs > 0)) return null;
  const fixed = Math.max(0, g.syncMs) + Math.max(0, g.fillMs);
  if (!(fixed > 0)) return null;
  const overhead = fixed / (g.anchor * g.marginalMs + fixed);
  const fireAt = g.stable ? g.overheadTarget : WARMUP_GROWTH_MARGIN * g.overheadTarget;
  if (overhead <= fireAt) return null;
  const scale = Math.min(overhead / g.overheadTarget, GROWTH_STEP_CAP);
  const next = Math.min(Math.max(Math.ceil(g.anchor * scale), g.minAnchor), g.maxAnchor);
  return next > g.anchor ? next : null;
}
