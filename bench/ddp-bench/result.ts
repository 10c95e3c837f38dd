/**
 * What one ddp-bench run reports (flodl's per-mode row: loss, eval, total
 * seconds, syncs, average sync ms, per-rank busy and idle) and how it is computed from the
 * trainer's history and the coordinator's batch and reduce events.
 */
import type { EvalRecord, RunEpochMetrics } from "../../src/index.ts";
import type { ModelName } from "../../src/zoo/mod.ts";

/** solo = one rank, the trainer's single-device path; the others with 2+ ranks. */
export type Mode = "solo" | "cpu-sync" | "cpu-cadence" | "cpu-async";
export const MODES: readonly Mode[] = ["solo", "cpu-sync", "cpu-cadence", "cpu-async"];

/** One rank's share of the run. */
export interface RankFigures {
  batches: number;
  /** Σ compute ms of its steps (a simulated slow rank's sleep included, as a slower GPU would compute), s. */
  busyS: number;
  /** Training wall (Σ of the epochs' wall ms) minus busy, s: waiting for reduces, the other rank and data. */
  idleS: number;
  /** busy / training wall. */
  busyPct: number;
  /** Median compute ms per step (the first epoch's shader compiles fall outside the median). */
  stepMs: number;
}

export interface RunResult {
  model: ModelName;
  mode: Mode;
  ranks: number;
  slowdown: number[];
  epochs: number;
  batch: number;
  /** Samples actually trained on and evaluated on (images or sequences of 128). */
  trainSamples: number;
  testSamples: number;
  vocabSize?: number;
  /** Last epoch's mean training loss; null when no batch ran (a rank's share smaller than a batch). */
  loss: number | null;
  /** Last eval: accuracy, reconstruction MSE or validation CE. */
  eval: number | null;
  lossCurve: (number | null)[];
  evalCurve: (number | null)[];
  /** From `run()` to `join()`: rank start-up, data loading and shader compiles included. */
  totalS: number;
  /** Σ of the epochs' wall ms (history `epochMs`): training without rank start-up. */
  trainS: number;
  syncs: number;
  avgSyncMs: number;
  /** Of a sync, the CPU averaging. */
  avgAverageMs: number;
  perRank: RankFigures[];
}

/** What one.ts collected. */
export interface RunInputs {
  cfg: { model: ModelName; mode: Mode; slowdown: number[]; epochs: number; batch: number };
  ranks: number;
  loaded: { train: number; test: number; vocabSize?: number };
  totalMs: number;
  history: readonly RunEpochMetrics[];
  evals: readonly EvalRecord[];
  batches: readonly { rank: number; epoch: number; ms: number; computeMs: number }[];
  reduces: readonly { epoch: number; ms: number; averageMs: number }[];
}

const r3 = (x: number) => Math.round(x * 1e3) / 1e3;
const r6 = (x: number) => Number(x.toPrecision(6));

function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b), m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The report's figures of one run. */
export function summarize(x: RunInputs): RunResult {
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const trainS = sum(x.history.map((m) => m.epochMs)) / 1e3;
  const perRank = Array.from({ length: x.ranks }, (_, r): RankFigures => {
    const mine = x.batches.filter((b) => b.rank === r);
    const busyS = sum(x.history.map((m) => m.perRankComputeOnlyMs[r] ?? 0)) / 1e3;
    return {
      batches: mine.length,
      busyS: r3(busyS),
      idleS: r3(Math.max(0, trainS - busyS)),
      busyPct: r3(trainS > 0 ? busyS / trainS : 0),
      stepMs: r3(median(mine.map((b) => b.computeMs))),
    };
  });
  const evalAt = (epoch: number) => x.evals.find((e) => e.epoch === epoch && e.value !== undefined)?.value ?? null;
  const evalCurve = x.history.map((_, i) => evalAt(i + 1));
  const finite = (v: number | undefined) => (v !== undefined && Number.isFinite(v) ? r6(v) : null);
  return {
    model: x.cfg.model,
    mode: x.cfg.mode,
    ranks: x.ranks,
    slowdown: x.cfg.slowdown,
    epochs: x.cfg.epochs,
    batch: x.cfg.batch,
    trainSamples: x.loaded.train,
    testSamples: x.loaded.test,
    vocabSize: x.loaded.vocabSize,
    loss: finite(x.history.at(-1)?.avgLoss),
    eval: evalCurve.at(-1) === null || evalCurve.length === 0 ? null : r6(evalCurve.at(-1)!),
    lossCurve: x.history.map((m) => finite(m.avgLoss)),
    evalCurve: evalCurve.map((v) => (v === null ? null : r6(v))),
    totalS: r3(x.totalMs / 1e3),
    trainS: r3(trainS),
    syncs: x.reduces.length,
    avgSyncMs: r3(x.reduces.length ? sum(x.reduces.map((e) => e.ms)) / x.reduces.length : 0),
    avgAverageMs: r3(x.reduces.length ? sum(x.reduces.map((e) => e.averageMs)) / x.reduces.length : 0),
    perRank,
  };
}

/** A run's label in tables: the mode, and the slow rank when there is one ("cpu-async, rank 1 ×3"). */
export function runLabel(r: Pick<RunResult, "mode" | "slowdown">): string {
  const slow = r.slowdown.findIndex((s) => s > 1);
  return slow < 0 ? r.mode : `${r.mode}, rank ${slow} ×${r.slowdown[slow]}`;
}
