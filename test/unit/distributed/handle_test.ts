/**
 * DdpHandle hands out what the coordinator and the single-device path give it:
 * `RunEpochMetrics` (the epoch's metrics plus reduces, wire bytes, anchor, batch counts).
 * The type checks below stop compiling (`deno check`) if the handle's API drifts back to
 * the narrower `EpochMetrics`.
 */
import { DdpHandle } from "../../../src/distributed/run/handle.ts";
import type { RunEpochMetrics } from "../../../src/distributed/coordinator/report/metrics.ts";
import type { RunEpochMetrics as Exported } from "../../../src/index.ts";
import { assertEquals } from "../../util/assert.ts";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;

const typeChecks: [
  Equal<DdpHandle["history"][number], RunEpochMetrics>,
  Equal<Awaited<ReturnType<DdpHandle["nextMetrics"]>>, RunEpochMetrics | null>,
  Equal<ReturnType<DdpHandle["pollMetrics"]>[number], RunEpochMetrics>,
  Equal<Parameters<DdpHandle["metrics"]>[0], RunEpochMetrics>,
  Equal<Exported, RunEpochMetrics>,
] = [true, true, true, true, true];

function epoch(k: number): RunEpochMetrics {
  return {
    epoch: k,
    avgLoss: 1 / (k + 1),
    epochMs: 10,
    scalars: {},
    perRank: [{}, {}],
    perRankLoss: [1, 1],
    perRankSamples: [30, 10],
    perRankDiscardedSamples: [0, 0],
    perRankThroughput: [3, 1],
    perRankBatchShare: [0.75, 0.25],
    perRankShareCompleteMs: [10, 10],
    perRankComputeOnlyMs: [6, 9],
    perRankDataStarveMs: [1, 1],
    deviceIndices: [0, 1],
    reduces: 2 + k,
    wireBytesPerReduce: 4096,
    reduceMs: 1.5,
    anchor: 10,
    batchCounts: [30, 10],
  };
}

Deno.test("DdpHandle keeps every RunEpochMetrics field in history, nextMetrics, pollMetrics and iteration", async () => {
  assertEquals(typeChecks.every((t) => t), true, "type checks");
  let end!: () => void;
  const h = new DdpHandle(2, ["a", "b"], new Promise((r) => (end = () => r({ params: new Map(), buffers: new Map() }))), () => {});
  h.metrics(epoch(0));
  h.metrics(epoch(1));
  h.metrics(epoch(2));
  const next = await h.nextMetrics();
  assertEquals([next?.reduces, next?.batchCounts], [2, [30, 10]], "nextMetrics");
  assertEquals(h.pollMetrics().map((m) => m.reduces), [3, 4], "pollMetrics");
  h.metrics(epoch(3));
  end();
  await h.join();
  const seen: number[] = [];
  for await (const m of h) seen.push(m.wireBytesPerReduce);
  assertEquals(seen, [4096], "iteration");
  assertEquals(h.history.map((m) => [m.epoch, m.reduces, m.anchor]), [[0, 2, 10], [1, 3, 10], [2, 4, 10], [3, 5, 10]], "history");
});
