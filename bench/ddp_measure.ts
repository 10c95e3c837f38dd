/**
 * The trainer bench's measurement, shared by bench/ddp.ts (Deno) and bench/ddp_page.ts
 * (Chromium): one run of a configuration, timed on the coordinator, and the sweep of
 * bench/README.md (1/2/4 ranks × modes × wire, then a 3× slower rank) with its targets.
 */
import { type DdpBuilder, ElCheConfig, type ElCheMode, observe, type ReduceEvent, type RemoteRanksSpec, type RunObserver } from "../src/index.ts";
import { median, round } from "./workloads.ts";

export const BATCH = 64;
export const MODES: ElCheMode[] = ["cpu-sync", "cpu-cadence", "cpu-async"];

/**
 * What one run measured. Wall times are taken on the coordinator from the observer's batch
 * and reduce events (the epoch history's `epochMs` sums rank-side chunk time and leaves out
 * waiting for reduces). Every epoch after the first is measured: the first compiles shaders
 * on every rank's device and calibrates ElChe.
 */
export interface DdpRun {
  ranks: number;
  /** How many of them were remote (NATS) ranks, ranks ranks-remote..ranks-1. */
  remote: number;
  mode: ElCheMode;
  bf16: boolean;
  slowdown: number[];
  /** Samples trained in the measured epochs. */
  samples: number;
  /** Coordinator wall ms of the measured epochs: from the first epoch's last batch or reduce to the last epoch's. */
  epochWallMs: number;
  /** Coordinator wall ms from the first batch to the last reduce (every epoch, no rank start-up). */
  trainWallMs: number;
  /** From `run()` to `join()` resolving, starting the ranks (workers, devices, MNIST) included. */
  totalMs: number;
  /** Σ of the history's epochMs over the measured epochs (rank-side Σ chunk time, max over ranks). */
  historyEpochMs: number;
  samplesPerS: number;
  /** Reduces in the measured epochs. */
  reduces: number;
  /** Median wire bytes (up + down) per reduce over the run, the final exact (f32) reduce left out; null without one. */
  wireBytesPerReduce: number | null;
  /** Mean of the history's `wireBytesPerReduce` over the measured epochs (a final exact f32 reduce included). */
  historyWireBytesPerReduce: number;
  /** Mean ms per reduce (trigger to last adoption) in the measured epochs, and of that, CPU averaging. */
  reduceMs: number;
  /** Median ms per reduce in the measured epochs (null without one). */
  reduceMsMedian: number | null;
  averageMs: number;
  /** Mean over ranks of Σ step ms (the ranks' compute) in the measured epochs. */
  computeMs: number;
  /** Σ reduce ms / computeMs in the measured epochs: what averaging + wire cost relative to compute. */
  overheadShare: number;
  finalLoss: number;
  /** Ranks lost during the run, with why (the survivors finished it); empty normally. */
  lost: string[];
  /** ElChe's anchor (batches per window) at each measured reduce: how far the cadence grew. */
  anchors: number[];
  /** Each measured reduce: ms (trigger to last adoption) and the steps each rank folded in. */
  reduceLog: { ms: number; steps: number[] }[];
}

/** One configuration of the sweep. */
export interface DdpCase {
  ranks: number;
  mode: ElCheMode;
  bf16: boolean;
  slowdown?: number[];
  /** How many of the `ranks` are remote (NATS) ranks, after the local worker ranks (default 0; rank 0 is always local). */
  remote?: number;
}

/** Train `builder` once as `c` says, for `epochs` epochs (the first is not measured). */
export async function runOnce(
  builder: DdpBuilder<any>,
  c: DdpCase,
  epochs: number,
  opts: {
    /** Where the `c.remote` remote ranks join (NATS url, credentials, tokens). */
    remoteSpec?: Omit<RemoteRanksSpec, "slots">;
    /** Also told every batch and reduce event (after this run's own bookkeeping). */
    observer?: Pick<RunObserver, "batch" | "reduce">;
  } = {},
): Promise<DdpRun> {
  const { remoteSpec, observer } = opts;
  const { ranks, mode, bf16 } = c, slowdown = c.slowdown ?? [];
  const remote = c.remote ?? 0;
  if (remote && !remoteSpec) throw new TypeError(`runOnce: ${remote} remote ranks need a remoteSpec (NATS url, credentials), got none`);
  if (remote >= ranks) throw new RangeError(`runOnce: remote must be < ranks (rank 0 is a local worker), got ${remote} of ${ranks}`);
  const EPOCHS = epochs;
  const events: ReduceEvent[] = [];
  const end = new Array<number>(EPOCHS).fill(0);
  let firstBatch = 0, lastReduce = 0;
  const lost: string[] = [];
  const seen = (epoch: number) => {
    const now = performance.now();
    end[epoch] = Math.max(end[epoch] ?? 0, now);
    return now;
  };
  builder
    .batchSize(BATCH)
    .numEpochs(EPOCHS)
    .elche(ElCheConfig.defaultFor(mode))
    .bf16Wire(bf16)
    .cluster({ ranks: Array.from({ length: ranks - remote }, (_, r) => ({ slowdown: slowdown[r] ?? 1 })) });
  if (remote) builder.remoteRanks({ ...remoteSpec!, slots: remote });
  observe(builder, {
    batch: (e) => {
      const now = seen(e.epoch);
      firstBatch ||= now;
      observer?.batch?.(e);
    },
    reduce: (e) => {
      events.push(e);
      lastReduce = seen(e.epoch);
      observer?.reduce?.(e);
    },
    rankLost: (rank, why) => lost.push(`rank ${rank}: ${why}`),
  });
  const t0 = performance.now();
  const handle = await builder.run();
  await handle.join();
  const totalMs = performance.now() - t0;
  const history = handle.history;
  const meas = history.slice(1);
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const samples = sum(meas.flatMap((m) => m.perRankSamples));
  const computeMs = sum(meas.flatMap((m) => m.perRankComputeOnlyMs)) / ranks;
  const measured = events.filter((e) => e.epoch >= 1);
  const reduceMsAll = sum(measured.map((e) => e.ms));
  const epochWallMs = end[EPOCHS - 1] - end[0];
  // The run's last reduce is exact (f32 frames) when ranks still had steps to fold in.
  const steady = events.slice(0, -1).map((e) => e.bytesUp + e.bytesDown);
  return {
    ranks,
    remote,
    mode,
    bf16,
    slowdown: Array.from({ length: ranks }, (_, r) => slowdown[r] ?? 1),
    samples,
    epochWallMs: round(epochWallMs, 1),
    trainWallMs: round(Math.max(lastReduce, ...end) - firstBatch, 1),
    totalMs: round(totalMs, 1),
    historyEpochMs: round(sum(meas.map((m) => m.epochMs)), 1),
    samplesPerS: round(samples / (epochWallMs / 1e3), 1),
    reduces: measured.length,
    wireBytesPerReduce: steady.length ? median(steady) : null,
    historyWireBytesPerReduce: round(sum(meas.map((m) => m.wireBytesPerReduce)) / meas.length, 1),
    reduceMs: round(measured.length ? reduceMsAll / measured.length : 0, 2),
    reduceMsMedian: measured.length ? round(median(measured.map((e) => e.ms)), 2) : null,
    averageMs: round(measured.length ? sum(measured.map((e) => e.averageMs)) / measured.length : 0, 2),
    computeMs: round(computeMs, 1),
    overheadShare: round(computeMs > 0 ? reduceMsAll / computeMs : 0, 4),
    finalLoss: round(history[history.length - 1].avgLoss, 4),
    lost,
    anchors: measured.map((e) => e.anchor),
    reduceLog: measured.map((e) => ({ ms: round(e.ms, 1), steps: [...e.steps] })),
  };
}


const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const secs = (ms: number) => `${(ms / 1e3).toFixed(2)} s`;

/** A run as one console line. */
export function runLine(r: DdpRun): string {
  return `  ${r.ranks}r ${r.mode.padEnd(11)} ${r.bf16 ? "bf16" : "f32 "} slow [${r.slowdown}]  ${r.samplesPerS.toFixed(0).padStart(5)} samples/s  ` +
    `epoch ${secs(r.epochWallMs)} (all ${secs(r.trainWallMs)}, with start-up ${secs(r.totalMs)})  reduces ${r.reduces}  ` +
    `${r.reduceMs.toFixed(1)} ms/reduce (avg ${r.averageMs.toFixed(2)} ms)  ${r.wireBytesPerReduce ?? "—"} B/reduce  ` +
    `overhead ${pct(r.overheadShare)}  loss ${r.finalLoss}${r.lost.length ? `  LOST ${r.lost.join("; ")}` : ""}`;
}

export type DdpTargets = Record<string, { target: string; measured: string; met: boolean }>;

/**
 * The sweep: 1 rank; `ranksList` × modes × f32/bf16; then 2 ranks, rank 1 three times
 * slower, bf16, every mode. Each run is logged as it ends.
 */
export async function sweep(
  builder: DdpBuilder<any>,
  ranksList: number[],
  epochs: number,
  log: (line: string) => void,
): Promise<{ runs: DdpRun[]; targets: DdpTargets }> {
  const runs: DdpRun[] = [];
  const one = async (c: DdpCase) => {
    const r = await runOnce(builder, c, epochs);
    runs.push(r);
    log(runLine(r));
  };
  await one({ ranks: 1, mode: "cpu-cadence", bf16: false });
  for (const ranks of ranksList) {
    for (const mode of MODES) {
      for (const bf16 of [false, true]) await one({ ranks, mode, bf16 });
    }
  }
  for (const mode of MODES) await one({ ranks: 2, mode, bf16: true, slowdown: [1, 3] });
  return { runs, targets: targetsOf(runs, ranksList) };
}

/** The targets of bench/README.md, from a sweep's runs. */
export function targetsOf(runs: DdpRun[], ranksList: number[]): DdpTargets {
  const find = (ranks: number, mode: ElCheMode, bf16: boolean, slow = false) =>
    runs.find((r) => r.ranks === ranks && r.mode === mode && r.bf16 === bf16 && (r.slowdown.some((s) => s > 1) === slow))!;
  const bf16Ratios = ranksList.flatMap((ranks) =>
    MODES.map((mode) => {
      const f32 = find(ranks, mode, false).wireBytesPerReduce, bf16 = find(ranks, mode, true).wireBytesPerReduce;
      return { ranks, mode, ratio: f32 && bf16 ? bf16 / f32 : null };
    })
  );
  const cadence = ranksList.map((ranks) => ({ ranks, f32: find(ranks, "cpu-cadence", false), bf16: find(ranks, "cpu-cadence", true) }));
  const slow = Object.fromEntries(MODES.map((m) => [m, find(2, m, true, true)]));
  const slowRatio = slow["cpu-cadence"].epochWallMs / slow["cpu-sync"].epochWallMs;
  const slowRatioAll = slow["cpu-cadence"].trainWallMs / slow["cpu-sync"].trainWallMs;
  const targets = {
    overhead: {
      target: "averaging + wire <= 5% of compute at cpu-cadence defaults",
      measured: cadence.map((c) => `${c.ranks}r: f32 ${pct(c.f32.overheadShare)}, bf16 ${pct(c.bf16.overheadShare)}`).join("; "),
      met: cadence.every((c) => c.f32.overheadShare <= 0.05 && c.bf16.overheadShare <= 0.05),
    },
    bf16: {
      target: "bf16 wire bytes per reduce = 0.50x f32",
      measured: bf16Ratios.map((b) => `${b.ranks}r ${b.mode} ${b.ratio?.toFixed(3) ?? "n/a (no steady reduce)"}x`).join("; "),
      met: bf16Ratios.every((b) => b.ratio === 0.5 || b.ratio === null) && bf16Ratios.some((b) => b.ratio === 0.5),
    },
    slowRank: {
      target: "cpu-cadence wall <= 0.5x cpu-sync wall with a 3x slower rank (2 ranks)",
      measured: `measured epochs: sync ${secs(slow["cpu-sync"].epochWallMs)}, cadence ${secs(slow["cpu-cadence"].epochWallMs)}, ` +
        `async ${secs(slow["cpu-async"].epochWallMs)}: cadence/sync ${slowRatio.toFixed(2)}x ` +
        `(all epochs: sync ${secs(slow["cpu-sync"].trainWallMs)}, cadence ${secs(slow["cpu-cadence"].trainWallMs)}, ` +
        `async ${secs(slow["cpu-async"].trainWallMs)}: ${slowRatioAll.toFixed(2)}x)`,
      met: slowRatio <= 0.5,
    },
  };  return targets;
}
