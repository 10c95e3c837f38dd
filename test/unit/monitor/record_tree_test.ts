import { type InteriorRecord, type LeafRecord, RecordTree } from "../../../src/monitor/mod.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";

const clock = () => 1234;

function tree() {
  return new RecordTree({ worldSize: 3, hosts: ["a", "a", "b.lab"], reductions: { m: "max" }, now: clock });
}

Deno.test("RecordTree.rows: leaves, hosts (dotted names kept), root, rolled up over direct children", () => {
  const rows = tree().rows({
    epoch: 1,
    tick: 2,
    leaves: [
      { rank: 0, work: 1, metrics: { loss: 2, throughput: 5, m: 10 } },
      { rank: 1, work: 3, metrics: { loss: 4, throughput: 7, m: 20 } },
      { rank: 2, work: 4, metrics: { loss: 1, throughput: 9 } },
    ],
    rootExtras: { anchor: 3 },
  });
  assertEquals(rows.map((r) => r.path), [
    "root/a/rank0",
    "root/a/rank1",
    "root/b.lab/rank2",
    "root/a",
    "root/b.lab",
    "root",
  ]);
  const [r0, , , a, b, root] = rows as [
    LeafRecord,
    LeafRecord,
    LeafRecord,
    InteriorRecord,
    InteriorRecord,
    InteriorRecord,
  ];
  assertEquals(r0, {
    v: 1,
    ts: 1234,
    sev: "info",
    path: "root/a/rank0",
    kind: "node",
    tick: 2,
    epoch: 1,
    metrics: { loss: 2, throughput: 5, m: 10 },
    work: 1,
    device: 0,
    alive: true,
  });
  // host a: loss (2·1 + 4·3)/4 = 3.5, throughput 5+7, m max 20, work 4
  assertEquals([a.metrics, a.work, a.children, a.alive], [{ loss: 3.5, throughput: 12, m: 20 }, 4, 2, 2]);
  assertEquals([b.metrics, b.work, b.children, b.alive], [{ loss: 1, throughput: 9 }, 4, 1, 1]);
  // root: loss (3.5·4 + 1·4)/8 = 2.25 = (2 + 12 + 4)/8 over the ranks; throughput 21; m 20
  assertEquals([root.metrics, root.work, root.children, root.alive], [
    { loss: 2.25, throughput: 21, m: 20, anchor: 3 },
    8,
    2,
    2,
  ]);
  assert(rows.every((r) => r.tick === 2 && r.epoch_complete === undefined), "tick on every row, no epoch_complete");
});

Deno.test("RecordTree.meta carries core and declared reductions; rankLost and drift are alerts", () => {
  const t = tree();
  const meta = t.meta();
  assertEquals(meta.kind, "meta");
  assertEquals(meta.reductions, {
    m: "max",
    throughput: "sum",
    batch_share: "sum",
    loss: "mean",
    data_starve: "max",
    compute_only_ms: "max",
  });
  assertEquals(meta.hosts, ["a", "a", "b.lab"]);
  t.rows({ epoch: 0, leaves: [{ rank: 2, work: 5, metrics: {} }] });
  const lost = t.rankLost(2, 0, "heartbeat timeout");
  assertEquals([lost.sev, lost.path, lost.alive, lost.work, lost.label], [
    "critical",
    "root/b.lab/rank2",
    false,
    5,
    "rank_lost: heartbeat timeout",
  ]);
  const rows = t.rows({
    epoch: 1,
    leaves: [{ rank: 0, work: 1, metrics: { loss: 1 } }, { rank: 2, work: 0, metrics: {} }],
  });
  const byPath = Object.fromEntries(rows.map((r) => [r.path, r]));
  assertEquals(byPath["root/b.lab"].alive, 0);
  assertEquals(byPath["root"].alive, 1);
  assertEquals(byPath["root/b.lab/rank2"].alive, false);
  const drift = t.drift(1, { d_raw: 0.3, factor: 0.5 });
  assertEquals([drift.sev, drift.path, drift.metrics], ["warn", "root", { d_raw: 0.3, factor: 0.5 }]);
});

Deno.test("RecordTree.epochRows maps EpochMetrics fields; a rank with no work reports no loss", () => {
  const t = new RecordTree({ worldSize: 2, now: clock });
  const rows = t.epochRows({
    epoch: 4,
    epochMs: 900,
    perRank: [{ acc: 0.5 }, {}],
    perRankLoss: [0.7, NaN],
    perRankSamples: [64, 0],
    perRankThroughput: [0.5, 0],
    perRankBatchShare: [1, 0],
    perRankComputeOnlyMs: [100, 0],
    perRankDataStarveMs: [3, 8],
    deviceIndices: [0, 1],
    reduces: 2,
    wireBytesPerReduce: 4096,
    reduceMs: 7,
    anchor: 2,
  });
  const root = rows.at(-1)!;
  assertEquals(rows.map((r) => r.path), ["root/local/rank0", "root/local/rank1", "root/local", "root"]);
  assertEquals(rows[1].metrics, { throughput: 0, batch_share: 0, data_starve: 8, compute_only_ms: 0 });
  assertEquals(root.metrics, {
    acc: 0.5,
    loss: 0.7,
    throughput: 0.5,
    batch_share: 1,
    data_starve: 8,
    compute_only_ms: 100,
    epoch_ms: 900,
    reduces: 2,
    wire_bytes_per_reduce: 4096,
    reduce_ms: 7,
    anchor: 2,
  });
  assert(rows.every((r) => r.epoch_complete === true && r.epoch === 4));
});

Deno.test("RecordTree refuses bad hosts, world sizes, reductions and ranks, naming the value", () => {
  assertThrows(() => new RecordTree({ worldSize: 0 }), RangeError, "worldSize", "0");
  assertThrows(() => new RecordTree({ worldSize: 2, hosts: ["a"] }), RangeError, "hosts", "2", "1");
  assertThrows(() => new RecordTree({ worldSize: 1, hosts: ["a/b"] }), RangeError, "host", '"a/b"');
  assertThrows(() => new RecordTree({ worldSize: 1, hosts: [".."] }), RangeError, "host", '".."');
  assertThrows(() => new RecordTree({ worldSize: 1, reductions: { loss: "max" } }), RangeError, "loss", "mean", "max");
  // deno-lint-ignore no-explicit-any
  assertThrows(() => new RecordTree({ worldSize: 1, reductions: { k: "median" as any } }), RangeError, "k", "median");
  assertThrows(
    () => new RecordTree({ worldSize: 1 }).rows({ epoch: 0, leaves: [{ rank: 1, work: 1, metrics: {} }] }),
    RangeError,
    "rank",
    "1",
  );
});
