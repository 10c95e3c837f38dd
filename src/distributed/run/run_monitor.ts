/**
 * The run's monitor outputs, fed by the coordinator: the timeline, the record
 * stream (log and dashboard plane), sub-epoch reports and the saved dashboard. Built only
 * when a monitor knob is set; every write is best-effort (monitoring never stops training).
 */
import { checkPath, resolveStorage } from "../../io/mod.ts";
import {
  DashboardRecorder,
  type MonitorRecord,
  RecordLog,
  RecordTree,
  ReportSchedule,
  saveDashboard,
  type Timeline,
  type TimelineEvent,
} from "../../monitor/mod.ts";
import type { Module } from "../../nn/mod.ts";
import { DATA_COUNTERS, DATA_GAUGES } from "../../data/mod.ts";
import type { BuilderState } from "./builder_state.ts";
import type { RankPlace, ReduceEvent, ReduceExtra, RunEvents } from "../coordinator/report/observer.ts";

export type { ReduceExtra, RunEvents };
import type { RunEpochMetrics } from "../coordinator/report/metrics.ts";
import type { BatchEvent } from "../protocol/messages.ts";
import type { ResolvedRunConfig } from "./validate_config.ts";

/** A flat, displayable view of the knobs (dashboard "config"). */
function configSummary(cfg: ResolvedRunConfig): Record<string, string | number | boolean> {
  const e = cfg.elche;
  return {
    mode: cfg.mode,
    batchSize: cfg.batchSize,
    numEpochs: cfg.numEpochs,
    anchor: cfg.anchor,
    maxAnchor: cfg.maxAnchor,
    overheadTarget: cfg.overheadTarget,
    bf16Wire: e.bf16Wire,
    gamma: e.gamma,
    progressiveDispatch: cfg.progressive,
    metaController: e.metaController,
    lrScaleRatio: cfg.lrScaleRatio,
    vramPool: cfg.vramPool,
    vramMaxUsage: cfg.vramMaxUsage,
    ramMaxUsage: cfg.ramMaxUsage,
    sampleCache: cfg.sampleCache,
    diskStageGb: cfg.diskStageGb,
    ...(cfg.easgdAlpha !== undefined ? { easgdAlpha: cfg.easgdAlpha } : {}),
    ...(cfg.maxGradNorm !== undefined ? { maxGradNorm: cfg.maxGradNorm } : {}),
  };
}

/**
 * The record tree's host name of a rank: "local" for the coordinator's own ranks (worker
 * or this thread), the machine's name for a remote one ("/" and "\\" made "_", "remote"
 * when it did not say).
 */
export function hostOf(place: RankPlace | undefined): string {
  if (!place || place.transport !== "remote") return place ? "local" : "remote";
  const h = place.host.replace(/[/\\]/g, "_");
  return h === "" || h === "." || h === ".." ? "remote" : h;
}

/**
 * The monitor of one run; `undefined` when no monitor knob is set.
 * @param places Where each rank runs; `undefined` for a spare slot nobody filled yet
 *   (elastic membership: it appears when a rank joins it).
 */
export function runMonitor<M extends Module>(
  state: BuilderState<M>,
  cfg: ResolvedRunConfig,
  world: number,
  devices: string[],
  places?: (RankPlace | undefined)[],
): RunMonitor | undefined {
  const wanted = state.timeline || cfg.recordLog || cfg.dashboardPath || cfg.reportsPerEpoch > 0;
  if (!wanted) return undefined;
  const evalName = state.spec.evalFn?.name;
  return new RunMonitor(state.timeline, cfg, world, devices, {
    title: runTitle(state.spec.modelFactory.name, cfg.mode, world),
    // A named evalFn says what it measures (`accuracy`); an anonymous one does not.
    evalLabel: evalName || undefined,
    slowdown: state.cluster?.ranks.map((r) => r.slowdown ?? 1),
    places,
  });
}

/**
 * The dashboard's title: model, mode, ranks ("mlp · cpu-cadence · 2 ranks"). The model is
 * the model factory's function name; an anonymous factory reads "model".
 */
export function runTitle(model: string, mode: string, world: number): string {
  return `${model || "model"} · ${mode} · ${world} rank${world === 1 ? "" : "s"}`;
}

export class RunMonitor implements RunEvents {
  #timeline?: Timeline;
  #cfg: ResolvedRunConfig;
  #tree: RecordTree;
  #log?: RecordLog;
  #recorder: DashboardRecorder;
  #schedule?: ReportSchedule;
  #epoch = 0;
  #window = new Map<number, { loss: number; n: number; ms: number; computeMs: number; samples: number }>();

  constructor(
    timeline: Timeline | undefined,
    cfg: ResolvedRunConfig,
    world: number,
    devices: string[],
    show: { title?: string; evalLabel?: string; slowdown?: number[]; places?: (RankPlace | undefined)[] } = {},
  ) {
    this.#timeline = timeline;
    this.#cfg = cfg;
    // The data plane's keys add up across ranks (hits, reads, bytes held); a user's own
    // declarations still win for their keys.
    const data = Object.fromEntries([...DATA_COUNTERS, ...DATA_GAUGES].map((k) => [k, "sum" as const]));
    const places = show.places;
    this.#tree = new RecordTree({
      worldSize: world,
      devices,
      reductions: { ...data, ...cfg.scalarReductions },
      ...(places
        ? {
          hosts: Array.from({ length: world }, (_, r) => hostOf(places[r])),
          transports: Array.from({ length: world }, (_, r) => places[r]?.transport),
          vacant: Array.from({ length: world }, (_, r) => !places[r]),
        }
        : {}),
    });
    if (cfg.recordLog) {
      const { storage, path } = resolveStorage(cfg.recordLog.dir);
      this.#log = new RecordLog(storage, path, cfg.recordLog.maxBytes);
      this.#log.write(this.#tree.meta());
    }
    this.#recorder = new DashboardRecorder({
      worldSize: world,
      devices,
      config: configSummary(cfg),
      title: show.title ?? runTitle("", cfg.mode, world),
      evalLabel: show.evalLabel,
      slowdown: show.slowdown,
      ranks: places?.map((p, rank) => (p ? { rank, ...p } : { rank })),
    });
    if (cfg.reportsPerEpoch > 0) this.#schedule = new ReportSchedule(1, cfg.reportsPerEpoch);
  }

  #event(e: TimelineEvent): void {
    const ts = Date.now();
    this.#timeline?.add(e, ts);
    this.#recorder.event({ ...e, ts_ms: ts });
  }

  #records(rows: MonitorRecord[]): void {
    this.#recorder.record(...rows);
    this.#log?.writeAll(rows);
  }

  batch(e: BatchEvent): void {
    this.#recorder.batch(e);
    const w = this.#window.get(e.rank) ?? { loss: 0, n: 0, ms: 0, computeMs: 0, samples: 0 };
    w.loss += e.loss;
    w.n++;
    w.ms += e.ms;
    w.computeMs += e.computeMs;
    w.samples += e.samples;
    this.#window.set(e.rank, w);
  }

  epochStart(epoch: number): void {
    this.#epoch = epoch;
    this.#event({ kind: "EpochStart", epoch });
  }

  epochEnd(m: RunEpochMetrics): void {
    this.#event({ kind: "EpochEnd", epoch: m.epoch });
    this.#recorder.epoch(m);
    this.#records(this.#tree.epochRows(m));
  }

  reduce(e: ReduceEvent, x: ReduceExtra): void {
    const epoch = e.epoch;
    const ts = Date.now();
    this.#timeline?.add({ kind: "SyncStart", epoch }, ts - e.ms);
    this.#event({ kind: "CpuAvgEnd", duration: e.averageMs, epoch });
    this.#event({ kind: "SyncEnd", duration: e.ms, epoch });
    if (e.anchor !== x.anchorBefore) this.#event({ kind: "AnchorChanged", from: x.anchorBefore, to: e.anchor, epoch });
    const kUsed = e.steps.reduce((a, b) => a + b, 0);
    this.#event({
      kind: "Divergence",
      d_raw: Math.max(0, ...e.divergence),
      k_used: kUsed,
      k_max: Math.max(...e.steps),
      step: x.globalStep,
      deltas: e.divergence,
      epoch,
    });
    if (x.telemetry.length) this.#event({ kind: "GuardTelemetry", pairs: x.telemetry, epoch });
    this.#recorder.reduce(e);
    if (e.verdict === "nudgeDown") this.#records([this.#tree.drift(epoch, { d_raw: Math.max(0, ...e.divergence), anchor: e.anchor })]);
    if (this.#schedule) {
      if (x.stepsPerEpoch !== this.#schedule.stepsPerEpoch) this.#schedule = new ReportSchedule(x.stepsPerEpoch, this.#cfg.reportsPerEpoch);
      const tick = this.#schedule.onReduce(epoch, kUsed);
      if (tick !== undefined) this.#subEpoch(epoch, tick, e);
    }
    this.#window.clear();
  }

  /** A sub-epoch report at a reduce boundary: per-rank window loss and throughput, engine values. */
  #subEpoch(epoch: number, tick: number, e: ReduceEvent): void {
    const leaves = e.steps.map((steps, rank) => {
      const w = this.#window.get(rank);
      const metrics: Record<string, number> = w && w.n > 0
        ? { loss: w.loss / w.n, throughput: w.ms > 0 ? w.samples / w.ms : 0, compute_only_ms: w.computeMs }
        : {};
      return { rank, work: steps, metrics };
    });
    this.#records(this.#tree.rows({
      epoch,
      tick,
      leaves,
      rootExtras: { anchor: e.anchor, sync_ms: e.ms, cpu_avg_ms: e.averageMs, d_raw: Math.max(0, ...e.divergence) },
    }));
  }

  evaluated(epoch: number, value: number): void {
    this.#recorder.eval(epoch, value);
  }

  rankLost(rank: number, epoch: number, reason: string): void {
    this.#records([this.#tree.rankLost(rank, epoch, reason)]);
    this.#event({ kind: "Custom", label: `rank ${rank} lost: ${reason}`, rank, epoch });
    this.#recorder.membership({ rank, kind: "lost", epoch, reason });
  }

  rankJoined(rank: number, epoch: number, place: RankPlace): void {
    this.#records([this.#tree.rankJoined(rank, epoch, { host: hostOf(place), device: place.adapter, transport: place.transport })]);
    const from = `${place.host || "this host"}, ${place.adapter}, ${place.transport}`;
    this.#event({ kind: "Custom", label: `rank ${rank} joined (${from}) for epoch ${epoch + 1}`, rank, epoch });
    this.#recorder.membership({ rank, kind: "joined", epoch, host: place.host, adapter: place.adapter, transport: place.transport });
  }

  async close(): Promise<void> {
    this.#recorder.finish();
    try {
      await this.#log?.flush();
    } catch (e) {
      console.warn(`record log: ${(e as Error).message}`);
    }
    const path = this.#cfg.dashboardPath;
    if (!path) return;
    try {
      const { storage, path: file } = resolveStorage(path);
      checkPath(file, "saveDashboard path");
      await saveDashboard(storage, file, this.#recorder.data(), { theme: this.#cfg.dashboardTheme });
    } catch (e) {
      console.warn(`saveDashboard: could not write ${path}: ${(e as Error).message}`);
    }
  }

  /** The dashboard data collected so far. */
  data() {
    return this.#recorder.data();
  }
}
