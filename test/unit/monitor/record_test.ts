import { encodeRecord, type LeafRecord, parseRecord, stringifyFinite } from "../../../src/monitor/mod.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";

const leaf: LeafRecord = {
  v: 1,
  ts: 1700000000000,
  sev: "info",
  path: "root/h/rank0",
  kind: "node",
  epoch: 2,
  label: "NaN",
  metrics: { loss: NaN, up: Infinity, down: -Infinity, ok: 0.5 },
  work: NaN,
  res: { gpu_util: NaN, vram_total: 1024 },
  device: 0,
  alive: true,
};

Deno.test("encodeRecord/parseRecord: NaN and ±Infinity survive the JSON round trip", () => {
  const line = encodeRecord(leaf);
  assert(!line.includes("null"), `non-finite numbers must not become null: ${line}`);
  assert(
    line.includes('"loss":"NaN"') && line.includes('"up":"Infinity"') && line.includes('"down":"-Infinity"'),
    line,
  );
  const back = parseRecord(line) as LeafRecord;
  assert(Number.isNaN(back.metrics.loss), "loss NaN");
  assertEquals(back.metrics.up, Infinity, "up");
  assertEquals(back.metrics.down, -Infinity, "down");
  assertEquals(back.metrics.ok, 0.5, "ok");
  assert(Number.isNaN(back.work), "work NaN");
  assert(Number.isNaN(back.res!.gpu_util!), "gpu_util NaN");
  assertEquals(back.label, "NaN", "a label stays a string");
  assertEquals(stringifyFinite({ a: [NaN, 1] }), '{"a":["NaN",1]}');
});

Deno.test("parseRecord: refuses what is not a v1 record, naming the field", () => {
  assertThrows(() => parseRecord('{"v":2,"kind":"node","path":"root"}'), TypeError, "v 1", "2");
  assertThrows(() => parseRecord('{"v":1,"kind":"blob","path":"root"}'), TypeError, "kind", "blob");
  assertThrows(() => parseRecord("[1]"), TypeError, "object");
  assertThrows(
    () => parseRecord('{"v":1,"kind":"node","path":"root","metrics":{"loss":"x"},"work":1}'),
    TypeError,
    "metrics.loss",
    '"x"',
  );
  const meta = parseRecord('{"v":1,"ts":0,"sev":"info","path":"root","kind":"meta","reductions":{"loss":"mean"}}');
  assertEquals(meta.kind, "meta");
});
