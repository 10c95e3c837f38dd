/**
 * How many batches the next chunk of a rank holds under progressive dispatch
 * (flodl's chunk sizing, rules 1–5). Pure functions; the chunk pool applies them.
 */

import type { ApplyPolicy } from "../control/config.ts";

/** Smallest Async chunk (probe and calibrated), batches. */
export const MIN_ASYNC_CHUNK = 4;
/** Uncalibrated Async probes each rank with about a tenth of its equal share: P / (W · 10 · B). */
export const PROBE_DIVISOR = 10;

/** True when the pool's remainder is planned as the epoch's last window (rule 1: rem < Σ_alive c + W_alive). */
export function isFinalWindow(rem: number, counts: readonly number[], alive: readonly boolean[]): boolean {
  let sum = 0, n = 0;
  counts.forEach((c, r) => {
    if (alive[r]) {
      sum += c;
      n += 1;
    }
  });
  return rem < sum + n;
}

/**
 * Rule 1, barrier-paced final window: split the pool's last `rem` batches over alive ranks.
 * If rem >= Σc every rank gets c[r] and the extra batches go one each, round-robin, to the
 * non-fastest ranks, slowest first (smallest c; ties lower rank). Otherwise a largest-remainder
 * split proportional to c, then every rank left with exactly one batch moves it onto the
 * smallest peer (by allotment; ties lower rank) that already has >= 1.
 * @example
 * ```ts
 * import { finalWindowSplit } from "./chunk_size.ts";
 * finalWindowSplit(7, [2, 4], [true, true]); // [3, 4]: one extra to the slower rank 0
 * ```
 */
export function finalWindowSplit(rem: number, counts: readonly number[], alive: readonly boolean[]): number[] {
  const ranks = counts.flatMap((_, r) => (alive[r] ? [r] : []));
  const out = new Array<number>(counts.length).fill(0);
  if (ranks.length === 0 || rem <= 0) return out;
  const sum = ranks.reduce((a, r) => a + counts[r], 0);
  if (rem >= sum) {
    for (const r of ranks) out[r] = counts[r];
    let fastest = ranks[0];
    for (const r of ranks) if (counts[r] > counts[fastest]) fastest = r;
    const slow = ranks.filter((r) => r !== fastest).sort((a, b) => counts[a] - counts[b] || a - b);
    if (slow.length === 0) slow.push(fastest);
    for (let i = 0, extra = rem - sum; extra > 0; i = (i + 1) % slow.length, extra--) out[slow[i]] += 1;
    return out;
  }
  const quota = ranks.map((r) => (rem * counts[r]) / sum);
  ranks.forEach((r, i) => (out[r] = Math.floor(quota[i])));
  let left = rem - ranks.reduce((a, r) => a + out[r], 0);
  const byFrac = ranks.map((r, i) => ({ r, f: quota[i] - Math.floor(quota[i]) })).sort((a, b) =>
    b.f - a.f || a.r - b.r
  );
  for (let i = 0; left > 0; i++, left--) out[byFrac[i % byFrac.length].r] += 1;
  for (const r of ranks) {
    if (out[r] !== 1) continue;
    let peer = -1;
    for (const p of ranks) if (p !== r && out[p] >= 1 && (peer < 0 || out[p] < out[peer])) peer = p;
    if (peer < 0) continue;
    out[peer] += 1;
    out[r] = 0;
  }
  return out;
}

/** Inputs of {@link chunkSize}. */
export interface ChunkSizeInput {
  policy: ApplyPolicy;
  rank: number;
  /** Batches left in the epoch's pool. */
  rem: number;
  /** ElChe's c[r]. */
  counts: readonly number[];
  alive: readonly boolean[];
  /** ElChe has timing (or a speed hint seeded the counts). */
  calibrated: boolean;
  hinted?: boolean;
  /** Pick space P and batch size B (Async probe size). */
  pickSpace: number;
  batchSize: number;
  /** n_r, steps the rank took since the last reduce. */
  stepsSinceAvg: number;
  /** Async steps allowed past c[r]. */
  maxOvershoot: number;
}

/**
 * Batches of a rank's next chunk outside the final window (rules 2–5); 0 means "hold".
 * Barrier-paced (Sync, Cadence): `min(c[r] - n_r, rem)`, i.e. the rest of the window
 * (c[r] at a window start). Async: edge schedule `min(c[r], rem)` when rem < Σc; probe
 * `max(4, floor(P / (W·10·B)))` uncalibrated; else `max(4, ceil(rem · c[r] / Σc))`. Async
 * sizes are capped to rem and, except the probe, to `max(1, c[r] + overshoot - n_r)`,
 * and a rank already at its budget holds.
 * @example
 * ```ts
 * import { chunkSize } from "./chunk_size.ts";
 * chunkSize({ policy: "cadence", rank: 0, rem: 100, counts: [10, 20], alive: [true, true], calibrated: true,
 *   pickSpace: 6400, batchSize: 64, stepsSinceAvg: 0, maxOvershoot: 0 }); // 10
 * ```
 */
export function chunkSize(i: ChunkSizeInput): number {
  const c = i.counts[i.rank], n = i.stepsSinceAvg;
  if (i.rem <= 0) return 0;
  if (i.policy !== "async") return Math.max(0, Math.min(c - n, i.rem));
  const budgetLeft = c + i.maxOvershoot - n;
  if (budgetLeft <= 0) return 0;
  const cap = Math.max(1, budgetLeft);
  let sum = 0, aliveN = 0;
  i.counts.forEach((x, r) => {
    if (i.alive[r]) {
      sum += x;
      aliveN += 1;
    }
  });
  if (i.rem < sum) return Math.min(c, i.rem, cap);
  if (!i.calibrated && !i.hinted) {
    return Math.min(i.rem, Math.max(MIN_ASYNC_CHUNK, Math.floor(i.pickSpace / (aliveN * PROBE_DIVISOR * i.batchSize))));
  }
  return Math.min(Math.max(MIN_ASYNC_CHUNK, Math.ceil((i.rem * c) / sum)), i.rem, cap);
}
