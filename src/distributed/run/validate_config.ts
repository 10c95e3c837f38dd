/**
 * Build-time validation and resolution of a run config. flodl clamps or
 * raises several knobs silently; here a user value is never clamped or replaced: it is
 * rejected with a message naming the builder method, the expected range and the value.
 */

import {
  cpuEquivalent,
  type DdpRunConfig,
  DEFAULT_MAX_ANCHOR,
  DEFAULT_OVERHEAD_TARGET,
  ElCheConfig,
  ElCheMode,
  Reduction,
} from "../coordinator/control/config.ts";
import type { ResolvedRunConfig } from "../coordinator/control/config.ts";

export type { ResolvedRunConfig };
import { CORE_REDUCTIONS } from "../../monitor/mod.ts";

/** What is known at validation time beyond the config itself. */
export interface ValidationContext {
  /** Ranks in the run; enables the W-dependent rules (partitionRatios length, epochCallbackPolicy rank). */
  worldSize?: number;
  /** Samples in the dataset; enables the epoch-geometry rule (epochSplits). */
  datasetLen?: number;
}

const PREFIX = "Trainer.run: ";

function fail(knob: string, expected: string, got: unknown): never {
  throw new RangeError(`${PREFIX}${knob} must be ${expected}, got ${show(got)}`);
}

function show(v: unknown): string {
  if (Array.isArray(v)) return `[${v.join(", ")}]`;
  return typeof v === "string" ? JSON.stringify(v) : String(v);
}

function num(knob: string, v: unknown): number {
  if (typeof v !== "number") throw new TypeError(`${PREFIX}${knob} must be a number, got ${typeof v} ${show(v)}`);
  return v;
}

function int(knob: string, v: unknown, min: number): void {
  if (!Number.isInteger(num(knob, v)) || (v as number) < min) fail(knob, `an integer >= ${min}`, v);
}

function inRange(knob: string, v: unknown, lo: number, hi: number, loOpen = false): void {
  const x = num(knob, v);
  if (!(loOpen ? x > lo : x >= lo) || !(x <= hi)) fail(knob, `in ${loOpen ? "(" : "["}${lo}, ${hi}]`, v);
}

function finite(knob: string, v: unknown, min?: number, minOpen = false): void {
  const x = num(knob, v);
  if (!Number.isFinite(x)) fail(knob, min === undefined ? "finite" : `finite and ${minOpen ? ">" : ">="} ${min}`, v);
  if (min !== undefined && !(minOpen ? x > min : x >= min)) fail(knob, `finite and ${minOpen ? ">" : ">="} ${min}`, v);
}

/**
 * Check every build-time validation rule of flodl plus the ranges of knobs flodl
 * clamps. Rules needing W or the dataset length run only when `ctx` provides them.
 * @throws {TypeError} A required knob is missing or a value has the wrong type.
 * @throws {RangeError} A value is out of range; the message names the knob, range and value.
 * @example
 * ```ts
 * import { defaultRunConfig } from "../coordinator/control/config.ts";
 * import { validateConfig } from "./validate_config.ts";
 * const cfg = { ...defaultRunConfig(), batchSize: 32, numEpochs: 2 };
 * validateConfig(cfg, { worldSize: 2, datasetLen: 1000 });
 * ```
 */
export function validateConfig(cfg: DdpRunConfig, ctx: ValidationContext = {}): void {
  if (cfg.batchSize === undefined) throw new TypeError(`${PREFIX}batchSize is required, got undefined`);
  if (cfg.numEpochs === undefined) throw new TypeError(`${PREFIX}numEpochs is required, got undefined`);
  int("batchSize", cfg.batchSize, 1);
  int("numEpochs", cfg.numEpochs, 1);
  if (!["sync", "cadence", "async"].includes(cfg.policy)) fail("policy", "one of sync, cadence, async", cfg.policy);
  if (!["nccl", "cpu"].includes(cfg.backend)) fail("backend", "one of nccl, cpu", cfg.backend);
  const e = cfg.elche;
  // Rules 1 and 7 (nccl-* is the shared-memory collective: no bf16 wire, as in flodl).
  const mode = ElCheMode.fromParts(cfg.policy, cfg.backend);
  if (e.bf16Wire && cfg.backend === "nccl") {
    throw new RangeError(
      `${PREFIX}bf16Wire applies to the CPU averaging plane only (cpu-sync, cpu-cadence, cpu-async); ` +
        `drop .bf16Wire(true) or use ${cpuEquivalent(mode)}, got ${mode}`,
    );
  }
  validateElche(e, ctx.worldSize);
  // Knobs flodl clamps: rejected instead.
  finite("lrScaleRatio", cfg.lrScaleRatio, 0);
  if (cfg.maxGradNorm !== undefined) finite("maxGradNorm", cfg.maxGradNorm, 0, true);
  if (cfg.checkpointEvery !== undefined) int("checkpointEvery", cfg.checkpointEvery, 1);
  if (cfg.checkpointAtEpoch !== undefined) int("checkpointAtEpoch", cfg.checkpointAtEpoch, 0);
  finite("heartbeatTimeoutSecs", cfg.heartbeatTimeoutSecs, 0, true);
  finite("reconnectGraceSecs", cfg.reconnectGraceSecs, 0, true);
  finite("snapshotTimeoutSecs", cfg.snapshotTimeoutSecs, 0, true);
  int("reportsPerEpoch", cfg.reportsPerEpoch, 0);
  if (cfg.recordLog) int("recordLog maxBytes", cfg.recordLog.maxBytes, 0);
  int("augment", cfg.augment, 1);
  int("epochSplits", cfg.epochSplits, 1);
  inRange("vramMaxUsage", cfg.vramMaxUsage, 0.5, 0.99);
  inRange("ramMaxUsage", cfg.ramMaxUsage, 0, 0.9);
  // GB, fractions allowed (a browser's OPFS quota is often a few hundred MB).
  finite("diskStage", cfg.diskStageGb, 0);
  if (typeof cfg.vramPool !== "boolean") throw new TypeError(`${PREFIX}vramPool must be a boolean, got ${typeof cfg.vramPool} ${show(cfg.vramPool)}`);
  if (typeof cfg.sampleCache !== "boolean") {
    throw new TypeError(`${PREFIX}sampleCache must be a boolean, got ${typeof cfg.sampleCache} ${show(cfg.sampleCache)}`);
  }
  if (cfg.diskStageDir !== undefined && (typeof cfg.diskStageDir !== "string" || cfg.diskStageDir === "")) {
    fail("diskStageDir", "a non-empty path", cfg.diskStageDir);
  }
  if (!Number.isSafeInteger(num("seed", cfg.seed)) || cfg.seed < 0) fail("seed", "a safe integer >= 0", cfg.seed);
  if (cfg.evalEvery) int("evalEvery", cfg.evalEvery.n, 0);
  if (cfg.dashboardTheme !== undefined && !["light", "dark", "auto"].includes(cfg.dashboardTheme)) {
    fail("dashboardTheme", `one of "light", "dark", "auto"`, cfg.dashboardTheme);
  }
  const reductions = Object.values(Reduction) as string[];
  for (const [key, red] of Object.entries(cfg.scalarReductions)) {
    if (!reductions.includes(red)) fail(`scalarReduction("${key}")`, `one of ${reductions.join(", ")}`, red);
    const core = CORE_REDUCTIONS[key];
    if (core !== undefined && core !== red) fail(`scalarReduction("${key}")`, `${core} (a core key, fixed)`, red);
  }
  // Rule 8: each epoch slice must hold at least one batch.
  if (ctx.datasetLen !== undefined && cfg.epochSplits > 1) {
    const slice = Math.floor((ctx.datasetLen * cfg.augment) / cfg.epochSplits);
    if (slice < cfg.batchSize) {
      throw new RangeError(
        `${PREFIX}epochSplits must leave at least one batch per slice: floor(${ctx.datasetLen} samples × augment ` +
          `${cfg.augment} / ${cfg.epochSplits}) = ${slice} < batchSize ${cfg.batchSize}, got ${cfg.epochSplits}`,
      );
    }
  }
  // Rule 9.
  const cb = cfg.epochCallbackPolicy;
  if (cb.kind === "rank") {
    int("epochCallbackPolicy rank", cb.rank, 0);
    if (ctx.worldSize !== undefined && cb.rank >= ctx.worldSize) {
      fail("epochCallbackPolicy rank", `< world size ${ctx.worldSize}`, cb.rank);
    }
  }
}

function validateElche(e: ElCheConfig, worldSize?: number): void {
  int("anchor", e.anchor, 1);
  if (e.minAnchor !== undefined) int("minAnchor", e.minAnchor, 1);
  if (e.maxAnchor !== undefined) int("maxAnchor", e.maxAnchor, 1);
  const maxA = e.maxAnchor ?? DEFAULT_MAX_ANCHOR;
  if (e.minAnchor !== undefined && e.minAnchor > maxA) {
    fail("minAnchor", `<= maxAnchor (${maxA}${e.maxAnchor === undefined ? ", the default" : ""})`, e.minAnchor);
  }
  if (e.overheadTarget !== undefined) inRange("overheadTarget", e.overheadTarget, 0.01, 0.5);
  if (e.maxBatchDiff !== undefined) int("maxBatchDiff", e.maxBatchDiff, 0);
  if (e.maxOvershoot !== undefined) int("maxOvershoot", e.maxOvershoot, 0);
  if (e.divergenceThreshold !== undefined) finite("divergenceThreshold", e.divergenceThreshold, 0);
  // Rules 2, 3, 4.
  const r = e.partitionRatios;
  if (r !== undefined) {
    if (!Array.isArray(r)) throw new TypeError(`${PREFIX}partitionRatios must be an array, got ${typeof r}`);
    if (r.length === 0 || r.some((x) => typeof x !== "number" || !Number.isFinite(x) || x <= 0)) {
      fail("partitionRatios", "non-empty, finite and > 0 per rank", r);
    }
    const sum = r.reduce((a, b) => a + b, 0);
    if (Math.abs(sum - 1) > 0.05) fail("partitionRatios", `summing to 1 ± 0.05 (sum ${sum.toFixed(4)})`, r);
    if (worldSize !== undefined && r.length !== worldSize) {
      fail("partitionRatios", `one ratio per rank (world size ${worldSize})`, r);
    }
  }
  if (e.easgdAlpha !== undefined) inRange("easgdAlpha", e.easgdAlpha, 0, 1, true);
  finite("gamma", e.gamma);
}

/**
 * Validate, then fill every derived value: the mode from policy × backend (rule 5), EASGD α
 * from the mode default (rule 6), the anchor bounds and the auto knobs.
 * @throws {TypeError | RangeError} As {@link validateConfig}.
 * @example
 * ```ts
 * import { defaultRunConfig } from "../coordinator/control/config.ts";
 * import { resolveConfig } from "./validate_config.ts";
 * const r = resolveConfig({ ...defaultRunConfig(), policy: "async", batchSize: 8, numEpochs: 1 });
 * r.mode; // "cpu-async"
 * r.easgdAlpha; // 0.5
 * ```
 */
export function resolveConfig(cfg: DdpRunConfig, ctx: ValidationContext = {}): ResolvedRunConfig {
  validateConfig(cfg, ctx);
  const mode = ElCheMode.fromParts(cfg.policy, cfg.backend);
  const elche = cfg.elche.with({ mode });
  if (elche.easgdAlpha === undefined) elche.easgdAlpha = ElCheConfig.defaultFor(mode).easgdAlpha;
  const warnings: string[] = [];
  const async = cfg.policy === "async";
  if (!async && cfg.elche.easgdAlpha !== undefined) {
    warnings.push(`easgdAlpha ${cfg.elche.easgdAlpha} has no effect under ${cfg.policy} (EASGD is Async only)`);
  }
  if (!async && elche.maxOvershoot !== undefined) {
    warnings.push(`maxOvershoot ${elche.maxOvershoot} has no effect under ${cfg.policy} (Async only)`);
  }
  if (!async && elche.relaxUp) warnings.push(`elcheRelaxUp has no effect under ${cfg.policy} (Async only)`);
  const progressive = cfg.progressiveDispatch ?? cfg.policy !== "sync";
  if (elche.partitionRatios && cfg.policy !== "sync") {
    warnings.push(`partitionRatios are ignored under ${cfg.policy} (Sync only; ElChe balances Cadence/Async)`);
  }
  if (cfg.checkpointAtEpoch !== undefined && !progressive) {
    warnings.push("checkpointAtEpoch needs progressive dispatch (Cadence/Async); it will not fire");
  }
  const maxAnchor = elche.maxAnchor ?? DEFAULT_MAX_ANCHOR;
  const minAnchor = elche.minAnchor ?? Math.min(elche.anchor, maxAnchor);
  const anchor = Math.min(Math.max(elche.anchor, minAnchor), maxAnchor);
  return {
    ...cfg,
    batchSize: cfg.batchSize!,
    numEpochs: cfg.numEpochs!,
    elche,
    mode,
    anchor,
    minAnchor,
    maxAnchor,
    overheadTarget: elche.overheadTarget ?? DEFAULT_OVERHEAD_TARGET,
    progressive,
    easgdAlpha: async ? elche.easgdAlpha : undefined,
    warnings,
  };
}
