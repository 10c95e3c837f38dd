/**
 * flodl's `Timeline`: events injected by the coordinator, optional resource
 * samples, a summary, and JSON/CSV exports. The dashboard draws it as a swimlane.
 * Durations are in ms; field names follow flodl (`d_raw`, `k_used`).
 */
import { stringifyFinite } from "./json.ts";

/** One injected event (without its timestamp). */
export type TimelineEvent =
  | { kind: "EpochStart"; epoch: number }
  | { kind: "EpochEnd"; epoch: number }
  | { kind: "SyncStart"; epoch?: number }
  | { kind: "SyncEnd"; duration: number; epoch?: number }
  | { kind: "CpuAvgStart"; epoch?: number }
  | { kind: "CpuAvgEnd"; duration: number; epoch?: number }
  | { kind: "AnchorChanged"; from: number; to: number; epoch?: number }
  | { kind: "Throttle"; rank: number; epoch?: number }
  /** `device` is the idle rank's index (one adapter per rank here); the swimlane draws it on that rank's lane. */
  | { kind: "Idle"; device: number; duration: number; epoch?: number }
  | {
    kind: "Divergence";
    d_raw: number;
    k_used: number;
    k_max: number;
    step: number;
    deltas: number[];
    epoch: number;
  }
  | { kind: "GuardTelemetry"; pairs: [string, number][]; epoch?: number }
  | { kind: "Custom"; label: string; rank?: number; epoch?: number };

/** An event with its time (ms since the Unix epoch, as the clock gives it). */
export type TimelineEntry = TimelineEvent & { ts_ms: number };

/** A resource sample from a poller (only the sampled fields). */
export interface TimelineSample {
  /** When it was taken, ms since the Unix epoch (as the clock gives it). */
  ts_ms: number;
  /** Device (rank) index the sample is of. */
  device?: number;
  /** GPU utilisation in [0, 1]. */
  gpu_util?: number;
  /** Bytes allocated on the device. */
  vram_alloc?: number;
}

/** What {@link Timeline.summary} reports (flodl's timeline summary; field names are flodl's). */
export interface TimelineSummary {
  /** First to last event or sample, ms. */
  total_ms: number;
  /** Resource samples held. */
  samples: number;
  /** Events recorded. */
  events: number;
  /** Per device (rank) index: Σ Idle durations / total_ms × 100. */
  idle_pct: Record<string, number>;
  /** `SyncEnd` events. */
  sync_count: number;
  /** Mean `SyncEnd` duration, ms (0 without any). */
  sync_mean_ms: number;
  /** `CpuAvgEnd` events. */
  cpu_avg_count: number;
  /** Mean `CpuAvgEnd` duration, ms (0 without any). */
  cpu_avg_mean_ms: number;
  /** `AnchorChanged` events. */
  anchor_changes: number;
  /** `Throttle` events. */
  throttles: number;
}

/** The CSV columns, one row per event; list-valued fields (deltas, pairs) go to `data`. */
export const TIMELINE_CSV_COLUMNS = [
  "ts_ms",
  "kind",
  "rank",
  "epoch",
  "device",
  "duration",
  "from",
  "to",
  "d_raw",
  "k_used",
  "k_max",
  "step",
  "label",
  "data",
] as const;

function csvField(v: unknown): string {
  if (v === undefined || v === null) return "";
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/**
 * Events and samples of one run.
 * @example
 * ```ts
 * import { Timeline } from "./timeline.ts";
 * let t = 0;
 * const tl = new Timeline({ now: () => t });
 * tl.add({ kind: "EpochStart", epoch: 0 });
 * t = 50;
 * tl.add({ kind: "SyncEnd", duration: 4 });
 * tl.summary().sync_mean_ms; // 4
 * ```
 */
export class Timeline {
  readonly #events: TimelineEntry[] = [];
  readonly #samples: TimelineSample[] = [];
  readonly #now: () => number;
  readonly #maxSamples: number;

  /**
   * An empty timeline.
   * @param opts.now Clock in ms (default `Date.now`).
   * @param opts.maxSamples Samples kept (oldest dropped first; default 100 000).
   */
  constructor(opts: { now?: () => number; maxSamples?: number } = {}) {
    this.#now = opts.now ?? Date.now;
    this.#maxSamples = opts.maxSamples ?? 100_000;
  }

  /** Record an event now (or at `ts_ms`). */
  add(event: TimelineEvent, ts_ms = this.#now()): TimelineEntry {
    const e = { ...event, ts_ms } as TimelineEntry;
    this.#events.push(e);
    return e;
  }

  /** Record a resource sample. */
  sample(s: Omit<TimelineSample, "ts_ms"> & { ts_ms?: number }): void {
    this.#samples.push({ ...s, ts_ms: s.ts_ms ?? this.#now() });
    if (this.#samples.length > this.#maxSamples) this.#samples.shift();
  }

  /** Events in insertion order. */
  get events(): readonly TimelineEntry[] {
    return this.#events;
  }

  /** Resource samples in insertion order (at most `maxSamples`, the newest). */
  get samples(): readonly TimelineSample[] {
    return this.#samples;
  }

  /** Counts and means over the events and samples recorded so far. */
  summary(): TimelineSummary {
    const times = [...this.#events.map((e) => e.ts_ms), ...this.#samples.map((s) => s.ts_ms)];
    const total = times.length ? Math.max(...times) - Math.min(...times) : 0;
    const of = <K extends TimelineEvent["kind"]>(k: K) =>
      this.#events.filter((e): e is Extract<TimelineEntry, { kind: K }> => e.kind === k);
    const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
    const idle: Record<string, number> = {};
    for (const e of of("Idle")) idle[e.device] = (idle[e.device] ?? 0) + e.duration;
    for (const d of Object.keys(idle)) idle[d] = total > 0 ? (idle[d] / total) * 100 : 0;
    const syncs = of("SyncEnd").map((e) => e.duration);
    const avgs = of("CpuAvgEnd").map((e) => e.duration);
    return {
      total_ms: total,
      samples: this.#samples.length,
      events: this.#events.length,
      idle_pct: idle,
      sync_count: syncs.length,
      sync_mean_ms: mean(syncs),
      cpu_avg_count: avgs.length,
      cpu_avg_mean_ms: mean(avgs),
      anchor_changes: of("AnchorChanged").length,
      throttles: of("Throttle").length,
    };
  }

  /**
   * A JSON-ready object `{ summary, events, samples }` (non-finite numbers as the strings
   * "NaN"/"Infinity"/"-Infinity"), so `JSON.stringify(timeline)` works.
   */
  toJSON(): { summary: TimelineSummary; events: TimelineEntry[]; samples: TimelineSample[] } {
    return JSON.parse(stringifyFinite({ summary: this.summary(), events: this.#events, samples: this.#samples }));
  }

  /** One header row ({@link TIMELINE_CSV_COLUMNS}) and one row per event, RFC 4180 quoting. */
  toCSV(): string {
    const rows = [TIMELINE_CSV_COLUMNS.join(",")];
    for (const e of this.#events) {
      const f = e as Record<string, unknown>;
      const data = e.kind === "Divergence"
        ? e.deltas.join(";")
        : e.kind === "GuardTelemetry"
        ? e.pairs.map(([k, v]) => `${k}=${v}`).join(";")
        : undefined;
      const rank = e.kind === "Throttle" ? e.rank : f.rank;
      const cells = TIMELINE_CSV_COLUMNS.map((c) => (c === "data" ? data : c === "rank" ? rank : f[c]));
      rows.push(cells.map(csvField).join(","));
    }
    return rows.join("\n") + "\n";
  }
}
