/**
 * The record stream: one JSON object per tree node per tick. Paths are
 * `root`, `root/<host>`, `root/<host>/rank<k>`; interior nodes aggregate their direct
 * children. Field names are flodl's, snake_case, so a record written here
 * reads the same as one from flodl's `record_log`.
 *
 * Non-finite numbers: JSON cannot hold NaN or ±Infinity, so {@link encodeRecord} writes
 * them as `"NaN"`, `"Infinity"`, `"-Infinity"` inside `metrics`, `res` and `work`, and
 * {@link parseRecord} turns exactly those fields back into numbers.
 */
import { decodeNumber, stringifyFinite } from "./json.ts";
import type { Reduction } from "./roll_up.ts";

/** Record severity; alerts (drift, rank loss) are raised above "info". */
export type Severity = "info" | "warn" | "critical";

/** Sampled resource fields; only those actually sampled are present. */
export interface Resources {
  /** GPU utilisation in [0, 1]; interior: mean over children. */
  gpu_util?: number;
  /** Peak utilisation; interior: max. */
  gpu_util_max?: number;
  /** Bytes allocated; interior: sum. */
  vram_alloc?: number;
  /** Peak bytes allocated; interior: sum. */
  vram_alloc_max?: number;
  /** Device memory in bytes; interior: sum. */
  vram_total?: number;
}

/** Fields shared by leaf and interior node records. */
export interface NodeRecordBase {
  /** Record format version, always 1. */
  v: 1;
  /** Wall-clock time, ms since the Unix epoch. */
  ts: number;
  /** "info" for regular rows; "warn" (drift) or "critical" (rank lost) for alerts. */
  sev: Severity;
  /** The node: `root`, `root/<host>` or `root/<host>/rank<k>`. */
  path: string;
  /** Always "node" (the stream's first record is `kind: "meta"`). */
  kind: "node";
  /** Sub-epoch report index (see {@link ReportSchedule}); absent on epoch rows. */
  tick?: number;
  /** 0-based epoch the row belongs to. */
  epoch: number;
  /** True on the row written when the epoch completed. */
  epoch_complete?: boolean;
  /** Free text: an alert's name and reason, a phase. */
  label?: string;
  /** Core keys (loss, throughput, batch_share, data_starve, compute_only_ms), user scalars, engine values. */
  metrics: Record<string, number>;
  /** Realized work (batches) of this node in the row's window. */
  work: number;
  /** Sampled GPU resources, absent when none were sampled. */
  res?: Resources;
}

/** A rank. */
export interface LeafRecord extends NodeRecordBase {
  /** Device (adapter) index or name of the rank. */
  device: number | string;
  /** False once the rank is lost (its `rank_lost` row and after). */
  alive: boolean;
  /** How the coordinator reaches the rank: "worker" (its own process), "remote" (NATS), "local" (this thread). */
  transport?: string;
}

/** A host or the root. */
export interface InteriorRecord extends NodeRecordBase {
  /** Number of direct children. */
  children: number;
  /** Number of direct children still alive. */
  alive: number;
}

/** A node record: a rank's row ({@link LeafRecord}) or a host's or the root's ({@link InteriorRecord}). */
export type NodeRecord = LeafRecord | InteriorRecord;

/**
 * The stream's first record: how every key rolls up, so all consumers agree.
 */
export interface MetaRecord {
  /** Record format version, always 1. */
  v: 1;
  /** Wall-clock time, ms since the Unix epoch. */
  ts: number;
  /** Always "info". */
  sev: "info";
  /** Always "root". */
  path: "root";
  /** Always "meta" (node rows are `kind: "node"`). */
  kind: "meta";
  /** Core keys' fixed reductions merged with the user's declarations. */
  reductions: Record<string, Reduction>;
  /** Keys whose reduction is fixed. */
  core: string[];
  /** Ranks in the run (spare slots of an elastic run included). */
  world_size: number;
  /** Host of each rank, by rank. */
  hosts: string[];
  /** Free text, as on node records. */
  label?: string;
}

/** Any record of the stream: a node row or the leading meta record. */
export type MonitorRecord = NodeRecord | MetaRecord;

/**
 * One record as a JSON line (no trailing newline), non-finite numbers as strings.
 * @example
 * ```ts
 * import { encodeRecord } from "./record.ts";
 * encodeRecord({ v: 1, ts: 0, sev: "info", path: "root/h/rank0", kind: "node", epoch: 0,
 *   metrics: { loss: NaN }, work: 3, device: 0, alive: true }); // '{..."metrics":{"loss":"NaN"},...}'
 * ```
 */
export function encodeRecord(record: MonitorRecord): string {
  return stringifyFinite(record);
}

function decodeNumbers(obj: unknown, where: string): Record<string, number> {
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) {
    throw new TypeError(`parseRecord: "${where}" must be an object, got ${JSON.stringify(obj)}`);
  }
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(obj)) {
    const n = decodeNumber(v);
    if (typeof n !== "number") {
      throw new TypeError(`parseRecord: "${where}.${k}" must be a number, got ${JSON.stringify(v)}`);
    }
    out[k] = n;
  }
  return out;
}

/**
 * Parse one JSON line written by {@link encodeRecord} (or flodl): `"NaN"`, `"Infinity"`
 * and `"-Infinity"` in `metrics`, `res` and `work` become numbers again; other strings
 * (a label "NaN") stay strings.
 * @throws {TypeError} When the line is not a v1 node or meta record.
 * @example
 * ```ts
 * import { parseRecord } from "./record.ts";
 * const r = parseRecord('{"v":1,"ts":0,"sev":"info","path":"root","kind":"node","epoch":0,' +
 *   '"metrics":{"loss":"NaN"},"work":2,"children":1,"alive":1}');
 * r.kind === "node" && Number.isNaN(r.metrics.loss); // true
 * ```
 */
export function parseRecord(line: string): MonitorRecord {
  const r = JSON.parse(line) as Record<string, unknown>;
  if (typeof r !== "object" || r === null || Array.isArray(r)) {
    throw new TypeError(`parseRecord: expected a JSON object, got ${line.slice(0, 80)}`);
  }
  if (r.v !== 1) throw new TypeError(`parseRecord: expected v 1, got ${JSON.stringify(r.v)}`);
  if (r.kind !== "node" && r.kind !== "meta") {
    throw new TypeError(`parseRecord: kind must be "node" or "meta", got ${JSON.stringify(r.kind)}`);
  }
  if (typeof r.path !== "string") {
    throw new TypeError(`parseRecord: path must be a string, got ${JSON.stringify(r.path)}`);
  }
  if (r.kind === "meta") return r as unknown as MetaRecord;
  r.metrics = decodeNumbers(r.metrics, "metrics");
  if (r.res !== undefined) r.res = decodeNumbers(r.res, "res");
  const work = decodeNumber(r.work);
  if (typeof work !== "number") {
    throw new TypeError(`parseRecord: work must be a number, got ${JSON.stringify(r.work)}`);
  }
  r.work = work;
  return r as unknown as NodeRecord;
}
