/**
 * The reduce trigger gate and the throttle rule: pure decisions the
 * coordinator takes each tick from per-rank step counts.
 */

import type { ApplyPolicy } from "./config.ts";

/** Inputs of {@link shouldAverage}. */
export interface TriggerInput {
  policy: ApplyPolicy;
  alive: readonly boolean[];
  /** n_r, steps since the last reduce. */
  steps: readonly number[];
  /** ElChe's c[r]. */
  counts: readonly number[];
  /** Progressive only: nothing in flight anywhere and the rank's epoch pool is drained. */
  quiesced?: readonly boolean[];
  /** A CPU cycle is still pending (or, NCCL, the previous SyncNow is not acked by all). */
  pending?: boolean;
}

/**
 * Whether a reduce fires now (`should_average`, [0.7] count trigger): no cycle
 * pending, some alive rank moved, and every alive rank did `n_r >= 1` (Sync) or
 * `n_r >= c[r]` (Cadence/Async), or is quiesced. Dead ranks are skipped.
 * @example
 * ```ts
 * import { shouldAverage } from "./trigger.ts";
 * shouldAverage({ policy: "cadence", alive: [true, true], steps: [10, 19], counts: [10, 20] }); // false
 * ```
 */
export function shouldAverage(t: TriggerInput): boolean {
  if (t.pending) return false;
  let anyAlive = false, anyMoved = false;
  for (let r = 0; r < t.alive.length; r++) {
    if (!t.alive[r]) continue;
    anyAlive = true;
    if (t.steps[r] > 0) anyMoved = true;
    const need = t.policy === "sync" ? 1 : t.counts[r];
    if (!(t.steps[r] >= need || t.quiesced?.[r])) return false;
  }
  return anyAlive && anyMoved;
}

/**
 * Ranks to throttle (CPU backend): alive ranks with `n_r > min_alive n + d`
 * that were not already throttled this window.
 * @param d max_batch_diff; undefined = unlimited (nobody is throttled).
 */
export function throttleRanks(
  steps: readonly number[],
  alive: readonly boolean[],
  d: number | undefined,
  alreadyThrottled: ReadonlySet<number> = new Set(),
): number[] {
  if (d === undefined) return [];
  const live = steps.flatMap((n, r) => (alive[r] ? [n] : []));
  if (live.length === 0) return [];
  const min = Math.min(...live);
  return steps.flatMap((n, r) => (alive[r] && n > min + d && !alreadyThrottled.has(r) ? [r] : []));
}
