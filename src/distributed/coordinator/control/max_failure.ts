/**
 * When a run with dead ranks becomes unrecoverable: the user's
 * `maxFailure` threshold, the backend floor and the reduce-stall ceiling.
 */

import type { AverageBackend } from "./policy.ts";

/** Why a run stops and saves; the `save_reason` values of `<stem>.meta.json`. */
export type SaveReason =
  | "graceful_shutdown"
  | "max_failure_exceeded"
  | "single_survivor"
  | "all_ranks_lost"
  | "reduce_stall"
  | "checkpoint";

/**
 * How many dead ranks make a run unrecoverable: an absolute count or a share of the world.
 * Same meaning as flodl's `MaxFailureThreshold`; unset (the default) tolerates any partial loss.
 * @example
 * ```ts
 * import { MaxFailureThreshold } from "./max_failure.ts";
 * MaxFailureThreshold.percent(0.5).limit(4); // 2: the run stops when 2 of 4 ranks are dead
 * ```
 */
export class MaxFailureThreshold {
  private constructor(readonly kind: "absolute" | "percent", readonly value: number) {}

  /**
   * Stop when `n` ranks are dead.
   * @param n Dead ranks tolerated before stopping, an integer >= 1.
   * @throws {RangeError} When `n` is not an integer >= 1.
   */
  static absolute(n: number): MaxFailureThreshold {
    if (!Number.isInteger(n) || n < 1) {
      throw new RangeError(`MaxFailureThreshold.absolute: n must be an integer >= 1, got ${n}`);
    }
    return new MaxFailureThreshold("absolute", n);
  }

  /**
   * Stop when `ceil(p · W)` ranks are dead.
   * @param p Share of the world in (0, 1]; flodl clamps to [0, 1], we reject instead.
   * @throws {RangeError} When `p` is outside (0, 1].
   */
  static percent(p: number): MaxFailureThreshold {
    if (!(p > 0 && p <= 1)) throw new RangeError(`MaxFailureThreshold.percent: p must be in (0, 1], got ${p}`);
    return new MaxFailureThreshold("percent", p);
  }

  /**
   * Dead-rank count at which the run is declared unrecoverable.
   * NOTE: `ceil(p · W)` is taken with a 1e-9 tolerance so that 0.3 · 10 = 3.0000000000000004 gives 3, not 4.
   * @param worldSize Ranks at the start of the run (>= 1).
   */
  limit(worldSize: number): number {
    if (this.kind === "absolute") return this.value;
    return Math.max(1, Math.ceil(this.value * worldSize - 1e-9));
  }

  /** True when `dead` reaches the limit. */
  exceeded(dead: number, worldSize: number): boolean {
    return dead >= this.limit(worldSize);
  }

  /** JSON form: `{ absolute: n }` or `{ percent: p }`. */
  toJSON(): Record<string, number> {
    return { [this.kind]: this.value };
  }
}

/**
 * The reason a run must stop after a death, or null when it continues: the
 * user threshold first, then the backend floor (CPU needs >= 1 survivor, NCCL >= 2).
 * @param dead Ranks declared dead so far.
 * @param worldSize Ranks at the start of the run.
 */
export function unrecoverableReason(
  dead: number,
  worldSize: number,
  backend: AverageBackend,
  threshold?: MaxFailureThreshold,
): SaveReason | null {
  const survivors = worldSize - dead;
  if (survivors <= 0) return "all_ranks_lost";
  if (threshold && threshold.exceeded(dead, worldSize)) return "max_failure_exceeded";
  if (backend === "nccl" && survivors < 2) return "single_survivor";
  return null;
}

/** Floor of the reduce-stall ceiling, seconds (`max(10 × heartbeat, 300 s)`). */
export const STALL_CEILING_FLOOR_SECS = 300;
let stallFloorSecs = STALL_CEILING_FLOOR_SECS;

/**
 * Milliseconds a reduce, or a window the reduce waits on, may make no progress with the
 * cohort alive before `reduce_stall` shutdown.
 */
export function stallCeilingMs(heartbeatTimeoutSecs: number): number {
  return 1000 * Math.max(10 * heartbeatTimeoutSecs, stallFloorSecs);
}

/**
 * Tests only: lower the 300 s floor so a stall can be provoked in seconds; `undefined`
 * restores the spec's floor. Not exported from the package.
 */
export function overrideStallFloorSecsForTests(secs: number | undefined): void {
  stallFloorSecs = secs ?? STALL_CEILING_FLOOR_SECS;
}
