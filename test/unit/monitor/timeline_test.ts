import { Timeline, TIMELINE_CSV_COLUMNS } from "../../../src/monitor/mod.ts";
import { assert, assertEquals } from "../../util/assert.ts";

function sample(): Timeline {
  let t = 1000;
  const tl = new Timeline({ now: () => t });
  tl.add({ kind: "EpochStart", epoch: 0 });
  t = 1100;
  tl.add({ kind: "SyncStart" });
  t = 1110;
  tl.add({ kind: "CpuAvgEnd", duration: 4 });
  tl.add({ kind: "SyncEnd", duration: 10 });
  t = 1300;
  tl.add({ kind: "SyncEnd", duration: 20 });
  tl.add({ kind: "AnchorChanged", from: 2, to: 3 });
  tl.add({ kind: "Throttle", rank: 1 });
  tl.add({ kind: "Idle", device: 0, duration: 50 });
  tl.add({ kind: "Idle", device: 1, duration: 10 });
  tl.add({ kind: "Divergence", d_raw: NaN, k_used: 4, k_max: 2, step: 9, deltas: [0.1, 0.2], epoch: 0 });
  tl.add({ kind: "GuardTelemetry", pairs: [["trend", 1.5], ["msf", 2]] });
  tl.add({ kind: "Custom", label: 'note, "quoted"' });
  t = 1500;
  tl.add({ kind: "EpochEnd", epoch: 0 });
  tl.sample({ gpu_util: 0.5 });
  return tl;
}

Deno.test("Timeline.summary: total, counts, means, idle percent per device", () => {
  assertEquals(sample().summary(), {
    total_ms: 500,
    samples: 1,
    events: 13,
    idle_pct: { 0: 10, 1: 2 }, // 50/500, 10/500
    sync_count: 2,
    sync_mean_ms: 15,
    cpu_avg_count: 1,
    cpu_avg_mean_ms: 4,
    anchor_changes: 1,
    throttles: 1,
  });
});

Deno.test("Timeline.toCSV: one row per event, list fields in data, RFC 4180 quoting", () => {
  const lines = sample().toCSV().trimEnd().split("\n");
  assertEquals(lines[0], "ts_ms,kind,rank,epoch,device,duration,from,to,d_raw,k_used,k_max,step,label,data");
  assertEquals(lines.length, 14);
  assertEquals(lines[1], "1000,EpochStart,,0,,,,,,,,,,");
  assertEquals(lines[3], "1110,CpuAvgEnd,,,,4,,,,,,,,");
  assertEquals(lines[6], "1300,AnchorChanged,,,,,2,3,,,,,,");
  assertEquals(lines[7], "1300,Throttle,1,,,,,,,,,,,");
  assertEquals(lines[8], "1300,Idle,,,0,50,,,,,,,,");
  assertEquals(lines[10], "1300,Divergence,,0,,,,,NaN,4,2,9,,0.1;0.2");
  assertEquals(lines[11], "1300,GuardTelemetry,,,,,,,,,,,,trend=1.5;msf=2");
  assertEquals(lines[12], '1300,Custom,,,,,,,,,,,"note, ""quoted""",');
  assert(lines.every((l, i) => i === 0 || l.split(",").length >= TIMELINE_CSV_COLUMNS.length), "column count");
});

Deno.test("Timeline.toJSON: events, samples and summary; NaN kept as the string NaN", () => {
  const tl = sample();
  const j = tl.toJSON();
  assertEquals(j.events.length, 13);
  assertEquals(j.summary.sync_count, 2);
  assertEquals(j.samples, [{ gpu_util: 0.5, ts_ms: 1500 }]);
  const div = JSON.parse(JSON.stringify(tl)).events.find((e: { kind: string }) => e.kind === "Divergence");
  assertEquals(div, {
    kind: "Divergence",
    d_raw: "NaN",
    k_used: 4,
    k_max: 2,
    step: 9,
    deltas: [0.1, 0.2],
    epoch: 0,
    ts_ms: 1300,
  });
});
