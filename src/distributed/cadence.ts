/**
 * The backend-independent head of a reduce cycle (spec §2.5 steps 2–6): ElChe's timing
 * feed (delivered or compute-only, §3.2), the convergence guard, the LR meta-controller,
 * and the window quotas c[r] the dispatcher hands out.
 */
import type { Module } from "../nn/mod.ts";
import type { BuilderState } from "./builder.ts";
import { ElChe } from "./elche.ts";
import { type ConvergenceGuard, DivergenceReport, resolveGuard, type Verdict } from "./guards.ts";
import { LrEventMeta } from "./meta.ts";
import type { ResumeSeed } from "./persistence.ts";
import type { BatchEvent, SyncAck } from "./protocol.ts";
import type { ResolvedRunConfig } from "./validate_config.ts";

interface Window {
  /** ms of the window's first batch (pipeline fill). */
  first: number;
  /** ms of the other batches. */
  ms: number;
  count: number;
  /** ms of all batches. */
  all: number;
}

const empty = (): Window => ({ first: 0, ms: 0, count: 0, all: 0 });

/** What one cycle decided. */
export interface CycleOutcome {
  verdict: Verdict;
  report: DivergenceReport;
  anchorBefore: number;
  telemetry: [string, number][];
}

export class Cadence {
  readonly elche: ElChe;
  readonly guard: ConvergenceGuard;
  #meta?: LrEventMeta;
  #cfg: ResolvedRunConfig;
  #win: Window[];
  #lastSyncMs = 0;
  #lastLr?: number;

  constructor(state: BuilderState<Module>, cfg: ResolvedRunConfig, world: number, pickSpace: number, resume?: ResumeSeed) {
    this.#cfg = cfg;
    const e = cfg.elche;
    this.elche = new ElChe({
      worldSize: world,
      policy: cfg.policy,
      anchor: cfg.anchor,
      minAnchor: cfg.minAnchor,
      maxAnchor: cfg.maxAnchor,
      overheadTarget: cfg.overheadTarget,
      maxBatchDiff: e.maxBatchDiff,
      maxOvershoot: e.maxOvershoot,
      relaxUp: e.relaxUp,
      maxTotalBatches: Math.floor(pickSpace / cfg.batchSize),
      partitionRatios: cfg.policy === "sync" ? e.partitionRatios : undefined,
    });
    const hints = state.cluster?.ranks.map((r) => r.speedHint ?? 1);
    if (hints && hints.some((h) => h !== hints[0])) {
      const slow = hints.indexOf(Math.min(...hints));
      this.elche.withSpeedRatio(slow, Math.max(...hints) / hints[slow]);
    }
    this.guard = resolveGuard({
      explicit: state.guard,
      noDivergenceGuard: e.noDivergenceGuard,
      divergenceThreshold: e.divergenceThreshold,
      easgdAlpha: cfg.easgdAlpha,
      trendHistory: resume?.trendHistory,
    });
    if (resume?.elche) this.elche.importState(resume.elche);
    if (e.metaController) this.#meta = new LrEventMeta();
    this.#win = Array.from({ length: world }, empty);
  }

  /** Feed one batch's delivered ms (and the LR the rank used). */
  batch(ev: BatchEvent): void {
    const w = this.#win[ev.rank];
    if (w.count === 0) w.first = ev.ms;
    else w.ms += ev.ms;
    w.count++;
    w.all += ev.ms;
    this.#lastLr = ev.lr;
  }

  /** A lost rank: out of ElChe, its window forgotten. */
  dead(rank: number): void {
    this.elche.markDead(rank);
    this.#win[rank] = empty();
  }

  /**
   * Window quotas c[r]: ElChe's counts, except under Sync with partitionRatios, where the
   * static split disables throughput rebalancing (spec §3.10): every rank gets A per window.
   */
  counts(alive: readonly boolean[]): number[] {
    if (this.#cfg.policy === "sync" && this.#cfg.elche.partitionRatios) {
      return alive.map((a) => (a ? this.elche.anchor : 0));
    }
    return this.elche.batchCounts;
  }

  /** Steps 2–6 of a cycle: timing to ElChe, the guard's verdict, the meta-controller, the verdict applied. */
  cycle(steps: readonly number[], acks: readonly SyncAck[], syncMs: number, zeroMass: boolean): CycleOutcome {
    // The delivered (marginal) feed when every mover has one, else compute-only for all (§3.2).
    const movers = steps.flatMap((n, r) => (n > 0 ? [r] : []));
    const marginal = this.#cfg.policy !== "sync" && movers.every((r) => this.#win[r].count >= 2);
    const ms = this.#win.map((w) => (marginal ? w.ms : w.all));
    const n = this.#win.map((w) => (marginal ? w.count - 1 : w.count));
    if (marginal) this.elche.stageFill(this.#win.map((w) => (w.count >= 2 ? Math.max(0, w.first - w.ms / (w.count - 1)) : 0)));
    const anchorBefore = this.elche.anchor;
    this.elche.reportTiming(ms, n, this.#lastSyncMs);
    const report = DivergenceReport.fromAcks(steps.length, acks);
    const kUsed = steps.reduce((a, b) => a + b, 0);
    const verdict: Verdict = zeroMass ? { kind: "stable" } : this.guard.report(report, kUsed, Math.max(...steps));
    const f = this.#meta?.observe(this.#lastLr, this.elche.anchor, verdict, this.elche.phase) ?? null;
    if (f !== null) this.elche.applyVerdict({ kind: "nudgeDown", factor: f });
    this.elche.applyVerdict(verdict);
    this.#win = this.#win.map(empty);
    this.#lastSyncMs = syncMs;
    return { verdict, report, anchorBefore, telemetry: this.guard.telemetry() };
  }
}
