/**
 * What a dashboard shows (`DashboardData`) and a recorder that collects it from the
 * coordinator's observer events. The row shapes mirror the coordinator's types field for
 * field (`RunEpochMetrics`, `ReduceEvent`, `BatchEvent`), so its objects pass straight
 * through; only the fields the dashboard reads are required.
 */
import { BatchSeries } from "./batch_series.js";
import { RankActivity } from "./rank_activity.js";
import type { MonitorRecord } from "./record.ts";
import type { TimelineEntry } from "./timeline.ts";

/** One epoch (the coordinator's `RunEpochMetrics`; arrays indexed by rank). */
export interface EpochRow {
  /** 0-based epoch. */
  epoch: number;
  /** Mean training loss of the epoch over every rank's batches. */
  avgLoss: number;
  /** Wall ms of the epoch. */
  epochMs: number;
  /** Mean batch loss per rank. */
  perRankLoss: number[];
  /** Samples each rank trained. */
  perRankSamples: number[];
  /** Samples per ms of share-complete time. */
  perRankThroughput: number[];
  /** Each rank's fraction of the epoch's batches. */
  perRankBatchShare: number[];
  /** Per rank, the data plane's values of the epoch (`data_*` keys; the "Data plane" table). */
  perRankData?: Record<string, number>[];
  /** Scalars the program recorded in the epoch (`recordScalar`), by name. */
  scalars?: Record<string, number>;
  /** Reduces in the epoch. */
  reduces?: number;
  /** Mean wire bytes (up + down) per reduce in the epoch. */
  wireBytesPerReduce?: number;
  /** Mean ms per reduce (trigger to adoption). */
  reduceMs?: number;
  /** ElChe's anchor at the epoch's end (0 on a single device). */
  anchor?: number;
  /** ElChe's batch counts per rank at the epoch's end. */
  batchCounts?: number[];
}

/** One reduce (the coordinator's `ReduceEvent`). */
export interface ReduceRow {
  /** 0-based reduce number of the run. */
  round: number;
  /** Epoch the reduce fell in. */
  epoch: number;
  /** Wall ms from trigger to the last adoption. */
  ms: number;
  /** ms spent averaging on the CPU. */
  averageMs?: number;
  /** Bytes of rank frames received. */
  bytesUp?: number;
  /** Bytes of consensus frames sent. */
  bytesDown?: number;
  /** ElChe's anchor after the reduce. */
  anchor?: number;
  /** Steps per rank folded into this consensus. */
  steps?: number[];
  /** ElChe's batch counts per rank after the reduce. */
  counts?: number[];
  /** Per rank, its divergence from the consensus as the controller measured it. */
  divergence?: number[];
  /** The convergence guard's verdict: "stable", "suppressGrowth" or "nudgeDown". */
  verdict?: string;
  /** No rank had trained since the last reduce (zero mass): the guard was not fed. */
  zeroMass?: boolean;
  /** Mean batch loss of the window (filled by the recorder from the batches since the last reduce). */
  loss?: number;
}

/** One batch (the coordinator's `BatchEvent`). */
export interface BatchRow {
  /** Rank that trained the batch. */
  rank: number;
  /** Epoch of the batch. */
  epoch: number;
  /** The batch's loss. */
  loss: number;
  /** Wall ms of the step, data waits included. */
  ms?: number;
  /** Compute-only ms of the step (recording + GPU). */
  computeMs?: number;
  /** Learning rate of the step. */
  lr?: number;
  /** Samples in the batch. */
  samples?: number;
}

/** A stored batch-loss point: the mean of `n` consecutive batches of a rank, ending at its `index`-th batch. */
export interface BatchPoint {
  /** Rank of the batches. */
  rank: number;
  /** Epoch of the last of them. */
  epoch: number;
  /** The rank's batch count at the last of them (1-based). */
  index: number;
  /** Mean loss of the `n` batches. */
  loss: number;
  /** Batches averaged into this point. */
  n: number;
}

/** Where one rank runs (the "Ranks" table). A spare slot nobody filled has only its rank. */
export interface RankRow {
  /** The rank. */
  rank: number;
  /** Host name ("" or absent: the coordinator's host). */
  host?: string;
  /** GPU adapter name. */
  adapter?: string;
  /** "worker" (a Web Worker of the coordinator's process), "remote" (over NATS), "local" (the coordinator's thread). */
  transport?: string;
}

/** A membership change: a rank joined (elastic, at an epoch boundary) or was lost (it left or died; the reason says). */
export interface MembershipRow {
  /** ms since the Unix epoch. */
  ts: number;
  /** The rank that joined or was lost. */
  rank: number;
  /** Whether it joined or was lost. */
  kind: "joined" | "lost";
  /** 0-based: the epoch a joined rank trains from, the frontier epoch when a rank was lost. */
  epoch: number;
  /** Why a rank was lost (its error or "left"). */
  reason?: string;
  /** Host name of the rank. */
  host?: string;
  /** GPU adapter name of the rank. */
  adapter?: string;
  /** How it reached the coordinator (as `RankRow.transport`). */
  transport?: string;
}

/** The eval metric after one epoch. */
export interface EvalPoint {
  /** Epoch after which the eval ran. */
  epoch: number;
  /** The eval metric's value. */
  value: number;
}

// NOTE: the view's public types that are not its classes' signatures are declared here, in
// TypeScript, and the view's checked JavaScript imports them: `deno doc` (docs/API.md)
// does not read JSDoc typedefs.

/** "light" | "dark" pin the theme; "auto" (the default) follows `prefers-color-scheme`. */
export type DashboardTheme = "light" | "dark" | "auto";

/** Per-rank bins of one kind of time: ms per bin. */
export interface RankActivityRank {
  /** Ms computing batches, per bin. */
  compute: number[];
  /** Ms of a slowed-down rank's sleep (the throttle), per bin. */
  throttle: number[];
  /** Ms in reduces the rank took part in, per bin. */
  reduce: number[];
  /** Start of the rank's first batch (ms since the Unix epoch). */
  from?: number;
  /** End of the rank's last batch (ms since the Unix epoch). */
  to?: number;
}

/** `RankActivity` (rank_activity.js) as JSON (`DashboardData.activity`). */
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

/** Everything one dashboard shows. Times are ms since the Unix epoch. */
export interface DashboardData {
  /** Shown as the page's title. */
  title?: string;
  /** When the run started. */
  startedAt?: number;
  /** When it finished (absent while it runs). */
  finishedAt?: number;
  /** Knob → value, for display. */
  config?: Record<string, string | number | boolean | null>;
  /** Ranks of the run. */
  worldSize: number;
  /** Adapter name per rank. */
  devices?: string[];
  /** Host, adapter and transport per rank (spare slots: the rank only, until one joins). */
  ranks?: RankRow[];
  /** Ranks joined and lost, in order. */
  membership?: MembershipRow[];
  /** One row per finished epoch. */
  epochs: EpochRow[];
  /** One row per reduce. */
  reduces?: ReduceRow[];
  /** Batch-loss points, per rank, bounded. */
  batches?: BatchPoint[];
  /** The eval metric after each epoch that ran one. */
  evals?: EvalPoint[];
  /** Name of the eval metric ("accuracy"). */
  evalLabel?: string;
  /** How many times slower each rank was made (a cluster's simulated `slowdown`; 1 when absent). */
  slowdown?: number[];
  /** Each rank's compute, throttle, reduce and idle time, binned (the timeline's rank lanes). */
  activity?: RankActivityData;
  /** Run events in time order (joins, losses, checkpoints, …). */
  timeline?: TimelineEntry[];
  /** The record plane, bounded (the recorder keeps the newest). */
  records?: MonitorRecord[];
}

/** Options of {@link DashboardRecorder}. */
export interface DashboardRecorderOptions {
  /** Ranks of the run. */
  worldSize: number;
  /** The dashboard's title. */
  title?: string;
  /** Adapter name per rank. */
  devices?: string[];
  /** Host, adapter and transport per rank. */
  ranks?: RankRow[];
  /** Knob → value, for display. */
  config?: DashboardData["config"];
  /** Name of the eval metric. */
  evalLabel?: string;
  /** Per rank: how many times slower it was made (its batches' last (s - 1)/s is throttle). */
  slowdown?: number[];
  /** Batch-loss points kept per rank (default 2000). */
  maxBatchPoints?: number;
  /** Records kept: the newest (default 4096). */
  maxRecords?: number;
  /** Reduce rows kept (default 20 000, oldest dropped). */
  maxReduces?: number;
  /** Clock in ms since the Unix epoch (default `Date.now`). */
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
  /** When the recorder was made (ms since the Unix epoch). */
  readonly startedAt: number;
  #finishedAt: number | undefined;

  /**
   * A recorder for a run of `opts.worldSize` ranks.
   * @throws {RangeError} When `worldSize` is not an integer >= 1.
   */
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
