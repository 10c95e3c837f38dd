/**
 * Builds the record tree from per-rank leaf values: one row per rank,
 * one per host, one for the root, interior values rolled up from direct children.
 */
import type { InteriorRecord, LeafRecord, MetaRecord, NodeRecord, Resources, Severity } from "./record.ts";
import { CORE_REDUCTIONS, type Reduction, REDUCTIONS, rollUp } from "./roll_up.ts";

/** The subset of the trainer's `EpochMetrics` (same field names) a tree reads; arrays by rank. */
export interface EpochMetricsLike {
  /** 0-based epoch. */
  epoch: number;
  /** Wall ms of the epoch (the root row's `epoch_ms`). */
  epochMs: number;
  /** Per rank, each user scalar's mean over the epoch (`recordScalar`), by name. */
  perRank: Record<string, number>[];
  /** Mean batch loss per rank (`loss`; NaN for a rank that ran no batch, which gets no `loss`). */
  perRankLoss: number[];
  /** Samples each rank trained; the rows' work when `perRankBatches` is absent. */
  perRankSamples: number[];
  /** Samples per ms of share-complete time, per rank (`throughput`). */
  perRankThroughput: number[];
  /** Each rank's fraction of the epoch's batches (`batch_share`). */
  perRankBatchShare: number[];
  /** Σ train-step ms per rank (`compute_only_ms`). */
  perRankComputeOnlyMs: number[];
  /** ms each rank waited for data (`data_starve`). */
  perRankDataStarveMs: number[];
  /** Per rank, the data plane's values (`data_*` keys), put on the rank rows as they are. */
  perRankData?: Record<string, number>[];
  /** Device index per rank (not read by the tree; the rows take the {@link RecordTreeOptions} devices). */
  deviceIndices?: number[];
  /** Batches per rank; when absent, samples stand in for work (same weights at a fixed batch size). */
  perRankBatches?: number[];
  /** From the coordinator's `RunEpochMetrics`: reduces, mean wire bytes and ms per reduce, anchor. */
  reduces?: number;
  /** Mean wire bytes (up + down) per reduce (the root's `wire_bytes_per_reduce`). */
  wireBytesPerReduce?: number;
  /** Mean ms per reduce, trigger to adoption (the root's `reduce_ms`). */
  reduceMs?: number;
  /** ElChe's anchor at the epoch's end (the root's `anchor`; 0 on a single device). */
  anchor?: number;
}

/** One rank's values for a row. */
export interface LeafValues {
  /** The rank, in [0, worldSize). */
  rank: number;
  /** Realized work (batches) in the row's window. */
  work: number;
  /** loss, throughput, batch_share, data_starve, compute_only_ms, user scalars. */
  metrics: Record<string, number>;
  /** Sampled GPU resources of the rank, when any. */
  res?: Resources;
}

/** One row of the tree: an epoch row or a sub-epoch window (tick). */
export interface TreeRow {
  /** 0-based epoch of every record of the row. */
  epoch: number;
  /** Sub-epoch report index; absent on epoch rows. */
  tick?: number;
  /** True for the row written when the epoch completed (`epoch_complete` on the records). */
  epochComplete?: boolean;
  /** Free text put on every record of the row. */
  label?: string;
  /** One entry per rank that reports in this row; hosts with none get no row. */
  leaves: readonly LeafValues[];
  /** Engine values put on the root row as they are (anchor, sync ms, d_raw, lambda_ema). */
  rootExtras?: Record<string, number>;
}

/** How {@link RecordTree} lays out a run's nodes. */
export interface RecordTreeOptions {
  /** Ranks in the run (spare slots included), an integer >= 1. */
  worldSize: number;
  /** Host name of each rank (default "local" for all). A dotted name is fine; "/" is not. */
  hosts?: readonly string[];
  /** Device index or adapter name per rank (default the rank). */
  devices?: readonly (number | string)[];
  /** How the coordinator reaches each rank ("worker", "remote", "local"); put on rank rows when given. */
  transports?: readonly (string | undefined)[];
  /**
   * Spare slots of an elastic run: not alive (no rows, not counted) until
   * {@link RecordTree.rankJoined}; their host is a placeholder until then.
   */
  vacant?: readonly boolean[];
  /** User-key declarations (`scalarReduction`); core keys cannot be changed. */
  reductions?: Readonly<Record<string, Reduction>>;
  /** Clock, ms since the Unix epoch (default `Date.now`). */
  now?: () => number;
}

const UNSAFE_HOST = /[/\\]/;

function checkHost(h: string): void {
  if (typeof h !== "string" || h === "" || h === "." || h === ".." || UNSAFE_HOST.test(h)) {
    throw new RangeError(`RecordTree: host name must be a non-empty name without "/", got ${JSON.stringify(h)}`);
  }
}

/**
 * The record tree of one run.
 * @throws {RangeError} From the constructor: a bad world size, host list, host name or
 *   reduction declaration (naming the knob and the value).
 * @example
 * ```ts
 * import { RecordTree } from "./record_tree.ts";
 * const tree = new RecordTree({ worldSize: 2, hosts: ["a", "a"] });
 * const rows = tree.rows({ epoch: 0, leaves: [
 *   { rank: 0, work: 1, metrics: { loss: 2 } }, { rank: 1, work: 3, metrics: { loss: 4 } }] });
 * rows.at(-1)!.metrics.loss; // 3.5 at "root"
 * ```
 */
export class RecordTree {
  /** Ranks in the run, spare slots included. */
  readonly worldSize: number;
  /** How each key rolls up: the user's declarations with the core keys' fixed reductions over them. */
  readonly reductions: Readonly<Record<string, Reduction>>;
  readonly #hosts: string[];
  readonly #devices: (number | string)[];
  readonly #transports: (string | undefined)[];
  readonly #now: () => number;
  readonly #hostOrder: string[];
  readonly #alive: boolean[];
  readonly #vacant: boolean[];
  readonly #lastWork: number[];

  /** A tree of `opts.worldSize` ranks grouped by host (all on "local" by default). */
  constructor(opts: RecordTreeOptions) {
    const W = opts.worldSize;
    if (!Number.isInteger(W) || W < 1) throw new RangeError(`RecordTree: worldSize must be an integer >= 1, got ${W}`);
    const hosts = opts.hosts ?? Array.from({ length: W }, () => "local");
    if (hosts.length !== W) throw new RangeError(`RecordTree: hosts must list ${W} ranks, got ${hosts.length}`);
    for (const h of hosts) checkHost(h);
    for (const [key, red] of Object.entries(opts.reductions ?? {})) {
      if (!REDUCTIONS.includes(red)) {
        throw new RangeError(`RecordTree: reduction of "${key}" must be one of ${REDUCTIONS.join(", ")}, got ${red}`);
      }
      const core = CORE_REDUCTIONS[key];
      if (core !== undefined && core !== red) {
        throw new RangeError(`RecordTree: reduction of "${key}" must be ${core} (a core key, fixed), got ${red}`);
      }
    }
    this.worldSize = W;
    this.#hosts = [...hosts];
    this.reductions = { ...opts.reductions, ...CORE_REDUCTIONS };
    this.#devices = opts.devices ? [...opts.devices] : hosts.map((_, r) => r);
    this.#transports = hosts.map((_, r) => opts.transports?.[r]);
    this.#now = opts.now ?? Date.now;
    // A vacant slot's placeholder host is no child of the root until a rank joins it.
    this.#hostOrder = [...new Set(hosts.filter((_, r) => !opts.vacant?.[r]))];
    this.#alive = hosts.map((_, r) => !opts.vacant?.[r]);
    this.#vacant = hosts.map((_, r) => !!opts.vacant?.[r]);
    this.#lastWork = hosts.map(() => 0);
  }

  /** Host name per rank (a spare slot's changes when a rank joins it). */
  get hosts(): readonly string[] {
    return this.#hosts;
  }

  /** `root/<host>/rank<k>`. */
  pathOf(rank: number): string {
    return `root/${this.#hosts[rank]}/rank${rank}`;
  }

  /** The stream's `meta` record carrying the roll-up declarations. */
  meta(): MetaRecord {
    return {
      v: 1,
      ts: this.#now(),
      sev: "info",
      path: "root",
      kind: "meta",
      reductions: { ...this.reductions },
      core: Object.keys(CORE_REDUCTIONS),
      world_size: this.worldSize,
      hosts: [...this.hosts],
    };
  }

  /**
   * Rank rows (in the order given), then host rows, then the root row. Hosts none of
   * whose ranks appear in `leaves` get no row; nor do spare slots nobody joined yet.
   * @throws {RangeError} When a leaf's rank is outside [0, worldSize).
   */
  rows(row: TreeRow): NodeRecord[] {
    const ts = this.#now();
    const base = (path: string, metrics: Record<string, number>, work: number) => ({
      v: 1 as const,
      ts,
      sev: "info" as Severity,
      path,
      kind: "node" as const,
      ...(row.tick !== undefined ? { tick: row.tick } : {}),
      epoch: row.epoch,
      ...(row.epochComplete ? { epoch_complete: true } : {}),
      ...(row.label !== undefined ? { label: row.label } : {}),
      metrics,
      work,
    });
    const leaves: LeafRecord[] = [];
    const byHost = new Map<string, { work: number; values: Record<string, number>; res?: Resources }[]>();
    for (const l of row.leaves) {
      if (!Number.isInteger(l.rank) || l.rank < 0 || l.rank >= this.worldSize) {
        throw new RangeError(`RecordTree.rows: rank must be in [0, ${this.worldSize}), got ${l.rank}`);
      }
      if (this.#vacant[l.rank]) continue; // a spare slot nobody joined: not a node yet
      this.#lastWork[l.rank] = l.work;
      leaves.push({
        ...base(this.pathOf(l.rank), { ...l.metrics }, l.work),
        ...(l.res ? { res: { ...l.res } } : {}),
        device: this.#devices[l.rank],
        alive: this.#alive[l.rank],
        ...(this.#transports[l.rank] ? { transport: this.#transports[l.rank] } : {}),
      });
      const host = this.#hosts[l.rank];
      const list = byHost.get(host) ?? [];
      list.push({ work: l.work, values: l.metrics, res: l.res });
      byHost.set(host, list);
    }
    const hostRows: InteriorRecord[] = [];
    for (const host of this.#hostOrder) {
      const kids = byHost.get(host);
      if (!kids) continue;
      const ranks = this.#hosts.flatMap((h, r) => (h === host ? [r] : []));
      hostRows.push(this.#interior(base(`root/${host}`, rollUp(kids, this.reductions), sum(kids)), kids, {
        children: ranks.length,
        alive: ranks.filter((r) => this.#alive[r]).length,
      }));
    }
    const kids = hostRows.map((h) => ({ work: h.work, values: h.metrics, res: h.res }));
    const root = this.#interior(
      base("root", { ...rollUp(kids, this.reductions), ...row.rootExtras }, sum(kids)),
      kids,
      {
        children: this.#hostOrder.length,
        alive: this.#hostOrder.filter((h) => this.#hosts.some((hh, r) => hh === h && this.#alive[r])).length,
      },
    );
    return [...leaves, ...hostRows, root];
  }

  /**
   * The epoch-boundary rows (`epoch_complete`) from the trainer's epoch metrics. A rank
   * with no work reports no loss (its NaN placeholder is left out, not zero-filled).
   */
  epochRows(m: EpochMetricsLike, label?: string): NodeRecord[] {
    const work = m.perRankBatches ?? m.perRankSamples;
    const leaves: LeafValues[] = [];
    for (let r = 0; r < this.worldSize; r++) {
      if (!this.#alive[r] && !(work[r] > 0)) continue;
      const metrics: Record<string, number> = { ...m.perRank[r], ...m.perRankData?.[r] };
      const put = (key: string, v: number | undefined) => {
        if (v !== undefined) metrics[key] = v;
      };
      if (work[r] > 0) put("loss", m.perRankLoss[r]);
      put("throughput", m.perRankThroughput[r]);
      put("batch_share", m.perRankBatchShare[r]);
      put("data_starve", m.perRankDataStarveMs[r]);
      put("compute_only_ms", m.perRankComputeOnlyMs[r]);
      leaves.push({ rank: r, work: work[r] ?? 0, metrics });
    }
    const extras: Record<string, number> = { epoch_ms: m.epochMs };
    if (m.reduces !== undefined) extras.reduces = m.reduces;
    if (m.wireBytesPerReduce !== undefined) extras.wire_bytes_per_reduce = m.wireBytesPerReduce;
    if (m.reduceMs !== undefined) extras.reduce_ms = m.reduceMs;
    if (m.anchor !== undefined) extras.anchor = m.anchor;
    return this.rows({ epoch: m.epoch, epochComplete: true, label, leaves, rootExtras: extras });
  }

  /**
   * Mark a rank dead and return its critical alert row (`alive: false`, label
   * `rank_lost: <reason>`). Later rows count it out of `alive`.
   */
  rankLost(rank: number, epoch: number, reason: string): LeafRecord {
    if (!Number.isInteger(rank) || rank < 0 || rank >= this.worldSize) {
      throw new RangeError(`RecordTree.rankLost: rank must be in [0, ${this.worldSize}), got ${rank}`);
    }
    this.#alive[rank] = false;
    return {
      v: 1,
      ts: this.#now(),
      sev: "critical",
      path: this.pathOf(rank),
      kind: "node",
      epoch,
      label: `rank_lost: ${reason}`,
      metrics: {},
      work: this.#lastWork[rank],
      device: this.#devices[rank],
      alive: false,
      ...(this.#transports[rank] ? { transport: this.#transports[rank] } : {}),
    };
  }

  /**
   * A rank joined (elastic membership) at the boundary before `epoch`: it is
   * alive from here on, under its host (`root/<host>/rank<k>`). Returns its info row
   * (label `rank_joined: <host> (<device>, <transport>)`).
   * @throws {RangeError} For a rank out of range or a host name with "/".
   */
  rankJoined(rank: number, epoch: number, place: { host: string; device: number | string; transport?: string }): LeafRecord {
    if (!Number.isInteger(rank) || rank < 0 || rank >= this.worldSize) {
      throw new RangeError(`RecordTree.rankJoined: rank must be in [0, ${this.worldSize}), got ${rank}`);
    }
    checkHost(place.host);
    this.#hosts[rank] = place.host;
    if (!this.#hostOrder.includes(place.host)) this.#hostOrder.push(place.host);
    this.#devices[rank] = place.device;
    this.#transports[rank] = place.transport;
    this.#alive[rank] = true;
    this.#vacant[rank] = false;
    this.#lastWork[rank] = 0;
    return {
      v: 1,
      ts: this.#now(),
      sev: "info",
      path: this.pathOf(rank),
      kind: "node",
      epoch,
      label: `rank_joined: ${place.host} (${place.device}${place.transport ? `, ${place.transport}` : ""})`,
      metrics: {},
      work: 0,
      device: place.device,
      alive: true,
      ...(place.transport ? { transport: place.transport } : {}),
    };
  }

  /** A warn row at the root (drift: the guard's NudgeDown), carrying the values given (d_raw, factor, round). */
  drift(epoch: number, metrics: Record<string, number>, label = "drift: nudge down"): InteriorRecord {
    const aliveHosts = this.#hostOrder.filter((h) => this.#hosts.some((hh, r) => hh === h && this.#alive[r]));
    return {
      v: 1,
      ts: this.#now(),
      sev: "warn",
      path: "root",
      kind: "node",
      epoch,
      label,
      metrics: { ...metrics },
      work: this.#lastWork.reduce((a, b) => a + b, 0),
      children: this.#hostOrder.length,
      alive: aliveHosts.length,
    };
  }

  #interior<T extends Omit<InteriorRecord, "children" | "alive">>(
    base: T,
    kids: { res?: Resources }[],
    counts: { children: number; alive: number },
  ): InteriorRecord {
    const res = rollUpResources(kids.flatMap((k) => (k.res ? [k.res] : [])));
    return { ...base, ...(res ? { res } : {}), ...counts };
  }
}

function sum(kids: { work: number }[]): number {
  return kids.reduce((a, k) => a + k.work, 0);
}

/** Resources of an interior node: util mean, util_max max, VRAM sums; absent when none sampled. */
export function rollUpResources(list: readonly Resources[]): Resources | undefined {
  const out: Resources = {};
  const vals = (k: keyof Resources) => list.flatMap((r) => (r[k] !== undefined ? [r[k]!] : []));
  const util = vals("gpu_util");
  if (util.length) out.gpu_util = util.reduce((a, b) => a + b, 0) / util.length;
  const umax = vals("gpu_util_max");
  if (umax.length) out.gpu_util_max = Math.max(...umax);
  for (const k of ["vram_alloc", "vram_alloc_max", "vram_total"] as const) {
    const v = vals(k);
    if (v.length) out[k] = v.reduce((a, b) => a + b, 0);
  }
  return Object.keys(out).length ? out : undefined;
}
