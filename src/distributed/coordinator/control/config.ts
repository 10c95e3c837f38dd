/**
 * The vocabulary of the data-parallel trainer's configuration: policies,
 * backends, modes, the ElChe strategy object and its presets, and the run config with
 * every knob's default. Validation lives in `validate_config.ts`.
 *
 * Enum-like values are string unions with a same-named constant object, so both
 * `.policy(ApplyPolicy.Cadence)` and `.policy("cadence")` type-check.
 */

import type { ConvergenceGuard } from "./guards.ts";
import type { MaxFailureThreshold } from "./max_failure.ts";

export { MaxFailureThreshold } from "./max_failure.ts";

import { Reduction } from "../../../monitor/mod.ts";
import { ApplyPolicy, AverageBackend } from "./policy.ts";
import { DEFAULT_RECONNECT_GRACE_SECS } from "./grace.ts";

export { ApplyPolicy, AverageBackend };

/** One name for policy × backend. There is no `nccl-async` (dropped in flodl 0.7). */
export type ElCheMode = "nccl-sync" | "nccl-cadence" | "cpu-sync" | "cpu-cadence" | "cpu-async";

const MODE_PARTS: Record<ElCheMode, readonly [ApplyPolicy, AverageBackend]> = {
  "nccl-sync": ["sync", "nccl"],
  "nccl-cadence": ["cadence", "nccl"],
  "cpu-sync": ["sync", "cpu"],
  "cpu-cadence": ["cadence", "cpu"],
  "cpu-async": ["async", "cpu"],
};

/**
 * Mode names plus `split` / `fromParts`.
 * @example
 * ```ts
 * import { ElCheMode } from "./config.ts";
 * ElCheMode.split(ElCheMode.CpuAsync); // ["async", "cpu"]
 * ElCheMode.fromParts("cadence", "cpu"); // "cpu-cadence"
 * ```
 */
export const ElCheMode = {
  NcclSync: "nccl-sync",
  NcclCadence: "nccl-cadence",
  CpuSync: "cpu-sync",
  CpuCadence: "cpu-cadence",
  CpuAsync: "cpu-async",
  /** Every mode, in table order. */
  all(): ElCheMode[] {
    return Object.keys(MODE_PARTS) as ElCheMode[];
  },
  /** True when `x` names a mode. */
  is(x: unknown): x is ElCheMode {
    return typeof x === "string" && Object.hasOwn(MODE_PARTS, x);
  },
  /** `[policy, backend]` of a mode. */
  split(mode: ElCheMode): [ApplyPolicy, AverageBackend] {
    const parts = MODE_PARTS[mode];
    if (!parts) throw new RangeError(`ElCheMode.split: expected one of ${ElCheMode.all().join(", ")}, got ${mode}`);
    return [parts[0], parts[1]];
  },
  /**
   * The mode of a policy × backend pair.
   * @throws {RangeError} For (async, nccl): NCCL async was dropped; use cpu-async.
   */
  fromParts(policy: ApplyPolicy, backend: AverageBackend): ElCheMode {
    if (policy === "async" && backend === "nccl") {
      throw new RangeError(
        "Trainer.run: policy Async with backend Nccl is not supported (NCCL async was dropped); " +
          "use cpu-async, got async + nccl",
      );
    }
    const mode = `${backend}-${policy}`;
    if (!ElCheMode.is(mode)) {
      throw new RangeError(`ElCheMode.fromParts: unknown policy/backend, got ${policy} + ${backend}`);
    }
    return mode;
  },
} as const;

/** The `cpu-*` mode with the pacing of `mode` (what a bf16 wire or a page without cross-origin isolation may use instead). */
export function cpuEquivalent(mode: ElCheMode): ElCheMode {
  return ElCheMode.fromParts(ElCheMode.split(mode)[0], "cpu");
}

/** Plain-data fields of {@link ElCheConfig}; `undefined` means "framework default". */
export interface ElCheFields {
  /** Policy × backend; `.elche(cfg)` sets the run's policy and backend from it. Default cpu-cadence. */
  mode: ElCheMode;
  /** Initial anchor A (batches of the slow rank per window), integer >= 1. */
  anchor: number;
  /** Auto-tune floor of A, integer >= 1 (`.minAnchor()`); unset: the initial anchor (at most `maxAnchor`). */
  minAnchor?: number;
  /** Auto-tune ceiling of A, integer >= 1 (`.maxAnchor()`); unset: 1000. */
  maxAnchor?: number;
  /** τ, share of compute time the fixed per-window cost may take; [0.01, 0.50], default 0.05. */
  overheadTarget?: number;
  /** d, most batches any rank may lead the slowest by; 0 = strict lockstep. */
  maxBatchDiff?: number;
  /** Grow A by one on each Stable verdict (Async only). */
  relaxUp: boolean;
  /** Static per-rank data shares (Sync only); length W, > 0, sum 1 ± 0.05. */
  partitionRatios?: number[];
  /** Run the LR-aware meta-controller above ElChe (nudges A down on an LR cliff or a divergence streak); default on. */
  metaController: boolean;
  /** Explicit guard; wins over `noDivergenceGuard` and `divergenceThreshold`. */
  convergenceGuard?: ConvergenceGuard;
  /** Threshold of the default TrendGuard, finite >= 0; unset: 0.05 (0.3 with EASGD). */
  divergenceThreshold?: number;
  /** Use NoGuard instead of the default TrendGuard (an explicit `convergenceGuard` still wins); default false. */
  noDivergenceGuard: boolean;
  /** Extra steps past `c[r]` an Async rank may run; unset = auto-tuned (3..15). */
  maxOvershoot?: number;
  /** Consensus weighting exponent: rank k weighs n_k^γ. Any finite value. */
  gamma: number;
  /** Ship parameters as bf16 on the CPU averaging plane. */
  bf16Wire: boolean;
  /** EASGD blend α in (0, 1], honoured under Async only. */
  easgdAlpha?: number;
}

/**
 * A complete ElChe strategy (flodl `ElCheConfig`): mode plus cadence, guard and
 * consensus knobs. Fields are public and mutable; presets give flodl's per-mode table.
 * The default mode here is cpu-cadence (it runs on every page; nccl-* needs shared memory), not flodl's nccl-cadence.
 * @example
 * ```ts
 * import { ElCheConfig } from "./config.ts";
 * const cfg = ElCheConfig.cpuAsync().with({ maxAnchor: 200 });
 * cfg.easgdAlpha; // 0.5
 * ```
 */
export class ElCheConfig implements ElCheFields {
  mode: ElCheMode = "cpu-cadence";
  anchor = 10;
  minAnchor?: number;
  maxAnchor?: number;
  overheadTarget?: number;
  maxBatchDiff?: number;
  relaxUp = false;
  partitionRatios?: number[];
  metaController = true;
  convergenceGuard?: ConvergenceGuard;
  divergenceThreshold?: number;
  noDivergenceGuard = false;
  maxOvershoot?: number;
  gamma = 1.0;
  bf16Wire = false;
  easgdAlpha?: number;

  /** Base defaults, then `init`. */
  constructor(init: Partial<ElCheFields> = {}) {
    Object.assign(this, init);
    if (init.partitionRatios) this.partitionRatios = [...init.partitionRatios];
  }

  /** A copy with `patch` applied. */
  with(patch: Partial<ElCheFields>): ElCheConfig {
    return new ElCheConfig({ ...this.fields(), ...patch });
  }

  /** A copy (the guard object is shared, as flodl moves it). */
  clone(): ElCheConfig {
    return new ElCheConfig(this.fields());
  }

  /** The fields as a plain object. */
  fields(): ElCheFields {
    return { ...this, partitionRatios: this.partitionRatios ? [...this.partitionRatios] : undefined };
  }

  /** cpu-sync: anchor 1. */
  static cpuSync(): ElCheConfig {
    return ElCheConfig.defaultFor("cpu-sync");
  }
  /** cpu-cadence: base defaults. */
  static cpuCadence(): ElCheConfig {
    return ElCheConfig.defaultFor("cpu-cadence");
  }
  /** cpu-async: overhead target 0.05 set explicitly, EASGD α 0.5. */
  static cpuAsync(): ElCheConfig {
    return ElCheConfig.defaultFor("cpu-async");
  }
  /** nccl-sync: anchor 1; ranks reduce among themselves through shared memory (reduce_nccl.ts). */
  static ncclSync(): ElCheConfig {
    return ElCheConfig.defaultFor("nccl-sync");
  }
  /** nccl-cadence: ranks reduce among themselves through shared memory (reduce_nccl.ts). */
  static ncclCadence(): ElCheConfig {
    return ElCheConfig.defaultFor("nccl-cadence");
  }

  /** The preset of a mode. */
  static defaultFor(mode: ElCheMode): ElCheConfig {
    const [policy] = ElCheMode.split(mode);
    if (policy === "sync") return new ElCheConfig({ mode, anchor: 1 });
    if (policy === "async") return new ElCheConfig({ mode, overheadTarget: 0.05, easgdAlpha: 0.5 });
    return new ElCheConfig({ mode });
  }
}

/** Eval cadence; only "every n epochs" exists (n = 0: never). */
export interface EvalCadence {
  /** The only kind: a period in epochs. */
  readonly kind: "epochs";
  /** Epochs between evals, integer >= 0 (0: never). */
  readonly n: number;
}
/** Makes an {@link EvalCadence} (`EvalCadence.epochs(n)`) and tells whether one is due. */
export const EvalCadence = {
  /**
   * Eval every `n` epochs.
   * @throws {RangeError} When `n` is not an integer >= 0.
   */
  epochs(n: number): EvalCadence {
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`EvalCadence.epochs: n must be an integer >= 0, got ${n}`);
    return { kind: "epochs", n };
  },
  /** True when an eval is due at epoch boundary `k` (k >= 1: the consensus after epoch k-1). */
  due(cadence: EvalCadence | undefined, k: number): boolean {
    return cadence !== undefined && cadence.n > 0 && k > 0 && k % cadence.n === 0;
  },
} as const;

/** Which rank runs epochFn / checkpointFn / evalFn. */
export type EpochCallbackPolicy = { readonly kind: "fastest" } | { readonly kind: "rank"; readonly rank: number };
/** Makes an {@link EpochCallbackPolicy}: `EpochCallbackPolicy.fastest()` (the default) or `.rank(n)`. */
export const EpochCallbackPolicy = {
  /** The alive rank with the lowest smoothed ms/batch (lowest index before calibration); sticky. */
  fastest(): EpochCallbackPolicy {
    return { kind: "fastest" };
  },
  /**
   * A fixed rank; `n >= W` is rejected by `run()`.
   * @throws {RangeError} When `n` is not an integer >= 0.
   */
  rank(n: number): EpochCallbackPolicy {
    if (!Number.isInteger(n) || n < 0) {
      throw new RangeError(`EpochCallbackPolicy.rank: n must be an integer >= 0, got ${n}`);
    }
    return { kind: "rank", rank: n };
  },
} as const;

/** How a scalar rolls up across ranks in the record tree; declared in monitor/roll_up.ts. */
export { Reduction };

/** Max anchor when unset ([0.7]; [0.5] used 200). */
export const DEFAULT_MAX_ANCHOR = 1000;
/** Overhead target τ when unset ([0.7]; [0.5] used 0.10). */
export const DEFAULT_OVERHEAD_TARGET = 0.05;
/** Per-node record-log cap when `maxBytes` is 0: 32 MiB. */
export const DEFAULT_RECORD_LOG_BYTES = 32 * 1024 * 1024;
/** Base shuffle seed (flodl 0.5's 42; 0.7 records its base constant in checkpoints, so any fixed value works). */
export const DEFAULT_SHUFFLE_SEED = 42;

/** Every knob of a run, with defaults from {@link defaultRunConfig}. */
export interface DdpRunConfig {
  /** Per-rank batch size, integer >= 1 (`.batchSize()`); required by `run()`. */
  batchSize?: number;
  /** Epochs to train, integer >= 1 (`.numEpochs()`); required by `run()`. */
  numEpochs?: number;
  /** When a reduce fires (`.policy()`); default "cadence". */
  policy: ApplyPolicy;
  /** How a reduce travels (`.backend()`); default "cpu". */
  backend: AverageBackend;
  /** Cadence / guard / consensus strategy; `elche.mode` is reconciled from policy × backend by `resolveConfig`. */
  elche: ElCheConfig;
  /** Unset: on for Cadence/Async, off for Sync. */
  progressiveDispatch?: boolean;
  /** Per-rank gradient clipping to this global L2 norm, finite and > 0 (`.maxGradNorm()`); unset: no clipping. */
  maxGradNorm?: number;
  /** Linear LR scaling: lr × (1 + (W − 1)·ratio), finite >= 0 (`.lrScaleRatio()`); default 1, 0 = off. */
  lrScaleRatio: number;
  /** Every n epochs (integer >= 1): a bundle under `savePath` and the rank-side `checkpointFn`; unset: never. */
  checkpointEvery?: number;
  /** Checkpoint bundle stem, a relative path without extension (`.savePath()`); unset: no bundle is written. */
  savePath?: string;
  /** Stem of a bundle to resume from (`.resumeFrom()`). */
  resumeFrom?: string;
  /** One bundle at the first reduce where any rank reached this epoch; needs `savePath` and progressive dispatch. */
  checkpointAtEpoch?: number;
  /** Dead ranks that make the run unrecoverable (`.maxFailure()`); unset: any partial loss is tolerated. */
  maxFailure?: MaxFailureThreshold;
  /** A rank silent longer than this many seconds is declared lost (`.heartbeatTimeoutSecs()`); default 30. */
  heartbeatTimeoutSecs: number;
  /**
   * How long a remote rank may be away (link lost, tab frozen, process stopped) and come back
   * without a loss (`.reconnectGraceSecs()`); default 60. Every reconnect window derives from
   * it (control/grace.ts).
   */
  reconnectGraceSecs: number;
  /** Snapshot timeout, seconds (finite, > 0); default 5. Validated, but nothing in this port reads it yet. */
  snapshotTimeoutSecs: number;
  /** Which rank runs epochFn / checkpointFn / evalFn (`.epochCallbackPolicy()`); default fastest. */
  epochCallbackPolicy: EpochCallbackPolicy;
  /** Eval cadence between epochs (`.evalEvery()`); unset: only the final eval after the last epoch. */
  evalEvery?: EvalCadence;
  /** Sub-epoch monitor records at reduce boundaries, at most n per epoch (`.reportsPerEpoch()`); default 0, off. */
  reportsPerEpoch: number;
  /** Record log directory and per-node byte cap (0 = {@link DEFAULT_RECORD_LOG_BYTES}). */
  recordLog?: { dir: string; maxBytes: number };
  /** Each sample appears this many times per epoch, integer >= 1 (`.augment()`); default 1. */
  augment: number;
  /** Slices per epoch, integer >= 1; recorded in bundles and checked on resume. Default 1. */
  epochSplits: number;
  /** Device-resident sample pool (`.vramPool()`); default on. */
  vramPool: boolean;
  /** Share of the device budget the data plane may fill, [0.5, 0.99] (`.vramMaxUsage()`); default 0.9. */
  vramMaxUsage: number;
  /** Share of the host's available memory (÷ local ranks) for the RAM sample cache, [0, 0.9]; default 0.5. */
  ramMaxUsage: number;
  /** Read-through RAM cache of raw samples across epochs, for `readBatch` sources (`.sampleCache()`); default on. */
  sampleCache: boolean;
  /** Disk stage per rank, GB, finite >= 0 (`.diskStage()`); default 0, off. */
  diskStageGb: number;
  /** Where the disk stage's per-run folder is made (`.diskStageDir()`); unset: the system temp dir (browser: OPFS). */
  diskStageDir?: string;
  /** Base shuffle seed; epoch e uses seed + e. */
  seed: number;
  /** Roll-up of user scalars; core keys are fixed. */
  scalarReductions: Record<string, Reduction>;
  /** Where the run's dashboard HTML is saved at the end (`.saveDashboard()`); unset: not saved. */
  dashboardPath?: string;
  /** Theme of the saved dashboard (`.dashboardTheme()`); unset: follow the reader's system. */
  dashboardTheme?: "light" | "dark" | "auto";
}

/** A fresh run config holding every default of flodl's (backend Cpu, mode cpu-cadence on the web). */
export function defaultRunConfig(): DdpRunConfig {
  return {
    policy: "cadence",
    backend: "cpu",
    elche: new ElCheConfig(),
    lrScaleRatio: 1.0,
    heartbeatTimeoutSecs: 30,
    reconnectGraceSecs: DEFAULT_RECONNECT_GRACE_SECS,
    snapshotTimeoutSecs: 5,
    epochCallbackPolicy: EpochCallbackPolicy.fastest(),
    reportsPerEpoch: 0,
    augment: 1,
    epochSplits: 1,
    vramPool: true,
    vramMaxUsage: 0.9,
    ramMaxUsage: 0.5,
    sampleCache: true,
    diskStageGb: 0,
    seed: DEFAULT_SHUFFLE_SEED,
    scalarReductions: {},
  };
}

/**
 * Linear LR scaling factor: `1 + (W - 1) · ratio` when W > 1 and ratio > 0, else 1.
 * @example
 * ```ts
 * import { lrScaleFactor } from "./config.ts";
 * lrScaleFactor(4, 0.5); // 2.5
 * ```
 */
export function lrScaleFactor(worldSize: number, ratio: number): number {
  return worldSize > 1 && ratio > 0 ? 1 + (worldSize - 1) * ratio : 1;
}

/** A validated config with every derived value filled in. */
export interface ResolvedRunConfig extends DdpRunConfig {
  batchSize: number;
  numEpochs: number;
  /** policy × backend; also written to `elche.mode`. */
  mode: ElCheMode;
  /** Initial anchor: `elche.anchor`, lifted to `minAnchor` / lowered to `maxAnchor` when those bounds are set. */
  anchor: number;
  minAnchor: number;
  maxAnchor: number;
  overheadTarget: number;
  progressive: boolean;
  /** EASGD α in effect: set under Async only (mode default 0.5 for cpu-async). */
  easgdAlpha?: number;
  /** Knobs that are set but have no effect in this mode (flodl prints these as warnings). */
  warnings: string[];
}
