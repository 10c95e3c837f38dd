/**
 * What of ElChe outlives a run: its calibration phase (and the calibration counts that
 * move it on), the `elche_state` object a bundle saves, and the check a resume runs on a
 * saved one before the controller takes it. The `ElChe` class (elche.ts) exports its
 * fields into this shape and loads them back through {@link restoreElCheState}.
 */

/** Calibration phase; election is frozen before Stable once an anchor rank is pinned. */
export type Phase = "probe" | "warmup" | "stable" | "mature";
const PHASE_RANK: Record<Phase, number> = { probe: 0, warmup: 1, stable: 2, mature: 3 };

/** Calibrations to reach Stable. */
export const STABLE_AT = 5;
/** Calibrations to reach Mature. */
export const MATURE_AT = 20;

/** Whether `phase` is `p` or a later one. */
export function phaseAtLeast(phase: Phase, p: Phase): boolean {
  return PHASE_RANK[phase] >= PHASE_RANK[p];
}

/** The phase after `calibrations` timing reports: it only moves on, never back. */
export function phaseAfter(phase: Phase, calibrations: number): Phase {
  const n = calibrations;
  const next: Phase = n >= MATURE_AT ? "mature" : n >= STABLE_AT ? "stable" : n >= 1 ? "warmup" : "probe";
  return PHASE_RANK[next] > PHASE_RANK[phase] ? next : phase;
}

/** ElChe's persisted state: the `elche_state` object of `<stem>.meta.json`, keys verbatim. */
export interface ElCheState {
  /** The anchor A: batches the anchor rank runs per window (>= 1). */
  anchor: number;
  /** The anchor rank (the slowest, whose window defines A), or null before election. */
  anchor_rank: number | null;
  /** Each rank's mean ms per batch over its trust window (0 when it has none); one entry per rank. */
  smoothed_ms_per_batch: number[];
  /** Calibration phase reached. */
  phase: Phase;
  /** Timing reports that calibrated the counts (they move the phase on). */
  calibration_count: number;
}

/** A saved state as the controller takes it back. */
export interface RestoredElChe {
  /** The saved anchor, kept within [1, maxAnchor]. */
  anchor: number;
  anchorRank: number | null;
  /** Each rank's trust window, seeded with one sample (the saved mean), empty where it was 0. */
  trustWindows: number[][];
  phase: Phase;
  calibrationCount: number;
}

/**
 * Check a saved state against this run and turn it into the controller's fields. The
 * saved anchor is kept within the new config's [1, maxAnchor] (user knobs are not saved).
 * @throws {RangeError} When the saved world size or a field does not fit.
 */
export function restoreElCheState(s: ElCheState, worldSize: number, maxAnchor: number): RestoredElChe {
  const W = worldSize;
  if (s.smoothed_ms_per_batch.length !== W) {
    throw new RangeError(
      `ElChe.importState: saved world size is ${s.smoothed_ms_per_batch.length}, this run has ${W}`,
    );
  }
  if (!Number.isInteger(s.anchor) || s.anchor < 1) {
    throw new RangeError(`ElChe.importState: anchor must be an integer >= 1, got ${s.anchor}`);
  }
  if (!(s.phase in PHASE_RANK)) throw new RangeError(`ElChe.importState: unknown phase, got ${s.phase}`);
  const b = s.anchor_rank;
  if (b !== null && (!Number.isInteger(b) || b < 0 || b >= W)) {
    throw new RangeError(`ElChe.importState anchor_rank: rank must be in [0, ${W}), got ${b}`);
  }
  return {
    anchor: Math.min(s.anchor, maxAnchor),
    anchorRank: b,
    trustWindows: s.smoothed_ms_per_batch.map((m) => (m > 0 ? [m] : [])),
    phase: s.phase,
    calibrationCount: s.calibration_count,
  };
}
