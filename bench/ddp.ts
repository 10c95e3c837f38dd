/**
 * The data-parallel trainer on the MNIST MLP (784-256-10, Adam 1e-3, batch 64), all ranks
 * on one adapter, 3 epochs over a subset of MNIST's training set; epochs 2 and 3 are
 * measured (the first compiles shaders and calibrates ElChe):
 *
 * - 1, 2 and 4 ranks × cpu-sync / cpu-cadence / cpu-async (ElCheConfig defaults), f32 and
 *   bf16 wire: samples/s, reduces, averaging ms and wire bytes per reduce, and the share of
 *   compute that averaging + wire take;
 * - 2 ranks, rank 1 three times slower (`slowdown: 3`): training wall time per mode.
 *
 *   npx deno run -A --no-check bench/ddp.ts [--subset 6400] [--epochs 3] [--ranks 2,4] [--tag run1]
 *
 * Writes bench/results/<date>-ddp[-<tag>].json. This module is also every rank's entry:
 * ranks re-run its top level (same Deno.args), so the builder is created here and the
 * benchmark itself runs on the coordinator only.
 */
import {
  Adam,
  crossEntropy,
  ElCheConfig,
  type ElCheMode,
  isRank,
  loadMnist,
  observe,
  type ReduceEvent,
  type RunEpochMetrics,
  Trainer,
  Variable,
} from "../src/index.ts";
import { mlp } from "../examples/models.ts";
import { ddpLines } from "./report.ts";
import { median, round } from "./workloads.ts";

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && Deno.args[i + 1] !== undefined ? Deno.args[i + 1] : fallback;
}

const SUBSET = Number(flag("subset", "6400"));
if (!Number.isInteger(SUBSET) || SUBSET < 256) throw new RangeError(`bench/ddp.ts: --subset must be an integer >= 256, got ${flag("subset", "")}`);
const BATCH = 64;
const MODES: ElCheMode[] = ["cpu-sync", "cpu-cadence", "cpu-async"];

const train = await loadMnist({ split: "train", limit: SUBSET });

export const builder = Trainer.builder(
  (device) => mlp(device),
  (params) => new Adam(params, { lr: 1e-3 }),
  (model, [x, y]) => crossEntropy(model.forward(new Variable(x)), y),
).dataset(train);

/**
 * What one run measured. Wall times are taken on the coordinator from the observer's batch
 * and reduce events (the epoch history's `epochMs` sums rank-side chunk time and leaves out
 * waiting for reduces). Every epoch after the first is measured: the first compiles shaders
 * on every rank's device and calibrates ElChe.
 */
export interface DdpRun {
  ranks: number;
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
  averageMs: number;
  /** Mean over ranks of Σ step ms (the ranks' compute) in the measured epochs. */
  computeMs: number;
  /** Σ reduce ms / computeMs in the measured epochs: what averaging + wire cost relative to compute. */
  overheadShare: number;
  finalLoss: number;
}

const EPOCHS = Number(flag("epochs", "3"));
if (!Number.isInteger(EPOCHS) || EPOCHS < 2) throw new RangeError(`bench/ddp.ts: --epochs must be an integer >= 2, got ${flag("epochs", "")}`);
const RANKS = flag("ranks", "2,4").split(",").map(Number);

async function runOnce(ranks: number, mode: ElCheMode, bf16: boolean, slowdown: number[] = []): Promise<DdpRun> {
  const events: ReduceEvent[] = [];
  const end = new Array<number>(EPOCHS).fill(0);
  let firstBatch = 0, lastReduce = 0;
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
    .cluster({ ranks: Array.from({ length: ranks }, (_, r) => ({ slowdown: slowdown[r] ?? 1 })) });
  observe(builder.state, {
    batch: (e) => {
      const now = seen(e.epoch);
      firstBatch ||= now;
    },
    reduce: (e) => {
      events.push(e);
      lastReduce = seen(e.epoch);
    },
  });
  const t0 = performance.now();
  const handle = await builder.run();
  await handle.join();
  const totalMs = performance.now() - t0;
  const history = handle.history as RunEpochMetrics[];
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
    averageMs: round(measured.length ? sum(measured.map((e) => e.averageMs)) / measured.length : 0, 2),
    computeMs: round(computeMs, 1),
    overheadShare: round(computeMs > 0 ? reduceMsAll / computeMs : 0, 4),
    finalLoss: round(history[history.length - 1].avgLoss, 4),
  };
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const secs = (ms: number) => `${(ms / 1e3).toFixed(2)} s`;

async function main(): Promise<void> {
  const t0 = performance.now();
  const adapter = await navigator.gpu.requestAdapter();
  const adapterName = adapter ? adapter.info.description || adapter.info.architecture : "none";
  const loadBefore = Deno.loadavg();
  console.log(`bench/ddp: MNIST MLP, ${SUBSET} samples, batch ${BATCH}, ${EPOCHS} epochs (all but the first measured), adapter ${adapterName}, load ${loadBefore.map((x) => x.toFixed(2)).join(" ")}`);
  const runs: DdpRun[] = [];
  const log = (r: DdpRun) => {
    runs.push(r);
    console.log(
      `  ${r.ranks}r ${r.mode.padEnd(11)} ${r.bf16 ? "bf16" : "f32 "} slow [${r.slowdown}]  ${r.samplesPerS.toFixed(0).padStart(5)} samples/s  ` +
        `epoch ${secs(r.epochWallMs)} (all ${secs(r.trainWallMs)}, with start-up ${secs(r.totalMs)})  reduces ${r.reduces}  ` +
        `${r.reduceMs.toFixed(1)} ms/reduce (avg ${r.averageMs.toFixed(2)} ms)  ${r.wireBytesPerReduce ?? "—"} B/reduce  ` +
        `overhead ${pct(r.overheadShare)}  loss ${r.finalLoss}`,
    );
  };
  log(await runOnce(1, "cpu-cadence", false));
  for (const ranks of RANKS) {
    for (const mode of MODES) {
      for (const bf16 of [false, true]) log(await runOnce(ranks, mode, bf16));
    }
  }
  for (const mode of MODES) log(await runOnce(2, mode, true, [1, 3]));

  const find = (ranks: number, mode: ElCheMode, bf16: boolean, slow = false) =>
    runs.find((r) => r.ranks === ranks && r.mode === mode && r.bf16 === bf16 && (r.slowdown.some((s) => s > 1) === slow))!;
  const bf16Ratios = RANKS.flatMap((ranks) =>
    MODES.map((mode) => {
      const f32 = find(ranks, mode, false).wireBytesPerReduce, bf16 = find(ranks, mode, true).wireBytesPerReduce;
      return { ranks, mode, ratio: f32 && bf16 ? bf16 / f32 : null };
    })
  );
  const cadence = RANKS.map((ranks) => ({ ranks, f32: find(ranks, "cpu-cadence", false), bf16: find(ranks, "cpu-cadence", true) }));
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
  };
  const out = {
    runtime: `deno ${Deno.version.deno}`,
    adapter: adapterName,
    date: new Date().toISOString(),
    subset: SUBSET,
    batch: BATCH,
    epochs: EPOCHS,
    load: { before: loadBefore, after: Deno.loadavg() },
    totalS: round((performance.now() - t0) / 1e3, 1),
    runs,
    targets,
  };
  console.log("\n" + ddpLines(out, `Deno ${Deno.version.deno}, trainer, ${out.date.slice(0, 16)}Z`).join("\n"));
  const tag = flag("tag", "");
  const path = new URL(`./results/${out.date.slice(0, 10)}-ddp${tag ? `-${tag}` : ""}.json`, import.meta.url);
  await Deno.mkdir(new URL("./results/", import.meta.url), { recursive: true });
  await Deno.writeTextFile(path, JSON.stringify(out, null, 2) + "\n");
  console.log(`wrote ${path.pathname}`);
  // NOTE: exit explicitly: Deno 2.9 sometimes segfaults tearing down after many WebGPU devices.
  Deno.exit(0);
}

if (!isRank()) await main();
