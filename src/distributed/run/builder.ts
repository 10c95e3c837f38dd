/**
 * `Trainer.builder(...)`: flodl's `DdpBuilder`, one fluent method per knob with flodl's
 * name (camelCased), meaning and default, then `run()` / `intoWorker()`.
 *
 * Over 450 lines on purpose: one short documented method per flodl builder method (a line
 * or two of body each), then `run`, `intoWorker` and `clone`; splitting it would split the
 * API's one page. What a knob does lives elsewhere (config and its validation, launch, the
 * coordinator), and the state it fills is `builder_state.ts`.
 */
import { type AsyncBatchSource, batchDatasetFrom, type BatchDataSet, type DataSet } from "../../data/mod.ts";
import type { Module } from "../../nn/mod.ts";
import type { Scheduler } from "../../optim/mod.ts";
import {
  type ApplyPolicy,
  type AverageBackend,
  type DdpRunConfig,
  defaultRunConfig,
  ElCheConfig,
  ElCheMode,
  type EpochCallbackPolicy,
  type EvalCadence,
  type Reduction,
} from "../coordinator/control/config.ts";
import { type ConvergenceGuard } from "../coordinator/control/guards.ts";
import type { MaxFailureThreshold } from "../coordinator/control/max_failure.ts";
import type { EpochMetrics } from "../coordinator/report/metrics.ts";
import type { OuterOptimizer } from "../protocol/outer.ts";
import type { RunObserver } from "../coordinator/report/observer.ts";
import {
  type EvalFn,
  RankRuntime,
  type ModelFactory,
  type OptimFactory,
  type RankSpec,
  type RankWorker,
  type TrainFn,
  type TransformFn,
} from "../rank/rank_runtime.ts";
import { callerSite, type CallSite, isRank, markRan, register } from "./reentry.ts";
import type { DdpHandle } from "./handle.ts";
import { attachObserver, launch } from "./launch.ts";
import { type CoopWorker, intoWorker, rankWorker } from "./coop.ts";
import type { BuilderState, ClusterSpec, RankSpecification, RemoteRanksSpec } from "./builder_state.ts";

export type { BuilderState, ClusterSpec, RankSpecification, RemoteRanksSpec };
import type { Timeline } from "../../monitor/mod.ts";

/**
 * Fluent builder returned by {@link Trainer.builder}: every method of flodl's `DdpBuilder`,
 * camelCased, with the same meaning and defaults. One web
 * deviation: the default backend is Cpu (mode cpu-cadence), which runs on every page;
 * Nccl is the ranks' shared-memory collective (a page needs cross-origin isolation).
 *
 * Rank-side callbacks (dataset, evalDataset, evalFn, checkpointFn, epochFn, transform,
 * scheduler) must be attached in the module that calls `Trainer.builder()`, at top level:
 * each rank worker re-runs that module to rebuild them.
 */
export class DdpBuilder<M extends Module> {
  #s: BuilderState<M>;

  /** Use {@link Trainer.builder}. */
  constructor(site: CallSite, modelFactory: ModelFactory<M>, optimFactory: OptimFactory, trainFn: TrainFn<M>) {
    this.#s = {
      spec: { modelFactory, optimFactory, trainFn },
      config: defaultRunConfig(),
      explicit: new Set(),
      entryTimeoutSecs: 30,
      site,
      createRuntime: (device) => {
        const rt = new RankRuntime(this.#s.spec, device);
        const coop = this.#s.coop;
        if (coop) {
          coop.runtime = rt;
          rt.external = (plan) => coop.submit(plan);
          rt.onStop = () => coop.close();
        }
        return rt;
      },
    };
  }

  #set(knob: string, fn: (c: DdpRunConfig) => void): this {
    this.#s.explicit.add(knob);
    fn(this.#s.config);
    return this;
  }

  /**
   * Training dataset (required): a batch dataset in memory (`getBatch(indices)`), or a source
   * read by index asynchronously (`readBatch(indices)`: a `PackSource` over a file or HTTP
   * Range requests), which gets the RAM cache and the disk stage in front of it.
   */
  dataset(dataset: BatchDataSet | AsyncBatchSource): this {
    this.#s.spec.dataset = dataset;
    return this;
  }
  /** Training dataset from a per-sample dataset (`get(index)`); batching is the framework's job. */
  sampleDataset(dataset: DataSet): this {
    this.#s.spec.dataset = batchDatasetFrom(dataset);
    return this;
  }
  /** Per-rank batch size (required). */
  batchSize(size: number): this {
    return this.#set("batchSize", (c) => (c.batchSize = size));
  }
  /** Number of epochs (required). */
  numEpochs(n: number): this {
    return this.#set("numEpochs", (c) => (c.numEpochs = n));
  }
  /** When to reduce: Sync, Cadence (default) or Async. */
  policy(policy: ApplyPolicy): this {
    return this.#set("policy", (c) => (c.policy = policy));
  }
  /**
   * How to reduce: Cpu (default on the web: through the coordinator) or Nccl (the ranks
   * sum among themselves in a SharedArrayBuffer; pages need COOP/COEP headers).
   */
  backend(backend: AverageBackend): this {
    return this.#set("backend", (c) => (c.backend = backend));
  }
  /** Outer optimizer applied to the consensus between reduce and broadcast (SlowMo, DiLoCo). */
  outerOptimizer(factory: () => OuterOptimizer): this {
    this.#s.outerFactory = factory;
    return this;
  }
  /** Same as {@link outerOptimizer} (flodl's pre-built factory form). */
  outerOptimizerArc(factory: () => OuterOptimizer): this {
    return this.outerOptimizer(factory);
  }
  /** Apply a whole ElChe strategy: policy and backend from its mode, its guard, the rest stored. */
  elche(cfg: ElCheConfig): this {
    const copy = cfg.clone();
    const [policy, backend] = ElCheMode.split(copy.mode);
    this.#s.config.policy = policy;
    this.#s.config.backend = backend;
    this.#s.guard = copy.convergenceGuard;
    copy.convergenceGuard = undefined;
    this.#s.config.elche = copy;
    return this;
  }
  /** AllReduce overhead target τ: share of compute time the per-window fixed cost may take. */
  overheadTarget(target: number): this {
    return this.#set("overheadTarget", (c) => (c.elche.overheadTarget = target));
  }
  /** Maximum anchor (batches of the slow rank per window). */
  maxAnchor(max: number): this {
    return this.#set("maxAnchor", (c) => (c.elche.maxAnchor = max));
  }
  /** Minimum anchor (auto-tune floor). */
  minAnchor(min: number): this {
    return this.#set("minAnchor", (c) => (c.elche.minAnchor = min));
  }
  /** Initial anchor. */
  anchor(anchor: number): this {
    return this.#set("anchor", (c) => (c.elche.anchor = anchor));
  }
  /** TrendGuard threshold (the default guard). */
  divergenceThreshold(threshold: number): this {
    return this.#set("divergenceThreshold", (c) => (c.elche.divergenceThreshold = threshold));
  }
  /** Disable the divergence guard (same as `.convergenceGuard(new NoGuard())`). */
  noDivergenceGuard(): this {
    return this.#set("noDivergenceGuard", (c) => (c.elche.noDivergenceGuard = true));
  }
  /** Install a convergence guard; wins over the legacy divergence knobs. */
  convergenceGuard(guard: ConvergenceGuard): this {
    this.#s.guard = guard;
    return this;
  }
  /** Maximum batch lead of the fastest over the slowest rank; 0 = strict lockstep. */
  maxBatchDiff(max: number): this {
    return this.#set("maxBatchDiff", (c) => (c.elche.maxBatchDiff = max));
  }
  /** Static per-rank data shares (Sync only): one per rank, summing to ~1. */
  partitionRatios(ratios: readonly number[]): this {
    return this.#set("partitionRatios", (c) => (c.elche.partitionRatios = [...ratios]));
  }
  /** How far an Async rank may run past its planned batch count (default auto). */
  maxOvershoot(max: number): this {
    return this.#set("maxOvershoot", (c) => (c.elche.maxOvershoot = max));
  }
  /** Grow the anchor on stable convergence (Async only). */
  elcheRelaxUp(enabled: boolean): this {
    return this.#set("elcheRelaxUp", (c) => (c.elche.relaxUp = enabled));
  }
  /** EASGD elastic averaging weight α in (0, 1] (cpu-async; default 0.5 there). */
  easgdAlpha(alpha: number): this {
    return this.#set("easgdAlpha", (c) => (c.elche.easgdAlpha = alpha));
  }
  /** Consensus weighting exponent γ: rank k weighs n_k^γ. */
  gamma(g: number): this {
    return this.#set("gamma", (c) => (c.elche.gamma = g));
  }
  /** Ship parameters as bf16 on the averaging plane (halves the wire; math stays f32). */
  bf16Wire(on: boolean): this {
    return this.#set("bf16Wire", (c) => (c.elche.bf16Wire = on));
  }
  /** The LR-aware meta-controller above ElChe (default on). */
  metaController(enabled: boolean): this {
    return this.#set("metaController", (c) => (c.elche.metaController = enabled));
  }
  /** Run `checkpointFn` every n epochs. */
  checkpointEvery(n: number): this {
    return this.#set("checkpointEvery", (c) => (c.checkpointEvery = n));
  }
  /**
   * Checkpoint bundle stem: `<stem>.fdl` (consensus, f32 safetensors), `<stem>.optim`,
   * `<stem>.outer.fdl`, `<stem>.meta.json`; written at `checkpointEvery`/`checkpointAtEpoch`,
   * at the end, and when the run becomes unrecoverable. Deno: a file path; browser: OPFS.
   */
  savePath(path: string): this {
    return this.#set("savePath", (c) => (c.savePath = path));
  }
  /**
   * Resume from a bundle: start epoch, global step, reduce count, ElChe state and guard
   * history are seeded and only uncovered ranges run. Load the weights yourself in the
   * factories (`loadCheckpointFile(model, stem + ".fdl")`, `loadStateFile(opt, stem + ".optim")`).
   */
  resumeFrom(stem: string): this {
    return this.#set("resumeFrom", (c) => (c.resumeFrom = stem));
  }
  /** One-shot consensus bundle at the first reduce where any rank reached `epoch` (needs `savePath`). */
  checkpointAtEpoch(epoch: number): this {
    return this.#set("checkpointAtEpoch", (c) => (c.checkpointAtEpoch = epoch));
  }
  /** Dead-rank count that makes the run unrecoverable (default: tolerate any partial loss). */
  maxFailure(threshold: MaxFailureThreshold): this {
    return this.#set("maxFailure", (c) => (c.maxFailure = threshold));
  }
  /** A rank silent longer than this is declared lost (default 30 s). */
  heartbeatTimeoutSecs(secs: number): this {
    return this.#set("heartbeatTimeoutSecs", (c) => (c.heartbeatTimeoutSecs = secs));
  }
  /**
   * How long a remote rank may be away (its link lost, its tab frozen, its process stopped)
   * and come back as if nothing happened (default 60 s). One knob for every reconnect window
   * (coordinator/control/grace.ts): the coordinator's own connection, how long a silent
   * remote rank is held before it is lost (in place of `heartbeatTimeoutSecs`, which keeps
   * governing local workers), and how long the rank waits for the coordinator (its join
   * token carries it). Past it the rank is dropped; with spare slots it may rejoin.
   */
  reconnectGraceSecs(secs: number): this {
    return this.#set("reconnectGraceSecs", (c) => (c.reconnectGraceSecs = secs));
  }
  /** Progressive chunk dispatch (default: on for Cadence/Async, off for Sync). */
  progressiveDispatch(enabled: boolean): this {
    return this.#set("progressiveDispatch", (c) => (c.progressiveDispatch = enabled));
  }
  /** Per-rank gradient clipping to this global L2 norm. */
  maxGradNorm(maxNorm: number): this {
    return this.#set("maxGradNorm", (c) => (c.maxGradNorm = maxNorm));
  }
  /** Each sample appears k times per epoch (variation comes from `transform`). */
  augment(k: number): this {
    return this.#set("augment", (c) => (c.augment = k));
  }
  /** Delivery transform keyed per pick (rank-side; attach in the entry module). */
  transform(f: TransformFn): this {
    this.#s.spec.transform = f;
    return this;
  }
  /** Same as {@link transform} (flodl's pre-built form). */
  transformFn(f: TransformFn): this {
    return this.transform(f);
  }
  /**
   * Device-resident sample pool (default on): samples stay on the rank's GPU after their
   * first upload and later batches are gathered there. Off here or with `FLODL_VRAM_POOL=off`.
   */
  vramPool(enabled: boolean): this {
    return this.#set("vramPool", (c) => (c.vramPool = enabled));
  }
  /** Share of the device budget (declared `vramBytes`, else the adapter's maxBufferSize) the data plane may fill, [0.5, 0.99]; default 0.9. */
  vramMaxUsage(maxUsage: number): this {
    return this.#set("vramMaxUsage", (c) => (c.vramMaxUsage = maxUsage));
  }
  /** Share of the host's available memory (÷ local ranks) for the RAM sample cache, [0, 0.9]; default 0.5, 0 keeps nothing. */
  ramMaxUsage(maxUsage: number): this {
    return this.#set("ramMaxUsage", (c) => (c.ramMaxUsage = maxUsage));
  }
  /** Read-through RAM cache of raw samples across epochs (default on; for `readBatch` sources). */
  sampleCache(enabled: boolean): this {
    return this.#set("sampleCache", (c) => (c.sampleCache = enabled));
  }
  /** Disk stage per rank in GB (default 0, off): samples evicted from RAM spill to a per-rank file, removed at the end. */
  diskStage(gb: number): this {
    return this.#set("diskStage", (c) => (c.diskStageGb = gb));
  }
  /** Where the disk stage's per-run folder goes (default the system temp dir; a browser: an OPFS folder). */
  diskStageDir(dir: string): this {
    return this.#set("diskStageDir", (c) => (c.diskStageDir = dir));
  }
  /** Attach an event timeline: epochs, reduces with durations, anchor changes, divergence (JSON/CSV export). */
  timeline(tl: Timeline): this {
    this.#s.timeline = tl;
    return this;
  }
  /** Linear LR scaling ratio: lr × (1 + (W − 1)·ratio); default 1, 0 = off. */
  lrScaleRatio(ratio: number): this {
    return this.#set("lrScaleRatio", (c) => (c.lrScaleRatio = ratio));
  }
  /** Rank-side checkpoint callback `(version, model)`, every `checkpointEvery` epochs. */
  checkpointFn(f: (version: number, model: M) => void | Promise<void>): this {
    this.#s.spec.checkpointFn = f;
    return this;
  }
  /** Per-batch LR scheduler factory; receives the world size (rank-side). */
  scheduler(factory: (worldSize: number) => Scheduler): this {
    this.#s.spec.scheduler = factory;
    return this;
  }
  /** Rank-side callback at the start of each epoch, on the epoch-callback rank. */
  epochFn(f: (epoch: number, worker: RankWorker<M>) => void | Promise<void>): this {
    this.#s.spec.epochFn = f;
    return this;
  }
  /** Coordinator-side callback with each aggregated epoch's metrics. */
  metricsFn(f: (m: EpochMetrics) => void | Promise<void>): this {
    this.#s.metricsFn = f;
    return this;
  }
  /** Held-out dataset for `evalFn` (rank-side). */
  evalDataset(dataset: BatchDataSet): this {
    this.#s.spec.evalDataset = dataset;
    return this;
  }
  /** Eval cadence (`EvalCadence.epochs(n)`). */
  evalEvery(cadence: EvalCadence): this {
    return this.#set("evalEvery", (c) => (c.evalEvery = cadence));
  }
  /** Sub-epoch monitor records at reduce boundaries: at most n per epoch (0 = off). */
  reportsPerEpoch(n: number): this {
    return this.#set("reportsPerEpoch", (c) => (c.reportsPerEpoch = n));
  }
  /** Persist the record stream as JSONL under `dir`, one file per node, each capped at `maxBytes` (0 = 32 MiB). */
  recordLog(dir: string, maxBytes: number): this {
    return this.#set("recordLog", (c) => (c.recordLog = { dir, maxBytes }));
  }
  /** Save the run's dashboard as one self-contained HTML file at the end. */
  saveDashboard(path: string): this {
    return this.#set("saveDashboard", (c) => (c.dashboardPath = path));
  }
  /** Theme of the saved dashboard: "light", "dark" or "auto" (default: follow the reader's system). */
  dashboardTheme(theme: "light" | "dark" | "auto"): this {
    return this.#set("dashboardTheme", (c) => (c.dashboardTheme = theme));
  }
  /** How a user scalar rolls up across ranks (core keys are fixed). */
  scalarReduction(key: string, reduction: Reduction): this {
    return this.#set("scalarReduction", (c) => (c.scalarReductions[key] = reduction));
  }
  /** Rank-side eval `(model, dataset) => metric`, model in eval mode around it. */
  evalFn(f: EvalFn<M>): this {
    this.#s.spec.evalFn = f;
    return this;
  }
  /** Coordinator-side callback `(epoch, metric)` when an eval result arrives. */
  evalResultFn(f: (epoch: number, metric: number) => void | Promise<void>): this {
    this.#s.evalResultFn = f;
    return this;
  }
  /** Which rank runs epochFn / checkpointFn / evalFn (default Fastest). */
  epochCallbackPolicy(policy: EpochCallbackPolicy): this {
    return this.#set("epochCallbackPolicy", (c) => (c.epochCallbackPolicy = policy));
  }
  /** The ranks of the run: adapter preference, speed hint and simulated slowdown per rank. */
  cluster(c: ClusterSpec): this {
    if (!c || !Array.isArray(c.ranks)) throw new TypeError(`cluster: expects { ranks: [...] }, got ${JSON.stringify(c)}`);
    this.#s.cluster = { ranks: c.ranks.map((r) => ({ ...r })) };
    return this;
  }
  /**
   * Not in flodl (its ranks are one host's GPUs): rank slots for processes on other
   * machines, joining over NATS with the token `onJoinToken` receives (`joinRun`, or
   * `deno run -A <program> --join <token>` in examples/train.ts). They come after the
   * `.cluster(...)` ranks; `run()` resolves once every slot joined and passed the join checks
   * (program, model layout, dataset size, wire dtype), and rejects naming the rank otherwise.
   * With `maxSlots` the slots past `slots` are spare (elastic membership): a
   * rank joining one while the run goes is checked the same way (refused: the run goes on)
   * and admitted at the next epoch boundary.
   */
  remoteRanks(spec: RemoteRanksSpec): this {
    const elastic = spec?.maxSlots !== undefined;
    if (!spec || !Number.isInteger(spec.slots) || spec.slots < (elastic ? 0 : 1)) {
      throw new RangeError(`remoteRanks: slots must be an integer >= ${elastic ? "0 (with maxSlots)" : 1}, got ${spec?.slots}`);
    }
    if (elastic && !(Number.isInteger(spec.maxSlots) && spec.maxSlots! >= Math.max(1, spec.slots))) {
      throw new RangeError(`remoteRanks: maxSlots must be an integer >= slots (${spec.slots}) and >= 1, got ${spec.maxSlots}`);
    }
    const urls: unknown[] = Array.isArray(spec.url) ? spec.url : [spec.url];
    if (!urls.length || !urls.every((u) => typeof u === "string" && /^wss?:\/\//.test(u))) {
      throw new TypeError(`remoteRanks: url must be a ws:// or wss:// NATS WebSocket URL or a non-empty list of them, got ${JSON.stringify(spec.url)}`);
    }
    this.#s.remote = { ...spec };
    return this;
  }
  /**
   * The module rank workers import (default: the module that called `Trainer.builder()`).
   * In Deno, `.entry(Deno.mainModule)` re-runs a whole script.
   */
  entry(url: string | URL, timeoutSecs?: number): this {
    this.#s.entry = String(url);
    if (timeoutSecs !== undefined) this.#s.entryTimeoutSecs = timeoutSecs;
    return this;
  }

  /**
   * Validate and launch. Resolves with a {@link DdpHandle} once the ranks are up; rejects
   * (before any rank starts) on a bad knob, naming it and its value. In a rank worker it
   * serves the rank and never settles, so code after `await run()` runs on the coordinator.
   */
  run(): Promise<DdpHandle> {
    if (isRank()) {
      markRan(this);
      return new Promise<DdpHandle>(() => {});
    }
    return launch(this.#s);
  }

  /**
   * Cooperative tier: same configuration and validation as {@link run}, but
   * you drive the loop: `for (let plan; (plan = await w.nextPlan()); ) { for (let b; (b = await
   * w.nextBatch()); ) { ...; if ((await w.step(loss)).shutdown) break; } }`, then `w.finish()`.
   * With several ranks the loop runs in each rank worker (the entry module re-runs there);
   * the coordinator's worker just waits: its `nextPlan()` resolves null at the end.
   */
  async intoWorker(): Promise<CoopWorker<M>> {
    if (isRank()) {
      const w = rankWorker(this.#s);
      markRan(this);
      return w;
    }
    return await intoWorker(this.#s);
  }

  /**
   * An independent copy: same call site and closures (so rank workers still find it), its
   * own knobs. Configure one copy per run when a module's builder serves several runs.
   */
  clone(): DdpBuilder<M> {
    const s = this.#s;
    const copy = new DdpBuilder<M>(s.site, s.spec.modelFactory, s.spec.optimFactory, s.spec.trainFn);
    const c = copy.#s;
    c.spec = { ...s.spec };
    c.config = { ...s.config, elche: s.config.elche.clone(), scalarReductions: { ...s.config.scalarReductions } };
    c.explicit = new Set(s.explicit);
    c.metricsFn = s.metricsFn;
    c.evalResultFn = s.evalResultFn;
    c.outerFactory = s.outerFactory;
    c.guard = s.guard;
    c.cluster = s.cluster ? { ranks: s.cluster.ranks.map((r) => ({ ...r })) } : undefined;
    c.remote = s.remote ? { ...s.remote } : undefined;
    c.entry = s.entry;
    c.entryTimeoutSecs = s.entryTimeoutSecs;
    c.timeline = s.timeline;
    return copy;
  }

  /** @internal The builder's state, for the launch and the tests: not part of the API. */
  get state(): BuilderState<M> {
    return this.#s;
  }
}

/** Attach a live observer (batches, reduces, frames) to the next `run()` of this builder (demo, bench). */
export function observe<M extends Module>(builder: DdpBuilder<M>, observer: RunObserver): void {
  attachObserver(builder.state, observer);
}

/** flodl's `Trainer`: the entry of the data-parallel tier. */
export const Trainer = {
  /**
   * Start a data-parallel training definition. Call it at the top level of the module
   * that rank workers re-enter (see {@link DdpBuilder}).
   * @example
   * ```ts ignore
   * const handle = await Trainer.builder(
   *   (device) => mlp(device),
   *   (params) => new Adam(params, { lr: 1e-3 }),
   *   (model, [x, y]) => crossEntropy(model.forward(new Variable(x)), y),
   * ).dataset(train).batchSize(64).numEpochs(3).run();
   * const state = await handle.join();
   * ```
   */
  builder<M extends Module>(modelFactory: ModelFactory<M>, optimFactory: OptimFactory, trainFn: TrainFn<M>): DdpBuilder<M> {
    const site = callerSite(Trainer.builder);
    const b = new DdpBuilder<M>(site, modelFactory, optimFactory, trainFn);
    if (isRank()) register(site, b);
    return b;
  },
};

/** Re-export for the coordinator: the rank-side spec of a builder. */
export type { RankSpec };
