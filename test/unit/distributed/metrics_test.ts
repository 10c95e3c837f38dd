import { type ChunkReport, EpochAggregator } from "../../../src/distributed/coordinator/report/metrics.ts";
import { reductionFor, rollUp, type RollUpChild } from "../../../src/monitor/mod.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";

const chunk = (r: Partial<ChunkReport> & { rank: number }): ChunkReport => ({
  epoch: 3,
  avgLoss: 0,
  batches: 0,
  samples: 0,
  epochMs: 0,
  shareCompleteMs: 0,
  computeOnlyMs: 0,
  dataStarveMs: 0,
  scalars: {},
  ...r,
});

function twoRanks(): EpochAggregator {
  const a = new EpochAggregator(3, 2);
  a.add(chunk({
    rank: 0,
    avgLoss: 2,
    batches: 3,
    samples: 96,
    epochMs: 30,
    shareCompleteMs: 30,
    computeOnlyMs: 25,
    dataStarveMs: 1,
    scalars: { acc: { sum: 2.4, count: 3 } },
  }));
  a.add(chunk({
    rank: 0,
    avgLoss: 1,
    batches: 1,
    samples: 32,
    epochMs: 10,
    shareCompleteMs: 8,
    computeOnlyMs: 7,
    scalars: { acc: { sum: 0.9, count: 1 } },
  }));
  a.add(chunk({
    rank: 1,
    avgLoss: 4,
    batches: 2,
    samples: 64,
    epochMs: 50,
    shareCompleteMs: 40,
    computeOnlyMs: 35,
    dataStarveMs: 5,
    scalars: { acc: { sum: 1, count: 2 }, tokens: { sum: 100, count: 1 } },
  }));
  return a;
}

Deno.test("EpochAggregator folds chunk reports per rank, then across ranks", () => {
  const m = twoRanks().finish();
  assertEquals(m.epoch, 3);
  assertRelClose([m.avgLoss], [(2 * 3 + 1 * 1 + 4 * 2) / 6], 1e-12, "avg loss = Σ loss·batches / Σ batches");
  assertRelClose(m.perRankLoss, [7 / 4, 4], 1e-12, "per-rank loss");
  assertEquals(m.perRankSamples, [128, 64]);
  assertEquals(m.epochMs, 50); // max over ranks of Σ chunk wall time
  assertRelClose(m.perRankThroughput, [128 / 38, 64 / 40], 1e-12, "samples per ms of share-complete time");
  assertRelClose(m.perRankBatchShare, [128 / 192, 64 / 192], 1e-12, "share");
  assertEquals(m.perRankShareCompleteMs, [38, 40]);
  assertEquals(m.perRankComputeOnlyMs, [32, 35]);
  assertEquals(m.perRankDataStarveMs, [1, 5]);
  assertEquals(m.deviceIndices, [0, 1]);
  assertRelClose([m.perRank[0].acc, m.perRank[1].acc, m.perRank[1].tokens], [3.3 / 4, 0.5, 100], 1e-12, "per rank");
  assert(!("tokens" in m.perRank[0]), "rank 0 never reported tokens");
  // scalars[k] = Σ mean_r · batches_r / Σ batches_r over ranks that reported k.
  assertRelClose([m.scalars.acc, m.scalars.tokens], [(3.3 / 4 * 4 + 0.5 * 2) / 6, 100], 1e-12, "scalars");
});

Deno.test("EpochAggregator.finish takes the pool wall time, shares and device indices when given", () => {
  const m = twoRanks().finish({ epochMs: 77, batchShare: [0.6, 0.4], deviceIndices: [1, 0] });
  assertEquals([m.epochMs, m.perRankBatchShare, m.deviceIndices], [77, [0.6, 0.4], [1, 0]]);
  const empty = new EpochAggregator(0, 2).finish();
  assert(Number.isNaN(empty.avgLoss) && empty.perRankLoss.every(Number.isNaN), "no batch: NaN loss");
  assertEquals(empty.perRankThroughput, [0, 0]);
});

Deno.test("EpochAggregator rejects reports of another epoch or rank", () => {
  const a = new EpochAggregator(3, 2);
  assertThrows(() => a.add(chunk({ rank: 0, epoch: 4 })), RangeError, "expected epoch 3, got 4");
  assertThrows(() => a.add(chunk({ rank: 2 })), RangeError, "rank", "got 2");
});

Deno.test("rollUp: core keys fixed, declared reductions for user keys, Mean work-weighted, absent never zero", () => {
  const kids: RollUpChild[] = [
    { work: 1, values: { loss: 2, throughput: 10, data_starve: 3, compute_only_ms: 5, peak: 7, tok: 1, last: 1 } },
    { work: 3, values: { loss: 4, throughput: 20, data_starve: 1, compute_only_ms: 9, peak: 2, tok: 2, last: 2 } },
    { work: 0, values: { batch_share: 0.25, only: 5 } },
  ];
  const out = rollUp(kids, { peak: "max", tok: "sum", last: "last", loss: "sum", only: "min" });
  assertEquals(out, {
    loss: (2 * 1 + 4 * 3) / 4, // declared Sum ignored: core Mean
    throughput: 30,
    data_starve: 3,
    compute_only_ms: 9,
    peak: 7,
    tok: 3,
    last: 2, // the highest-work child
    batch_share: 0.25,
    only: 5,
  });
  assert(!("x" in rollUp([{ work: 0, values: { x: 1 } }])), "Mean with Σ work = 0 is absent");
  assertEquals(rollUp([]), {});
  assertEquals([reductionFor("batch_share", { batch_share: "min" }), reductionFor("z")], ["sum", "mean"]);
});
