/**
 * The data plane's counters as flat, named numbers (the record stream's `metrics` keys):
 * what a rank reports per chunk and the coordinator folds per epoch. Two kinds:
 * counters (hits, misses, evictions, waits) travel as deltas since the last report and
 * add up; gauges (bytes and samples held now) travel as they are and the latest wins.
 */
import type { DataPlaneStats } from "./data_plane.ts";

/** Counters: events since the previous report (they add across chunks and ranks). */
export const DATA_COUNTERS = [
  "data_ram_hits",
  "data_disk_hits",
  "data_source_reads",
  "data_ram_evictions",
  "data_disk_spills",
  "data_disk_drops",
  "data_vram_gathered",
  "data_vram_uploaded",
  "data_wait_ms",
] as const;

/** Gauges: what a tier holds now (the latest report wins within a rank; ranks add up). */
export const DATA_GAUGES = ["data_ram_bytes", "data_disk_bytes", "data_vram_resident", "data_vram_bytes"] as const;

/** One rank's data-plane values, keyed as in the record stream. */
export type DataCounters = Record<string, number>;

/** Every key of {@link DATA_COUNTERS} and {@link DATA_GAUGES}, as the plane's stats give them now (cumulative). */
export function planeTotals(s: DataPlaneStats): DataCounters {
  const out: DataCounters = { data_wait_ms: s.waitMs };
  if (s.tiers) {
    const t = s.tiers;
    Object.assign(out, {
      data_ram_hits: t.ramHits,
      data_disk_hits: t.diskHits,
      data_source_reads: t.sourceReads,
      data_ram_evictions: t.evictions,
      data_disk_spills: t.spills,
      data_disk_drops: t.drops,
      data_ram_bytes: t.ramBytes,
      data_disk_bytes: t.diskBytes,
    });
  }
  if (s.vram) {
    Object.assign(out, {
      data_vram_gathered: s.vram.gathered,
      data_vram_uploaded: s.vram.uploaded,
      data_vram_resident: s.vram.resident,
      data_vram_bytes: s.vram.bytes,
    });
  }
  return out;
}

/**
 * A report from two totals: counters as `now − before`, gauges as `now`.
 * @example
 * ```ts
 * import { counterDelta } from "./plane_counters.ts";
 * counterDelta({ data_ram_hits: 5, data_ram_bytes: 9 }, { data_ram_hits: 2, data_ram_bytes: 7 });
 * // { data_ram_hits: 3, data_ram_bytes: 9 }
 * ```
 */
export function counterDelta(now: DataCounters, before: DataCounters): DataCounters {
  const out: DataCounters = {};
  for (const [k, v] of Object.entries(now)) out[k] = isGauge(k) ? v : v - (before[k] ?? 0);
  return out;
}

/**
 * Fold a later report into an accumulated one (same rank): counters add, gauges take the later value.
 * @example
 * ```ts
 * import { foldCounters } from "./plane_counters.ts";
 * foldCounters({ data_ram_hits: 3, data_ram_bytes: 9 }, { data_ram_hits: 4, data_ram_bytes: 8 });
 * // { data_ram_hits: 7, data_ram_bytes: 8 }
 * ```
 */
export function foldCounters(acc: DataCounters, later: DataCounters): DataCounters {
  const out = { ...acc };
  for (const [k, v] of Object.entries(later)) out[k] = isGauge(k) ? v : (out[k] ?? 0) + v;
  return out;
}

function isGauge(key: string): boolean {
  return (DATA_GAUGES as readonly string[]).includes(key);
}
