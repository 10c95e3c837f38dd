/**
 * `<stem>.meta.json`, the trajectory sidecar of a checkpoint bundle (schema
 * version 5): parse and validate it, write it, and check that a run may resume from it.
 * Keys are flodl's, verbatim. User knobs (τ, anchor bounds) are not saved:
 * a resume uses the new config.
 */
import type { EpochCoverage } from "../schedule/chunk_pool.ts";
import type { ElCheState, Phase } from "../control/elche.ts";
import type { SaveReason } from "../control/max_failure.ts";

/** The schema this code writes; readers refuse newer versions and fill defaults for older ones. */
export const BUNDLE_SCHEMA_VERSION = 5;
/** Largest meta.json read (16 MiB): real ones are kilobytes; anything bigger is refused before it is read. */
export const MAX_META_BYTES = 16 * 1024 * 1024;

/** Every `save_reason`, as flodl spells them. */
export const SAVE_REASONS: readonly SaveReason[] = [
  "graceful_shutdown",
  "max_failure_exceeded",
  "single_survivor",
  "all_ranks_lost",
  "reduce_stall",
  "checkpoint",
];
const PHASES: readonly Phase[] = ["probe", "warmup", "stable", "mature"];

/** `elche_state`: ElChe's state plus the TrendGuard ring (default guard only). */
export interface BundleElCheState extends ElCheState {
  /** TrendGuard's last max-divergence values (up to 5, oldest first); absent under another guard or when empty. */
  trend_history?: number[];
}

/** `coverage`: what a progressive run had trained when it saved. */
export interface BundleCoverage {
  /** Shuffle seed of the run. */
  seed: number;
  /** Slices per epoch (default 1). */
  epoch_splits: number;
  /** Per-rank batch size of the run. */
  batch_size: number;
  /** Every in-progress epoch with its still-uncovered pick ranges. */
  per_epoch: EpochCoverage[];
}

/** A parsed `<stem>.meta.json` (older schemas normalized with defaults). */
export interface BundleMeta {
  /** The version the file was written with (≤ {@link BUNDLE_SCHEMA_VERSION}). */
  schema_version: number;
  /** The first epoch not yet finished when the saved consensus's reduce was triggered (0-based). */
  epoch: number;
  /** Batches folded into the saved consensus, all ranks together. */
  global_step: number;
  /** Reduce rounds run before the save. */
  sync_round: number;
  /** World size when saved; null only for files older than version 5 that did not record it. */
  world_size_at_save: number | null;
  /** Why the bundle was written; "checkpoint" for files older than version 5 that did not record it. */
  save_reason: SaveReason;
  /** Absent for Sync runs. */
  elche_state?: BundleElCheState;
  /** Present for progressive runs (Cadence, Async). */
  coverage?: BundleCoverage;
  /** Shuffle seed (our addition, also for non-progressive runs that have no coverage block). */
  seed?: number;
  /** Per-rank batch size (our addition, as `seed`). */
  batch_size?: number;
}

/** What a writer gives: every version-5 field; `schema_version` is set by the writer. */
export type BundleMetaInput = Omit<BundleMeta, "schema_version" | "world_size_at_save"> & {
  world_size_at_save: number;
};

type Problem = { type: boolean; text: string };

/** A value for a message: JSON, cut to a readable length (a hostile file can hold megabytes). */
function show(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** Validates one object, collecting every problem. */
class Checker {
  problems: Problem[] = [];
  constructor(readonly version: number) {}
  type(text: string): undefined {
    this.problems.push({ type: true, text });
    return undefined;
  }
  range(text: string): undefined {
    this.problems.push({ type: false, text });
    return undefined;
  }
  /** An integer field >= min; `fallback` used when absent in files older than version 5. */
  int(o: Record<string, unknown>, key: string, at: string, min: number, fallback?: number): number | undefined {
    const v = o[key];
    if (v === undefined) {
      if (fallback !== undefined && this.version < BUNDLE_SCHEMA_VERSION) return fallback;
      return this.type(`missing "${at}${key}"`);
    }
    if (typeof v !== "number" || !Number.isSafeInteger(v)) {
      return this.type(`"${at}${key}" must be an integer, got ${show(v)}`);
    }
    if (v < min) return this.range(`"${at}${key}" must be >= ${min}, got ${v}`);
    return v;
  }
  object(v: unknown, what: string): Record<string, unknown> | undefined {
    if (v === null || typeof v !== "object" || Array.isArray(v)) {
      return this.type(`"${what}" must be an object, got ${Array.isArray(v) ? "an array" : show(v)}`);
    }
    return v as Record<string, unknown>;
  }
  numbers(v: unknown, what: string, min = -Infinity): number[] | undefined {
    if (!Array.isArray(v)) return this.type(`"${what}" must be an array of numbers, got ${show(v)}`);
    const bad = v.findIndex((x) => typeof x !== "number" || !Number.isFinite(x) || x < min);
    if (bad >= 0) {
      return this.type(
        `"${what}[${bad}]" must be a finite number${min > -Infinity ? ` >= ${min}` : ""}, got ${show(v[bad])}`,
      );
    }
    return [...v];
  }
}

/**
 * Validate and normalize a meta object (already parsed from JSON). Every problem is
 * collected and reported at once.
 * @param raw The parsed JSON.
 * @param source File name for messages.
 * @returns The normalized meta: older versions get `sync_round` 0, `save_reason`
 *   "checkpoint", `world_size_at_save` from the ElChe state (else null), ElChe `phase`
 *   "probe", `calibration_count` 0, `anchor_rank` null, and coverage `batch_size` from the
 *   top level; `epoch_splits` defaults to 1 in every version.
 * @throws {RangeError} For a newer `schema_version` than 5, or values out of range only.
 * @throws {TypeError} Listing every missing field and wrong type (and any range problem with them).
 */
export function checkBundleMeta(raw: unknown, source = "<meta.json>"): BundleMeta {
  const where = `"${source}"`;
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new TypeError(`${where}: must hold a JSON object, got ${Array.isArray(raw) ? "an array" : show(raw)}`);
  }
  const o = raw as Record<string, unknown>;
  const version = o.schema_version;
  if (typeof version !== "number" || !Number.isSafeInteger(version) || version < 1) {
    throw new TypeError(`${where}: "schema_version" must be an integer >= 1, got ${show(version)}`);
  }
  if (version > BUNDLE_SCHEMA_VERSION) {
    throw new RangeError(
      `${where} has schema_version ${version}, newer than this reader's ${BUNDLE_SCHEMA_VERSION}: ` +
        "it was written by a newer version; upgrade to read it",
    );
  }
  const c = new Checker(version);
  const epoch = c.int(o, "epoch", "", 0);
  const globalStep = c.int(o, "global_step", "", 0);
  const syncRound = c.int(o, "sync_round", "", 0, 0);
  let saveReason: SaveReason | undefined = "checkpoint";
  if (!(o.save_reason === undefined && version < BUNDLE_SCHEMA_VERSION)) {
    if (SAVE_REASONS.includes(o.save_reason as SaveReason)) saveReason = o.save_reason as SaveReason;
    else {
      saveReason = c.type(
        `"save_reason" must be one of ${SAVE_REASONS.join(", ")}, got ${show(o.save_reason)}`,
      );
    }
  }
  const seed = o.seed === undefined ? undefined : c.int(o, "seed", "", 0);
  const batchSize = o.batch_size === undefined ? undefined : c.int(o, "batch_size", "", 1);
  const elche = o.elche_state === undefined ? undefined : checkElChe(c, o.elche_state);
  const world = o.world_size_at_save === undefined && version < BUNDLE_SCHEMA_VERSION
    ? (Array.isArray(elche?.smoothed_ms_per_batch) ? elche.smoothed_ms_per_batch.length : null)
    : c.int(o, "world_size_at_save", "", 1);
  const coverage = o.coverage === undefined ? undefined : checkCoverage(c, o.coverage, batchSize);
  // Keys in the spec's order, so a parsed meta and the written one read alike.
  const meta: Partial<BundleMeta> = {
    schema_version: version,
    epoch,
    global_step: globalStep,
    sync_round: syncRound,
    world_size_at_save: world,
    save_reason: saveReason,
  };
  if (seed !== undefined) meta.seed = seed;
  if (batchSize !== undefined) meta.batch_size = batchSize;
  if (elche !== undefined) meta.elche_state = elche;
  if (coverage !== undefined) meta.coverage = coverage;
  // Cross-field agreement: a file that contradicts itself is corrupt.
  const w = meta.world_size_at_save, e = meta.elche_state;
  if (e && typeof w === "number") {
    if (Array.isArray(e.smoothed_ms_per_batch) && e.smoothed_ms_per_batch.length !== w) {
      c.range(
        `"elche_state.smoothed_ms_per_batch" has ${e.smoothed_ms_per_batch.length} entries, world_size_at_save is ${w}`,
      );
    }
    if (typeof e.anchor_rank === "number" && e.anchor_rank >= w) {
      c.range(`"elche_state.anchor_rank" is ${e.anchor_rank}, world_size_at_save is ${w}`);
    }
  }
  const cov = meta.coverage;
  if (cov && meta.seed !== undefined && cov.seed !== undefined && cov.seed !== meta.seed) {
    c.range(`"coverage.seed" is ${cov.seed}, "seed" is ${meta.seed}`);
  }
  if (cov && meta.batch_size !== undefined && cov.batch_size !== undefined && cov.batch_size !== meta.batch_size) {
    c.range(`"coverage.batch_size" is ${cov.batch_size}, "batch_size" is ${meta.batch_size}`);
  }
  if (c.problems.length > 0) {
    const E = c.problems.some((p) => p.type) ? TypeError : RangeError;
    const n = c.problems.length === 1 ? "1 problem" : `${c.problems.length} problems`;
    throw new E(`Invalid bundle meta ${where} (${n}):\n  ${c.problems.map((p) => p.text).join("\n  ")}`);
  }
  return meta as BundleMeta;
}

function checkElChe(c: Checker, raw: unknown): BundleElCheState | undefined {
  const o = c.object(raw, "elche_state");
  if (!o) return undefined;
  const at = "elche_state.";
  const anchor = c.int(o, "anchor", at, 1);
  let anchorRank: number | null | undefined = null;
  if (o.anchor_rank !== null && !(o.anchor_rank === undefined && c.version < BUNDLE_SCHEMA_VERSION)) {
    anchorRank = c.int(o, "anchor_rank", at, 0);
  }
  const smoothed = c.numbers(o.smoothed_ms_per_batch, `${at}smoothed_ms_per_batch`, 0);
  let phase: Phase | undefined = "probe";
  if (!(o.phase === undefined && c.version < BUNDLE_SCHEMA_VERSION)) {
    if (PHASES.includes(o.phase as Phase)) phase = o.phase as Phase;
    else phase = c.type(`"${at}phase" must be one of ${PHASES.join(", ")}, got ${show(o.phase)}`);
  }
  const calibration = c.int(o, "calibration_count", at, 0, 0);
  const out: BundleElCheState = {
    anchor: anchor!,
    anchor_rank: anchorRank!,
    smoothed_ms_per_batch: smoothed!,
    phase: phase!,
    calibration_count: calibration!,
  };
  if (o.trend_history !== undefined) out.trend_history = c.numbers(o.trend_history, `${at}trend_history`);
  return out;
}

function checkCoverage(c: Checker, raw: unknown, topBatch: number | undefined): BundleCoverage | undefined {
  const o = c.object(raw, "coverage");
  if (!o) return undefined;
  const at = "coverage.";
  const seed = c.int(o, "seed", at, 0);
  const splits = o.epoch_splits === undefined ? 1 : c.int(o, "epoch_splits", at, 1);
  const batch = o.batch_size === undefined && c.version < BUNDLE_SCHEMA_VERSION && topBatch !== undefined
    ? topBatch
    : c.int(o, "batch_size", at, 1);
  const per: EpochCoverage[] = [];
  if (!Array.isArray(o.per_epoch)) {
    c.type(`"${at}per_epoch" must be an array, got ${show(o.per_epoch)}`);
  } else {
    o.per_epoch.forEach((e, i) => {
      const p = `${at}per_epoch[${i}].`;
      const eo = c.object(e, p.slice(0, -1));
      if (!eo) return;
      const epoch = c.int(eo, "epoch", p, 0);
      const total = c.int(eo, "total_samples", p, 0);
      const ranges: [number, number][] = [];
      if (!Array.isArray(eo.uncovered_ranges)) {
        c.type(`"${p}uncovered_ranges" must be an array of [offset, size], got ${show(eo.uncovered_ranges)}`);
      } else {
        eo.uncovered_ranges.forEach((r, k) => {
          const ok = Array.isArray(r) && r.length === 2 &&
            r.every((x) => typeof x === "number" && Number.isSafeInteger(x) && x >= 0);
          if (ok) ranges.push([r[0], r[1]]);
          else c.type(`"${p}uncovered_ranges[${k}]" must be [offset, size] of integers >= 0, got ${show(r)}`);
        });
      }
      per.push({ epoch: epoch!, total_samples: total!, uncovered_ranges: ranges });
    });
  }
  return { seed: seed!, epoch_splits: splits!, batch_size: batch!, per_epoch: per };
}

/**
 * Parse `<stem>.meta.json` bytes or text.
 * @param source File name for messages.
 * @throws {RangeError} For a file over {@link MAX_META_BYTES} or a newer schema version.
 * @throws {TypeError} For bytes that are not UTF-8 JSON, and every problem {@link checkBundleMeta} finds.
 * @example
 * ```ts
 * import { parseBundleMeta } from "./bundle_meta.ts";
 * const meta = parseBundleMeta(
 *   '{"schema_version":5,"epoch":2,"global_step":90,"sync_round":9,"world_size_at_save":2,"save_reason":"checkpoint"}',
 *   "mnist.meta.json",
 * );
 * if (meta.epoch !== 2 || meta.elche_state !== undefined) throw new Error("parsed");
 * ```
 */
export function parseBundleMeta(data: string | Uint8Array, source = "<meta.json>"): BundleMeta {
  const size = typeof data === "string" ? data.length : data.length;
  if (size > MAX_META_BYTES) {
    throw new RangeError(`"${source}" is ${size} bytes, over the ${MAX_META_BYTES}-byte limit of a bundle meta file`);
  }
  let text: string;
  try {
    text = typeof data === "string" ? data : new TextDecoder("utf-8", { fatal: true }).decode(data);
  } catch {
    throw new TypeError(`"${source}" is not UTF-8 text`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    const cut = text.trim().length === 0 ? "it is empty" : (e as Error).message;
    throw new TypeError(`"${source}" is not valid JSON (truncated or corrupt?): ${cut}`);
  }
  return checkBundleMeta(raw, source);
}

/**
 * The meta file's text, after the same validation as reading (so a writer never leaves a
 * file its reader refuses). Keys in the spec's order; `schema_version` is 5.
 * @throws {TypeError|RangeError} As {@link checkBundleMeta}, naming `source`.
 */
export function serializeBundleMeta(meta: BundleMetaInput, source = "<meta.json>"): string {
  const m = meta as Partial<BundleMeta>;
  const ordered: Record<string, unknown> = {
    schema_version: BUNDLE_SCHEMA_VERSION,
    epoch: m.epoch,
    global_step: m.global_step,
    sync_round: m.sync_round,
    world_size_at_save: m.world_size_at_save,
    save_reason: m.save_reason,
  };
  if (m.seed !== undefined) ordered.seed = m.seed;
  if (m.batch_size !== undefined) ordered.batch_size = m.batch_size;
  if (m.elche_state !== undefined) ordered.elche_state = m.elche_state;
  if (m.coverage !== undefined) ordered.coverage = m.coverage;
  // Round-trip through JSON first: what is checked is exactly what a reader will see.
  const text = JSON.stringify(ordered, null, 2) + "\n";
  checkBundleMeta(JSON.parse(text), source);
  return text;
}

/** The run's side of {@link checkResumeCompatible}; a field left undefined is not checked. */
export interface ResumeRun {
  /** The run's shuffle seed. */
  seed?: number;
  /** The run's per-rank batch size. */
  batchSize?: number;
  /** Ranks the run starts with. */
  worldSize?: number;
  /** Slices per epoch of the run. */
  epochSplits?: number;
  /** The bundle's name (stem), for messages. */
  source?: string;
}

/**
 * Refuse a resume whose run disagrees with the bundle: the shuffle seed
 * (`coverage.seed`, else `seed`), the batch size (`coverage.batch_size`, else
 * `batch_size`), the world size (`world_size_at_save`) and `coverage.epoch_splits`. A value
 * the bundle did not record is not checked.
 * @throws {RangeError} `Cannot resume from "<stem>" (k problems):` then one line per
 *   disagreement, each naming the bundle's value and the run's.
 * @example
 * ```ts
 * import { checkResumeCompatible, parseBundleMeta } from "./bundle_meta.ts";
 * const meta = parseBundleMeta(
 *   '{"schema_version":5,"epoch":0,"global_step":0,"sync_round":0,"world_size_at_save":2,"save_reason":"checkpoint","seed":7}',
 * );
 * checkResumeCompatible(meta, { seed: 7, worldSize: 2 }); // agrees: no error
 * ```
 */
export function checkResumeCompatible(meta: BundleMeta, run: ResumeRun): void {
  const problems: string[] = [];
  const check = (what: string, saved: number | null | undefined, now: number | undefined) => {
    if (saved === undefined || saved === null || now === undefined || saved === now) return;
    problems.push(`${what} is ${saved} in the bundle, this run has ${now}`);
  };
  check("seed", meta.coverage?.seed ?? meta.seed, run.seed);
  check("batch size", meta.coverage?.batch_size ?? meta.batch_size, run.batchSize);
  check("world size", meta.world_size_at_save, run.worldSize);
  check("epoch_splits", meta.coverage?.epoch_splits, run.epochSplits);
  if (problems.length > 0) {
    const n = problems.length === 1 ? "1 problem" : `${problems.length} problems`;
    throw new RangeError(`Cannot resume from "${run.source ?? "bundle"}" (${n}):\n  ${problems.join("\n  ")}`);
  }
}
