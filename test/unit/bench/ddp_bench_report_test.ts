/**
 * bench/ddp-bench's figures and report (no GPU): per-rank busy and idle from the trainer's
 * history, syncs from the reduce events, a run that trained nothing reads as "—", and the
 * markdown row puts flodl's published cell and the difference beside ours.
 */
import { renderHtml, renderMarkdown } from "../../../bench/ddp-bench/report.ts";
import { runLabel, summarize } from "../../../bench/ddp-bench/result.ts";
import type { RunEpochMetrics } from "../../../src/index.ts";
import { assert, assertEquals } from "../../util/assert.ts";

function epoch(e: number, avgLoss: number, epochMs: number, compute: number[]): RunEpochMetrics {
  return {
    epoch: e, avgLoss, epochMs, scalars: {}, perRank: [], perRankLoss: [], perRankSamples: [], perRankDiscardedSamples: [], perRankThroughput: [],
    perRankBatchShare: [], perRankShareCompleteMs: [], perRankComputeOnlyMs: compute, perRankDataStarveMs: [], deviceIndices: [],
    reduces: 1, wireBytesPerReduce: 0, reduceMs: 0, anchor: 0, batchCounts: [],
  };
}

const cfg = { model: "mlp" as const, mode: "cpu-cadence" as const, slowdown: [1, 3], epochs: 2, batch: 64 };

Deno.test("ddp-bench summarize: busy and idle per rank from the history, syncs and their mean, curves per epoch", () => {
  const r = summarize({
    cfg,
    ranks: 2,
    loaded: { train: 1024, test: 1000 },
    totalMs: 9000,
    history: [epoch(0, 0.9, 3000, [1000, 2700]), epoch(1, 0.5, 2000, [700, 1900])],
    evals: [{ epoch: 1, value: 0.81, rank: 0 }, { epoch: 2, value: 0.9, rank: 0 }],
    batches: [{ rank: 0, epoch: 0, ms: 5, computeMs: 7 }, { rank: 0, epoch: 1, ms: 5, computeMs: 3 }, { rank: 0, epoch: 1, ms: 5, computeMs: 5 },
      { rank: 1, epoch: 0, ms: 5, computeMs: 30 }],
    reduces: [{ epoch: 0, ms: 10, averageMs: 1 }, { epoch: 1, ms: 30, averageMs: 3 }],
  });
  assertEquals([r.trainS, r.totalS, r.loss, r.eval, r.syncs, r.avgSyncMs, r.avgAverageMs], [5, 9, 0.5, 0.9, 2, 20, 2], "run figures");
  assertEquals(r.perRank.map((p) => [p.batches, p.busyS, p.idleS, p.busyPct, p.stepMs]), [[3, 1.7, 3.3, 0.34, 5], [1, 4.6, 0.4, 0.92, 30]], "per rank");
  assertEquals([r.lossCurve, r.evalCurve], [[0.9, 0.5], [0.81, 0.9]], "curves");
  assertEquals(runLabel(r), "cpu-cadence, rank 1 ×3", "label names the slow rank");
  const none = summarize({ cfg, ranks: 2, loaded: { train: 64, test: 10 }, totalMs: 1, history: [epoch(0, NaN, 1, [0, 0])], evals: [], batches: [], reduces: [] });
  assertEquals([none.loss, none.eval, none.lossCurve], [null, null, [null]], "a run without batches has no loss");
});

Deno.test("ddp-bench report: flodl's 0.5 cell and our difference beside each mode, vs Ref against our solo, the HTML charts", () => {
  const base = summarize({ cfg, ranks: 2, loaded: { train: 1024, test: 1000 }, totalMs: 1000, history: [epoch(0, 0.5, 500, [100, 100])],
    evals: [{ epoch: 1, value: 0.95, rank: 0 }], batches: [], reduces: [] });
  const solo = { ...base, mode: "solo" as const, ranks: 1, slowdown: [1], eval: 0.96 };
  const rep = {
    runtime: "deno x", adapter: "a", date: "2026-12-02T00:00:00Z", slow: 3, load: { before: [1, 1, 1], after: [1, 1, 1] }, totalS: 1,
    scale: { mnist: { epochs: 1, subset: 1024, testSubset: 1000, batch: 64 }, chars: { epochs: 1, subset: 128, testSubset: 32, batch: 64 } },
    runs: [solo, base],
    torch: [],
  };
  const md = renderMarkdown(rep);
  // mlp cpu-cadence in flodl 0.5: .9785 / 3.8 s; ours 0.95: Δ -0.0285; vs our solo 0.96: -0.0100.
  const row = md.split("\n").find((l) => l.startsWith("| cpu-cadence, rank 1 ×3 |"));
  assert(row, `no cpu-cadence row in:\n${md}`);
  for (const want of ["| 0.9500 |", "| -0.0100 |", "| 0.9785 / 3.8 |", "| -0.0285 |"]) assert(row.includes(want), `row lacks ${want}: ${row}`);
  assert(md.includes("| solo | 0.5000 | 0.9600 | — |") && md.includes("0.9700 / 6.5"), `solo row against flodl's solo-0:\n${md}`);
  const html = renderHtml(rep);
  assert((html.match(/<svg /g) ?? []).length === 2 && html.includes("<polyline"), "two charts (loss, eval) for the one model");
});
