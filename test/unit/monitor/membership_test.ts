/**
 * Remote ranks and membership changes in the monitor outputs of a real coordinator run (fake
 * ranks, test/fixtures/elastic_run.ts): the record stream names each rank's host, adapter
 * and transport, and carries rank_lost / rank_joined rows with their epochs and reasons; the
 * saved dashboard embeds the rank table and the membership events. The rendered table is
 * checked in Chromium (test/browser/dashboard_ranks.spec.ts).
 */
import { type DashboardData, parseRecord, reviveNonFinite } from "../../../src/monitor/mod.ts";
import type { LeafRecord, MonitorRecord } from "../../../src/monitor/record.ts";
import { RecordTree } from "../../../src/monitor/record_tree.ts";
import { hostOf } from "../../../src/distributed/run/run_monitor.ts";
import { elasticRun, JOINER } from "../../fixtures/elastic_run.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";

async function readRecords(dir: string): Promise<MonitorRecord[]> {
  const out: MonitorRecord[] = [];
  for await (const f of walk(dir)) {
    for (const line of (await Deno.readTextFile(f)).split("\n")) if (line.trim()) out.push(parseRecord(line));
  }
  return out.sort((a, b) => a.ts - b.ts);
}

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) yield* walk(p);
    else yield p;
  }
}

Deno.test("monitor: an elastic run's record stream and dashboard show each rank's host, adapter and transport, and who joined and was lost in which epoch", async () => {
  const dir = await Deno.makeTempDir({ prefix: "flodl-elastic-" });
  try {
    await elasticRun(dir);
    const records = await readRecords(`${dir}/records`);
    const leaves = records.filter((r): r is LeafRecord => r.kind === "node" && "device" in r);

    const lost = leaves.filter((r) => r.label?.startsWith("rank_lost:"));
    assertEquals(lost.length, 1, "one rank_lost row");
    assertEquals(lost[0].path, "root/gpu-box.lab/rank2", "the remote rank under its host");
    assertEquals([lost[0].epoch, lost[0].alive, lost[0].transport, lost[0].sev], [1, false, "remote", "critical"]);
    assert(/NATS connection closed/.test(lost[0].label!), `the reason: ${lost[0].label}`);

    assertEquals(leaves.filter((r) => r.path.endsWith("/rank3") && !r.path.startsWith("root/laptop/")), [], "no row of the spare slot before it joined");
    const joined = leaves.filter((r) => r.label?.startsWith("rank_joined:"));
    assertEquals(joined.length, 1, "one rank_joined row");
    assertEquals(joined[0].path, "root/laptop/rank3");
    assertEquals([joined[0].epoch, joined[0].alive, joined[0].device, joined[0].transport], [2, true, "Apple M3", "remote"]);
    assertEquals(joined[0].label, "rank_joined: laptop (Apple M3, remote)");
    assert(lost[0].ts <= joined[0].ts, "lost before joined");

    // Epoch rows: worker ranks under "local", the spare slot absent until it joined, then under its host.
    const epochLeaves = (e: number) => leaves.filter((r) => r.epoch_complete && r.epoch === e).map((r) => `${r.path} ${r.transport}`).sort();
    assertEquals(epochLeaves(0), ["root/gpu-box.lab/rank2 remote", "root/local/rank0 worker", "root/local/rank1 worker"]);
    assertEquals(epochLeaves(2), ["root/laptop/rank3 remote", "root/local/rank0 worker", "root/local/rank1 worker"]);
    const root2 = records.find((r) => r.kind === "node" && r.path === "root" && r.epoch_complete && r.epoch === 2);
    assertEquals((root2 as { children?: number })?.children, 3, "hosts in the last epoch's root row: local, gpu-box.lab (lost), laptop");

    const html = await Deno.readTextFile(`${dir}/dashboard.html`);
    const m = html.match(/<script type="application\/json" id="flodl-dashboard-data">([\s\S]*?)<\/script>/);
    assert(m, "the dashboard embeds its data");
    const data: DashboardData = JSON.parse(m[1], reviveNonFinite);
    assertEquals(data.ranks?.map((r) => `${r.rank} ${r.host} ${r.adapter} ${r.transport}`), [
      "0 coordinator-host llvmpipe worker",
      "1 coordinator-host llvmpipe worker",
      "2 gpu-box.lab NVIDIA H200 remote",
      `3 ${JOINER.host} ${JOINER.adapter} remote`,
    ]);
    assertEquals(data.membership?.map((e) => `${e.kind} rank ${e.rank} epoch ${e.epoch}`), ["lost rank 2 epoch 1", "joined rank 3 epoch 2"]);
    assert(/NATS connection closed/.test(data.membership![0].reason!), "the loss's reason");
    assert(data.records!.some((r) => r.label === "rank_joined: laptop (Apple M3, remote)"), "the record plane in the dashboard has the join");
    assert(data.timeline!.some((e) => e.kind === "Custom" && /rank 3 joined \(laptop, Apple M3, remote\) for epoch 3/.test(e.label)), "timeline");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("RecordTree.rankJoined: a vacant slot gets no rows until it joins, then rows under its host; a bad host or rank is refused", () => {
  const tree = new RecordTree({ worldSize: 3, hosts: ["local", "local", "remote"], vacant: [false, false, true], now: () => 0 });
  const leaves = [0, 1, 2].map((rank) => ({ rank, work: 1, metrics: { loss: 1 } }));
  const before = tree.rows({ epoch: 0, leaves }); // a sub-epoch report lists every rank: the vacant one gets no row
  assertEquals(before.map((r) => r.path), ["root/local/rank0", "root/local/rank1", "root/local", "root"]);
  assertEquals(before.at(-1)!.path, "root");
  assertEquals((before.at(-1) as { alive: number }).alive, 1, "one alive host (the vacant slot's placeholder host is not)");
  const row = tree.rankJoined(2, 1, { host: "b.lab", device: "X", transport: "remote" });
  assertEquals([row.path, row.sev, row.alive, row.label], ["root/b.lab/rank2", "info", true, "rank_joined: b.lab (X, remote)"]);
  const after = tree.rows({ epoch: 1, leaves });
  assertEquals(after.map((r) => r.path), ["root/local/rank0", "root/local/rank1", "root/b.lab/rank2", "root/local", "root/b.lab", "root"]);
  assertEquals(tree.meta().hosts, ["local", "local", "b.lab"]);
  assertThrows(() => tree.rankJoined(3, 1, { host: "x", device: 0 }), RangeError, "rank must be in [0, 3)");
  assertThrows(() => tree.rankJoined(1, 1, { host: "a/b", device: 0 }), RangeError, 'without "/"');
});

Deno.test("hostOf: worker and local ranks are 'local', a remote rank its machine's name made path-safe", () => {
  assertEquals(hostOf({ host: "box", adapter: "a", transport: "worker" }), "local");
  assertEquals(hostOf({ host: "gpu.lab", adapter: "a", transport: "remote" }), "gpu.lab");
  assertEquals(hostOf({ host: "a/b\\c", adapter: "a", transport: "remote" }), "a_b_c");
  assertEquals(hostOf({ host: "", adapter: "a", transport: "remote" }), "remote");
  assertEquals(hostOf(undefined), "remote");
});
