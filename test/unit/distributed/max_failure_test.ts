import { MaxFailureThreshold, stallCeilingMs, unrecoverableReason } from "../../../src/distributed/coordinator/control/max_failure.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

Deno.test("MaxFailureThreshold.limit: absolute n, or ceil(p·W)", () => {
  assertEquals(MaxFailureThreshold.absolute(2).limit(8), 2);
  assertEquals(MaxFailureThreshold.percent(0.5).limit(4), 2);
  assertEquals(MaxFailureThreshold.percent(0.3).limit(10), 3); // 0.3·10 = 3.0000000000000004 in f64
  assertEquals(MaxFailureThreshold.percent(0.25).limit(3), 1); // ceil(0.75)
  assertEquals(MaxFailureThreshold.percent(1).limit(4), 4);
  assertEquals([1, 2].map((d) => MaxFailureThreshold.absolute(2).exceeded(d, 4)), [false, true]);
  assertEquals(JSON.stringify(MaxFailureThreshold.percent(0.5)), '{"percent":0.5}');
});

Deno.test("MaxFailureThreshold rejects values flodl would clamp", () => {
  assertThrows(() => MaxFailureThreshold.absolute(0), RangeError, "n must be an integer >= 1, got 0");
  assertThrows(() => MaxFailureThreshold.percent(1.5), RangeError, "p must be in (0, 1], got 1.5");
  assertThrows(() => MaxFailureThreshold.percent(0), RangeError, "got 0");
});

Deno.test("unrecoverableReason: all lost, then the user threshold, then the backend floor", () => {
  assertEquals(unrecoverableReason(4, 4, "cpu"), "all_ranks_lost");
  assertEquals(unrecoverableReason(3, 4, "cpu"), null); // CPU tolerates down to one survivor
  assertEquals(unrecoverableReason(3, 4, "nccl"), "single_survivor");
  assertEquals(unrecoverableReason(2, 4, "cpu", MaxFailureThreshold.absolute(2)), "max_failure_exceeded");
  assertEquals(unrecoverableReason(1, 4, "cpu", MaxFailureThreshold.percent(0.5)), null);
});

Deno.test("stallCeilingMs = max(10 × heartbeat, 300 s)", () => {
  assertEquals([stallCeilingMs(30), stallCeilingMs(60)], [300_000, 600_000]);
});
