/**
 * The backend-independent head of a reduce cycle (steps 2–6): ElChe's timing
 * feed (delivered or compute-only), the convergence guard, the LR meta-controller,
 * and the window quotas c[r] the dispatcher hands out.
 */
import type { ApplyPolicy } from "./config.ts";
import { ElChe, type ElCheState } from "./elche.ts";
import { type ConvergenceGuard, DivergenceReport, resolveGuard, type Verdict } from "./guards.ts";
import { LrEventMeta } from "./meta.ts";
import type { BatchEvent, SyncAck } from "../../protocol/messages.ts";
import type { ResolvedRunConfig } from "./config.ts";

/** What Cadence reads of the run's definition: an explicit guard and the ranks' speed hints. */
export interface CadenceInputs {
  guard?: ConvergenceGuard;
  cluster?: { ranks: { speedHint?: number }[] };
}

/** The control state a resumed run starts from (a bundle's ElChe state and guard trend). */
export interface CadenceResume {
  elche?: ElCheState;
  trendHistory?: number[];
}

/** One rank's batches since the last reduce, as the coordinator received them. */
export interface TimingWindow {
  /** Delivered ms of the window's first batch (pipeline fill, reduce participation). */
  first: number;
  /** Delivered ms of the other batches (the marginal sum). */
  ms: number;
  /** Compute-only ms of all batches. */
  compute: number;
  count: number;
}

/** A rank with no batch this window. */
export const emptyWindow = (): TimingWindow => ({ first: 0, ms: 0, compute: 0, count: 0 });

/** What ElChe is fed for one window: per-rank ms and batch divisors, and the fill when marginal. */
export interface TimingFeed {
  /** Delivered (marginal) timing, or compute-only for every rank. */
  scale: "delivered" | "compute";
  ms: number[];
  batches: number[];
  /** Per-rank first-batch excess over the steady rate, ms (delivered only). */
  fill?: number[];
}

/**
 * ElChe's timing feed for one window. Under Cadence/Async, marginal delivered
 * time (the first batch excluded, its excess over the steady rate staged as the fill) when
 * every rank that moved has a marginal sample (>= 2 batches); otherwise compute-only time
 * for every rank: mixing the two scales would invert the relative allocation. Sync always
 * uses compute-only. Ranks without a sample contribute (0, 0); null when the whole window
 * is zero (ElChe is then not fed, as flodl skips an all-zero report).
 * @param windows Per-rank windows, indexed by rank.
 * @param steps Optimizer steps per rank since the last reduce (n_r); > 0 marks a mover.
 * @example
 * ```ts
 * import { timingFeed } from "./cadence.ts";
 * const w = [{ first: 30, ms: 20, compute: 24, count: 3 }, { first: 9, ms: 0, compute: 6, count: 1 }];
 * timingFeed(w, [3, 1], "cadence")?.scale; // "compute": rank 1 has no marginal sample
 * ```
 */
export function timingFeed(windows: readonly TimingWindow[], steps: readonly number[], policy: ApplyPolicy): TimingFeed | null {
  const movers = windows.flatMap((_, r) => (steps[r] > 0 ? [r] : []));
  const delivered = policy !== "sync" && movers.length > 0 && movers.every((r) => windows[r].count >= 2);
  let feed: TimingFeed;
  if (delivered) {
    const has = (w: TimingWindow) => w.count >= 2;
    feed = {
      scale: "delivered",
      ms: windows.map((w) => (has(w) ? w.ms : 0)),
      batches: windows.map((w) => (has(w) ? w.count - 1 : 0)),
      fill: windows.map((w) => (has(w) ? Math.max(0, w.first - w.ms / (w.count - 1)) : 0)),
    };
  } else {
    feed = { scale: "compute", ms: windows.map((w) => w.compute), batches: windows.map((w) => w.count) };
  }
  return feed.ms.some((ms) => ms > 0) ? feed : null;
}

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
  #win: TimingWindow[];
  #lastSyncMs = 0;
  #lastLr?: number;

  constructor(state: CadenceInputs, cfg: ResolvedRunConfig, world: number, pickSpace: number, resume?: CadenceResume) {
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
    this.#win = Array.from({ length: world }, emptyWindow);
  }

  /** Feed one batch's delivered and compute-only ms (and the LR the rank used). */
  batch(ev: BatchEvent): void {
    const w = this.#win[ev.rank];
    if (w.count === 0) w.first = ev.ms;
    else w.ms += ev.ms;
    w.compute += ev.computeMs;
    w.count++;
    this.#lastLr = ev.lr;
  }

  /** A lost rank: out of ElChe, its window forgotten. */
  dead(rank: number): void {
    this.elche.markDead(rank);
    this.#win[rank] = emptyWindow();
  }

  /** A rank admitted at an epoch boundary: into ElChe, which learns its speed from its windows. */
  joined(rank: number): void {
    this.elche.markJoined(rank);
    this.#win[rank] = emptyWindow();
  }

  /**
   * Window quotas c[r]: ElChe's counts, except under Sync with partitionRatios, where the
   * static split disables throughput rebalancing: every rank gets A per window.
   */
  counts(alive: readonly boolean[]): number[] {
    if (this.#cfg.policy === "sync" && this.#cfg.elche.partitionRatios) {
      return alive.map((a) => (a ? this.elche.anchor : 0));
    }
    return this.elche.batchCounts;
  }

  /** Steps 2–6 of a cycle: timing to ElChe, the guard's verdict, the meta-controller, the verdict applied. */
  cycle(steps: readonly number[], acks: readonly SyncAck[], syncMs: number, zeroMass: boolean): CycleOutcome {
    const feed = timingFeed(this.#win, steps, this.#cfg.policy);
    const anchorBefore = this.elche.anchor;
    if (feed) {
      if (feed.fill) this.elche.stageFill(feed.fill);
      this.elche.reportTiming(feed.ms, feed.batches, this.#lastSyncMs);
    }
    const report = DivergenceReport.fromAcks(steps.length, acks);
    const kUsed = steps.reduce((a, b) => a + b, 0);
    const verdict: Verdict = zeroMass ? { kind: "stable" } : this.guard.report(report, kUsed, Math.max(...steps));
    const f = this.#meta?.observe(this.#lastLr, this.elche.anchor, verdict, this.elche.phase) ?? null;
    if (f !== null) this.elche.applyVerdict({ kind: "nudgeDown", factor: f });
    this.elche.applyVerdict(verdict);
    this.#win = this.#win.map(emptyWindow);
    this.#lastSyncMs = syncMs;
    return { verdict, report, anchorBefore, telemetry: this.guard.telemetry() };
  }
}
