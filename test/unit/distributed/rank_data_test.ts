/**
 * The data plane's sizing and bookkeeping around the trainer, without a GPU: budgets from
 * the knobs (declared bytes, local ranks, kill switches), counters that add across chunks
 * while gauges keep the latest, the epoch fold and the record rows carrying them, and the
 * run's stage folder made and removed by the coordinator.
 */
import { counterDelta, DATA_COUNTERS, DATA_GAUGES, foldCounters, planeTotals } from "../../../src/data/mod.ts";
import type { Device } from "../../../src/gpu/mod.ts";
import { RecordTree } from "../../../src/monitor/mod.ts";
import { EpochAggregator } from "../../../src/distributed/coordinator/report/metrics.ts";
import type { DataSetup } from "../../../src/distributed/protocol/messages.ts";
import { hostAvailableBytes, planeBudgets, vramPoolKilled } from "../../../src/distributed/rank/rank_data.ts";
import { prepareDiskStage } from "../../../src/distributed/run/disk_stage.ts";
import { assert, assertEquals, assertRejects } from "../../util/assert.ts";

const device = { limits: { maxBufferSize: 1000_003 } } as unknown as Device;
const setup = (o: Partial<DataSetup> = {}): DataSetup => ({
  vramPool: true,
  vramMaxUsage: 0.9,
  ramMaxUsage: 0.5,
  sampleCache: true,
  diskStageBytes: 0,
  localRanks: 1,
  ...o,
});

Deno.test("planeBudgets: shares of declared bytes, of the host split across local ranks, and the kill switches", () => {
  assertEquals(planeBudgets(setup({ ramBytes: 1001, vramBytes: 2001, diskStageBytes: 77 }), device, 100), {
    ramBytes: 500,
    vramBytes: Math.floor(0.9 * 2001 - 100),
    diskBytes: 77,
  });
  // No declared device size: the adapter's maxBufferSize; used bytes come off the share.
  assertEquals(planeBudgets(setup(), device, 3).vramBytes, Math.floor(0.9 * 1000_003 - 3));
  assertEquals(planeBudgets(setup({ vramBytes: 10 }), device, 50).vramBytes, 0, "never negative");
  const host = hostAvailableBytes();
  assert(host > 0 && Number.isFinite(host), `host bytes ${host}`);
  const one = planeBudgets(setup({ ramMaxUsage: 0.4 }), device, 0).ramBytes;
  const four = planeBudgets(setup({ ramMaxUsage: 0.4, localRanks: 4 }), device, 0).ramBytes;
  // The host's free memory moves between the two reads: compare within 5%.
  assert(Math.abs(four * 4 - one) <= 0.05 * one, `4 local ranks split the RAM share: ${four} × 4 vs ${one}`);
  assertEquals(planeBudgets(setup({ sampleCache: false, ramBytes: 1000 }), device, 0).ramBytes, 0, "sampleCache(false)");
  assertEquals(planeBudgets(setup({ ramMaxUsage: 0, ramBytes: 1000 }), device, 0).ramBytes, 0, "ramMaxUsage 0 retains nothing");
  assertEquals(planeBudgets(setup({ vramPool: false }), device, 0).vramBytes, 0, "vramPool(false)");
  Deno.env.set("FLODL_VRAM_POOL", "off");
  try {
    assert(vramPoolKilled(), "FLODL_VRAM_POOL=off read");
    assertEquals(planeBudgets(setup(), device, 0).vramBytes, 0, "FLODL_VRAM_POOL=off");
  } finally {
    Deno.env.delete("FLODL_VRAM_POOL");
  }
  assert(!vramPoolKilled(), "unset: the pool is allowed");
});

Deno.test("plane counters: deltas per report, folded per epoch (counters add, gauges keep the latest), onto the rank rows", () => {
  const stats = (hits: number, held: number) => ({
    tiers: { ramHits: hits, diskHits: 1, sourceReads: 2, ramSamples: 3, ramBytes: held, diskSamples: 0, diskBytes: 0, evictions: 0, spills: 0, drops: 0 },
    vram: { gathered: hits, uploaded: 2, resident: 9, capacity: 9, bytes: 90 },
    batches: 4,
    waitMs: 1.5,
  });
  const t1 = planeTotals(stats(5, 700)), t2 = planeTotals(stats(12, 650));
  assertEquals(Object.keys(t1).sort(), [...DATA_COUNTERS, ...DATA_GAUGES].sort(), "every key reported");
  const d1 = counterDelta(t1, {}), d2 = counterDelta(t2, t1);
  assertEquals([d2.data_ram_hits, d2.data_vram_gathered, d2.data_source_reads, d2.data_ram_bytes, d2.data_vram_resident], [7, 7, 0, 650, 9]);
  assertEquals(foldCounters(d1, d2).data_ram_hits, 12, "counters add");
  assertEquals(foldCounters(d1, d2).data_ram_bytes, 650, "gauges keep the later value");

  const agg = new EpochAggregator(0, 2);
  const report = (rank: number, data?: Record<string, number>) => ({
    rank, epoch: 0, avgLoss: 1, batches: 2, samples: 8, epochMs: 5, shareCompleteMs: 5, computeOnlyMs: 4, dataStarveMs: 1, scalars: {}, data,
  });
  agg.add(report(0, d1));
  agg.add(report(0, d2));
  agg.add(report(1));
  const m = agg.finish();
  assertEquals(m.perRankData![0].data_ram_hits, 12, "rank 0's chunks add up");
  assertEquals(m.perRankData![1], {}, "a rank without a plane reports nothing");
  const rows = new RecordTree({ worldSize: 2, reductions: { data_ram_hits: "sum" } }).epochRows(m);
  assertEquals(rows[0].metrics.data_ram_bytes, 650, "the rank row carries the plane's keys");
  assertEquals(rows.at(-1)!.metrics.data_ram_hits, 12, "the root sums them");
});

Deno.test("the run's stage folder: made fresh inside diskStageDir, removed whole; off at 0 GB; an unusable dir names the knob", async () => {
  const base = await Deno.makeTempDir({ prefix: "flodl-stage-test-" });
  try {
    assertEquals((await prepareDiskStage({ diskStageGb: 0, diskStageDir: base })).dir, undefined, "diskStage 0: no folder");
    const a = await prepareDiskStage({ diskStageGb: 0.5, diskStageDir: `${base}/nested` });
    const b = await prepareDiskStage({ diskStageGb: 0.5, diskStageDir: `${base}/nested` });
    assert(a.dir!.startsWith(`${base}/nested/flodl-stage-`) && a.dir !== b.dir, `fresh per run: ${a.dir}, ${b.dir}`);
    await Deno.writeFile(`${a.dir}/rank0.stage`, new Uint8Array(10));
    await a.remove();
    await a.remove(); // idempotent
    assertEquals([...Deno.readDirSync(`${base}/nested`)].map((e) => e.name), [b.dir!.split("/").at(-1)], "only run a's folder went");
    await b.remove();
    const tmp = await prepareDiskStage({ diskStageGb: 1 });
    assert((await Deno.stat(tmp.dir!)).isDirectory, "default: a folder under the system temp dir");
    await tmp.remove();
    await assertRejects(() => Deno.stat(tmp.dir!), Deno.errors.NotFound);
    const file = `${base}/a-file`;
    await Deno.writeFile(file, new Uint8Array(1));
    await assertRejects(() => prepareDiskStage({ diskStageGb: 1, diskStageDir: `${file}/sub` }), Error, "diskStageDir", `${file}/sub`);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
