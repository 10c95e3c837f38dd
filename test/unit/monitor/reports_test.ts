import { ReportSchedule, reportTick } from "../../../src/monitor/mod.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

Deno.test("ReportSchedule fires when cumulative steps cross multiples of stepsPerEpoch/x", () => {
  // thresholds 10/3 = 3.33, 6.67, 10
  const s = new ReportSchedule(10, 3);
  assertEquals([2, 2, 2, 2, 2].map((n) => s.onReduce(0, n)), [undefined, 1, undefined, 2, 3]);
  assertEquals(s.onReduce(0, 5), undefined, "at most x per epoch");
});

Deno.test("ReportSchedule: a window crossing several thresholds fires once; a new epoch restarts", () => {
  const s = new ReportSchedule(100, 4);
  assertEquals(s.onReduce(0, 60), 2); // crosses 25 and 50
  assertEquals(s.onReduce(0, 10), undefined); // 70 < 75
  assertEquals(s.onReduce(0, 40), 4); // 110 crosses 75 and 100, capped at x
  assertEquals(s.onReduce(1, 24), undefined); // reset: 24 < 25
  assertEquals(s.steps, 24);
  assertEquals(s.onReduce(1, 1), 1); // exactly on the threshold fires
});

Deno.test("reportTick matches the schedule and validates its knobs", () => {
  assertEquals(reportTick(100, 4, 10, 60), 2);
  assertEquals(reportTick(100, 4, 60, 70), undefined);
  assertEquals(reportTick(7, 7, 0, 1), 1);
  assertThrows(() => reportTick(0, 2, 0, 1), RangeError, "stepsPerEpoch", "0");
  assertThrows(() => new ReportSchedule(10, 0), RangeError, "reportsPerEpoch", "0");
  assertThrows(() => new ReportSchedule(10, 1.5), RangeError, "reportsPerEpoch", "1.5");
});
