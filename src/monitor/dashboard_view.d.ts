/**
 * Types of dashboard_view.js (plain JavaScript so its text can be inlined into the saved
 * HTML; see that file and dashboard_assets.ts).
 */
import type { BatchPoint, BatchRow, DashboardData, EpochRow, MembershipRow, ReduceRow } from "./dashboard_data.ts";
import type { MonitorRecord } from "./record.ts";
import type { TimelineEntry } from "./timeline.ts";

/** "light" | "dark" pin the theme; "auto" (the default) follows `prefers-color-scheme`. */
export type DashboardTheme = "light" | "dark" | "auto";

/** The uPlot constructor, as much of it as the view uses. */
export type UPlotConstructor = new (opts: object, data: unknown[], target: HTMLElement) => {
  width: number;
  setData(data: unknown[]): void;
  setSize(size: { width: number; height: number }): void;
  destroy(): void;
};

export interface DashboardViewOptions {
  theme?: DashboardTheme;
  /** Heading when the data has no title. */
  title?: string;
  /** uPlot's constructor; default the global `uPlot` (the saved HTML defines it). */
  uPlot?: UPlotConstructor;
  /** Batch-loss points kept per rank before pairs merge (default 2000). */
  maxBatchPoints?: number;
  /** Clock (ms since the Unix epoch) stamping appended batches and reduces; default `Date.now`. */
  now?: () => number;
}

/** Per-rank bins of one kind of time: ms per bin. */
export interface RankActivityRank {
  /** Ms computing batches, per bin. */
  compute: number[];
  /** Ms of a slowed-down rank's sleep (the throttle), per bin. */
  throttle: number[];
  /** Ms in reduces the rank took part in, per bin. */
  reduce: number[];
  /** Start of the rank's first batch and end of its last (ms since the Unix epoch). */
  from?: number;
  /** End of the rank's last batch (ms since the Unix epoch). */
  to?: number;
}

/** {@link RankActivity} as JSON (`DashboardData.activity`). */
export interface RankActivityData {
  /** Start of bin 0 (ms since the Unix epoch); absent before the first batch. */
  t0?: number;
  /** End of the last span recorded (ms since the Unix epoch). */
  end?: number;
  /** Width of one bin, ms (doubles whenever the bins merge in pairs). */
  binMs: number;
  /** Most bins per rank before they merge (default 1500). */
  max: number;
  /** Per rank, by rank index. */
  ranks: RankActivityRank[];
  /** Reduce ms per bin over the whole run (the coordinator's lane). */
  sync: number[];
}

/** Ms of each kind in one bin of a rank. */
export interface ActivityBin {
  compute: number;
  throttle: number;
  reduce: number;
  idle: number;
}

/**
 * What each rank did over time, in at most `maxBins` bins per rank (pairs merge and the
 * bin doubles when a run outgrows them): compute, throttle (a slowed-down rank's sleep),
 * reduce; idle is the rest between a rank's first and last batch.
 */
export class RankActivity {
  constructor(maxBins?: number, binMs?: number);
  t0: number | undefined;
  end: number | undefined;
  binMs: number;
  ranks: RankActivityRank[];
  sync: number[];
  /** A batch of `rank` that ended at `t` after `ms`, on a rank slowed down `slowdown` times (default 1). */
  batch(rank: number, t: number, ms: number, slowdown?: number): void;
  /** A reduce that ended at `t` after `ms`; `ranks` took part (default all). */
  reduce(t: number, ms: number, ranks?: readonly number[]): void;
  bin(rank: number, i: number): ActivityBin;
  readonly length: number;
  toJSON(): RankActivityData;
  load(data: RankActivityData | undefined): this;
}

/**
 * A y range fitting `values` with a margin, kept inside [0, 1] when `unit` and every value
 * is in [0, 1]; null when no value is finite.
 */
export function fitRange(values: readonly (number | null)[], unit?: boolean): [number, number] | null;

/** `JSON.parse` reviver turning "NaN", "Infinity", "-Infinity" strings back into numbers. */
export function reviveNonFinite(key: string, value: unknown): unknown;

/**
 * Per-rank batch losses, at most `maxPerRank` points per rank (pairs merge, batch-weighted,
 * when a rank overflows), plus the mean batch loss since the last reduce.
 */
export class BatchSeries {
  constructor(maxPerRank?: number);
  add(ev: BatchRow): void;
  /** Mean loss of the batches since the previous call, or undefined when none ran. */
  takeWindowLoss(): number | undefined;
  load(points: readonly BatchPoint[] | undefined): void;
  points(): BatchPoint[];
}

/**
 * The dashboard in a container element: summary table, uPlot charts (loss per epoch /
 * batch / reduce, eval, throughput, batch share, reduce timings and anchor, wire bytes),
 * timeline swimlane, record tree, alerts, configuration.
 * @throws {TypeError} When no uPlot constructor is given or global.
 */
export class DashboardView {
  constructor(container: HTMLElement, options?: DashboardViewOptions);
  /** The data shown now, appends included. */
  readonly data: DashboardData;
  readonly element: HTMLElement;
  /** @throws {RangeError} For a theme other than "light", "dark", "auto". */
  setTheme(theme: DashboardTheme): void;
  /** Replace everything shown (renders at once). */
  setData(data: DashboardData): void;
  appendEpoch(row: EpochRow): void;
  appendReduce(ev: ReduceRow): void;
  appendBatch(ev: BatchRow): void;
  appendEval(epoch: number, value: number): void;
  appendEvent(entry: TimelineEntry): void;
  appendRecord(record: MonitorRecord): void;
  /** A rank joined or was lost; a joined rank's place goes into the rank table. */
  appendMembership(row: MembershipRow): void;
  destroy(): void;
}
