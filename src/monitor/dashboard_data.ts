/**
 * What a dashboard shows (`DashboardData`) and a recorder that collects it from the
 * coordinator's observer events. The row shapes mirror the coordinator's types field for
 * field (`RunEpochMetrics`, `ReduceEvent`, `BatchEvent`), so its objects pass straight
 * through; only the fields the dashboard reads are required.
 */
import { BatchSeries, RankActivity, type RankActivityData } from "./dashboard_view.js";
import type { MonitorRecord } from "./record.ts";
import type { TimelineEntry } from "./timeline.ts";

/** One epoch (the coordinator's `RunEpochMetrics`; arrays indexed by rank). */
export interface EpochRow {
  epoch: number;
  avgLoss: number;
  epochMs: number;
  perRankLoss: number[];
  perRankSamples: number[];
  /** Samples per ms of share-complete time. */
  perRankThroughput: number[];
  perRankBatchShare: number[];
  /** Per rank, the data plane's values of the epoch (`data_*` keys; the "Data plane" table). */
  perRankData?: Record<string, number>[];
  scalars?: Record<string, number>;
  reduces?: number;
  wireBytesPerReduce?: number;
  reduceMs?: number;
  anchor?: number;
  batchCounts?: number[];
}

/** One reduce (the coordinator's `ReduceEvent`). */
export interface ReduceRow {
  round: number;
  epoch: number;
  /** Wall ms from trigger to the last adoption. */
  ms: number;
  averageMs?: number;
  bytesUp?: number;
  bytesDown?: number;
  anchor?: number;
  steps?: number[];
  counts?: number[];
  divergence?: number[];
  verdict?: string;
  zeroMass?: boolean;
  /** Mean batch loss of the window (filled by the recorder from the batches since the last reduce). */
  loss?: number;
}

/** One batch (the coordinator's `BatchEvent`). */
export interface BatchRow {
  rank: number;
  epoch: number;
  loss: number;
  ms?: number;
  computeMs?: number;
  lr?: number;
  samples?: number;
}

/** A stored batch-loss point: the mean of `n` consecutive batches of a rank, ending at its `index`-th batch. */
export interface BatchPoint {
  rank: number;
  epoch: number;
  index: number;
  loss: number;
  n: number;
}

/** Where one rank runs (the "Ranks" table). A spare slot nobody filled has only its rank. */
export interface RankRow {
  rank: number;
  /** Host name ("" or absent: the coordinator's host). */
  host?: string;
  adapter?: string;
  /** "worker" (a Web Worker of the coordinator's process), "remote" (over NATS), "local" (the coordinator's thread). */
  transport?: string;
}

/** A membership change: a rank joined (elastic, at an epoch boundary) or was lost (it left or died; the reason says). */
export interface MembershipRow {
  /** ms since the Unix epoch. */
  ts: number;
  rank: number;
  kind: "joined" | "lost";
  /** 0-based: the epoch a joined rank trains from, the frontier epoch when a rank was lost. */
  epoch: number;
  reason?: string;
  host?: string;
  adapter?: string;
  transport?: string;
}

export interface EvalPoint {
  epoch: number;
  value: number;
}

/** Everything one dashboard shows. Times are ms since the Unix epoch. */
export interface DashboardData {
  title?: string;
  startedAt?: number;
  finishedAt?: number;
  /** Knob → value, for display. */
  config?: Record<string, string | number | boolean | null>;
  worldSize: number;
  /** Adapter name per rank. */
  devices?: string[];
  /** Host, adapter and transport per rank (spare slots: the rank only, until one joins). */
  ranks?: RankRow[];
  /** Ranks joined and lost, in order. */
  membership?: MembershipRow[];
  epochs: EpochRow[];
  reduces?: ReduceRow[];
  batches?: BatchPoint[];
  evals?: EvalPoint[];
  /** Name of the eval metric ("accuracy"). */
  evalLabel?: string;
  /** How many times slower each rank was made (a cluster's simulated `slowdown`; 1 when absent). */
  slowdown?: number[];
  /** Each rank's compute, throttle, reduce and idle time, binned (the timeline's rank lanes). */
  activity?: RankActivityData;
  timeline?: TimelineEntry[];
  /** The record plane, bounded (the recorder keeps the newest). */
  records?: MonitorRecord[];
}

export interface DashboardRecorderOptions {
  worldSize: number;
  title?: string;
  devices?: string[];
  /** Host, adapter and transport per rank. */
  ranks?: RankRow[];
  config?: DashboardData["config"];
  evalLabel?: string;
  /** Per rank: how many times slower it was made (its batches' last (s - 1)/s is throttle). */
  slowdown?: number[];
  /** Batch-loss points kept per rank (default 2000). */
  maxBatchPoints?: number;
  /** Records kept: the newest (default 4096). */
  maxRecords?: number;
  /** Reduce rows kept (default 20 000, oldest dropped). */
  maxReduces?: number;
  now?: () => number;
}

/**
 * Collects dashboard data during a run. Its methods are bound, so they can be handed to
 * the coordinator as they are: `{ batch: rec.batch, reduce: rec.reduce }` as a
 * `RunObserver`, `rec.epoch` as the metrics sink.
 * @example
 * ```ts
 * import { DashboardRecorder } from "./dashboard_data.ts";
 * const rec = new DashboardRecorder({ worldSize: 2 });
 * rec.batch({ rank: 0, epoch: 0, loss: 1 });
 * rec.reduce({ round: 0, epoch: 0, ms: 3 });
 * rec.data().reduces![0].loss; // 1
 * ```
 */
export class DashboardRecorder {
  readonly #opts: DashboardRecorderOptions;
  readonly #series: BatchSeries;
  readonly #activity = new RankActivity();
  readonly #now: () => number;
  readonly #epochs: EpochRow[] = [];
  readonly #reduces: ReduceRow[] = [];
  readonly #evals: EvalPoint[] = [];
  readonly #records: MonitorRecord[] = [];
  readonly #timeline: TimelineEntry[] = [];
  readonly #ranks: RankRow[];
  readonly #membership: MembershipRow[] = [];
  readonly startedAt: number;
  #finishedAt: number | undefined;

  constructor(opts: DashboardRecorderOptions) {
    if (!Number.isInteger(opts.worldSize) || opts.worldSize < 1) {
      throw new RangeError(`DashboardRecorder: worldSize must be an integer >= 1, got ${opts.worldSize}`);
    }
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    this.#series = new BatchSeries(opts.maxBatchPoints ?? 2000);
    this.#ranks = (opts.ranks ?? []).map((r) => ({ ...r }));
    this.startedAt = this.#now();
  }

  /** A rank joined or was lost; a joined rank's place goes into the rank table. Stamped now when `ts` is absent. */
  readonly membership = (m: Omit<MembershipRow, "ts"> & { ts?: number }): void => {
    const row: MembershipRow = { ...m, ts: m.ts ?? this.#now() };
    this.#membership.push(row);
    if (row.kind === "joined") this.#ranks[row.rank] = { rank: row.rank, host: row.host, adapter: row.adapter, transport: row.transport };
  };

  /** A batch (the observer's `batch`), stamped now: it covers the `ms` before on its rank's lane. */
  readonly batch = (e: BatchRow): void => {
    this.#series.add(e);
    this.#activity.batch(e.rank, this.#now(), e.ms ?? e.computeMs ?? NaN, this.#opts.slowdown?.[e.rank]);
  };

  /** A reduce (the observer's `reduce`); its window loss is the mean batch loss since the last one. */
  readonly reduce = (e: ReduceRow): void => {
    const per = e.steps ?? e.counts;
    this.#activity.reduce(this.#now(), e.ms, per?.flatMap((n, r) => (n > 0 ? [r] : [])));
    const loss = e.loss ?? this.#series.takeWindowLoss();
    this.#reduces.push(loss === undefined ? { ...e } : { ...e, loss });
    if (this.#reduces.length > (this.#opts.maxReduces ?? 20_000)) this.#reduces.shift();
  };

  /** An epoch's metrics (the metrics sink). */
  readonly epoch = (m: EpochRow): void => {
    this.#epochs.push(m);
  };

  /** An eval result (`evalResultFn`). */
  readonly eval = (epoch: number, value: number): void => {
    this.#evals.push({ epoch, value });
  };

  /** Monitor records (bounded ring). */
  readonly record = (...records: MonitorRecord[]): void => {
    this.#records.push(...records);
    const max = this.#opts.maxRecords ?? 4096;
    if (this.#records.length > max) this.#records.splice(0, this.#records.length - max);
  };

  /** Timeline entries to embed (else pass a Timeline's `events` to {@link data}). */
  readonly event = (entry: TimelineEntry): void => {
    this.#timeline.push(entry);
  };

  /** Mark the end of the run (`finishedAt`). */
  finish(): void {
    this.#finishedAt = this.#now();
  }

  /** A snapshot of everything collected. */
  data(extra: Partial<DashboardData> = {}): DashboardData {
    const o = this.#opts;
    return {
      title: o.title,
      startedAt: this.startedAt,
      finishedAt: this.#finishedAt ?? this.#now(),
      config: o.config,
      worldSize: o.worldSize,
      devices: o.devices,
      ...(this.#ranks.length ? { ranks: this.#ranks.map((r) => ({ ...r })) } : {}),
      ...(this.#membership.length ? { membership: [...this.#membership] } : {}),
      epochs: [...this.#epochs],
      reduces: [...this.#reduces],
      batches: this.#series.points(),
      evals: [...this.#evals],
      evalLabel: o.evalLabel,
      slowdown: o.slowdown,
      activity: this.#activity.toJSON(),
      timeline: [...this.#timeline],
      records: [...this.#records],
      ...extra,
    };
  }
}
