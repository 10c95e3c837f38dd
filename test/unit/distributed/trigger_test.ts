import { shouldAverage, throttleRanks } from "../../../src/distributed/coordinator/control/trigger.ts";
import { assertEquals } from "../../util/assert.ts";

const T = true, F = false;

Deno.test("shouldAverage Cadence/Async: every alive rank reached c[r] (or is quiesced)", () => {
  const t = { policy: "cadence" as const, alive: [T, T], counts: [10, 20] };
  assertEquals(shouldAverage({ ...t, steps: [10, 19] }), false);
  assertEquals(shouldAverage({ ...t, steps: [10, 20] }), true);
  assertEquals(shouldAverage({ ...t, steps: [12, 25], pending: true }), false);
  assertEquals(shouldAverage({ ...t, steps: [3, 20], quiesced: [T, F] }), true); // end-of-epoch rank must not block
  assertEquals(shouldAverage({ ...t, policy: "async", steps: [10, 3], alive: [T, F] }), true); // dead rank skipped
});

Deno.test("shouldAverage Sync fires once every alive rank did one step; needs a mover", () => {
  const t = { policy: "sync" as const, alive: [T, T, T], counts: [5, 5, 5] };
  assertEquals(shouldAverage({ ...t, steps: [1, 4, 0] }), false);
  assertEquals(shouldAverage({ ...t, steps: [1, 4, 2] }), true);
  assertEquals(shouldAverage({ ...t, steps: [0, 0, 0], quiesced: [T, T, T] }), false); // nobody moved
  assertEquals(shouldAverage({ ...t, steps: [1, 1, 1], alive: [F, F, F] }), false); // nobody alive
});

Deno.test("throttleRanks: alive ranks more than d ahead of the slowest, once per window", () => {
  assertEquals(throttleRanks([3, 9, 6, 20], [T, T, T, F], 3), [1]);
  assertEquals(throttleRanks([3, 9, 7], [T, T, T], 3, new Set([1])), [2]);
  assertEquals(throttleRanks([3, 3], [T, T], 0), []);
  assertEquals(throttleRanks([3, 4], [T, T], 0), [1]); // d = 0: strict lockstep
  assertEquals(throttleRanks([3, 400], [T, T], undefined), []);
});
