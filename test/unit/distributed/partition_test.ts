import { extendPartitions, planPartitions } from "../../../src/distributed/coordinator/schedule/partition.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

const sizes = (rs: { size: number }[]) => rs.map((r) => r.size);
const offsets = (rs: { offset: number }[]) => rs.map((r) => r.offset);

Deno.test("planPartitions Sync: equal sizes, remainder +1 to the first ranks, contiguous from start", () => {
  const p = planPartitions({ policy: "sync", worldSize: 3, total: 11, start: 100 });
  assertEquals(sizes(p), [4, 4, 3]);
  assertEquals(offsets(p), [100, 104, 108]);
  assertEquals(sizes(planPartitions({ policy: "sync", worldSize: 4, total: 3 })), [1, 1, 1, 0]);
});

Deno.test("planPartitions with partitionRatios: floor(ratio·total), remainder +1 to the largest ratios", () => {
  // 0.55·101 = 55.55, 0.225·101 = 22.725 (×2): floors 55 + 22 + 22 = 99 → +1 to rank 0, then rank 1.
  const p = planPartitions({ policy: "sync", worldSize: 3, total: 101, partitionRatios: [0.55, 0.225, 0.225] });
  assertEquals(sizes(p), [56, 23, 22]);
  // Ratios are normalized: [2, 1, 1] behaves as [0.5, 0.25, 0.25] → [5, 2, 2], remainder to the largest ratio.
  assertEquals(sizes(planPartitions({ policy: "sync", worldSize: 3, total: 10, partitionRatios: [2, 1, 1] })), [
    6,
    2,
    2,
  ]);
  assertThrows(
    () => planPartitions({ policy: "sync", worldSize: 2, total: 10, partitionRatios: [1] }),
    RangeError,
    "needs 2 entries",
    "got 1",
  );
});

Deno.test("planPartitions Cadence/Async with timing: proportional to 1 / m (an untimed rank as the slowest), remainder to the fastest", () => {
  // weights 1/10, 1/5, 1/20 → shares 2/7, 4/7, 1/7 of 100 = 28.57, 57.14, 14.29 → 28, 57, 14 (+1 to rank 1).
  const p = planPartitions({ policy: "cadence", worldSize: 3, total: 100, msPerBatch: [10, 5, 20] });
  assertEquals(sizes(p), [28, 58, 14]);
  // An untimed rank (m = 0: admitted at this boundary) is sized as the slowest timed one,
  // never as 1/0.001 (it took nearly the whole epoch): weights 1/2, 1, 1/2 → 2.5, 5, 2.5.
  const q = planPartitions({ policy: "async", worldSize: 3, total: 10, msPerBatch: [0, 1, 2] });
  assertEquals(sizes(q), [2, 6, 2]);
  assertEquals(sizes(planPartitions({ policy: "async", worldSize: 2, total: 9 })), [5, 4]); // no timing: equal
  // partitionRatios are ignored outside Sync.
  assertEquals(sizes(planPartitions({ policy: "cadence", worldSize: 2, total: 10, partitionRatios: [0.9, 0.1] })), [
    5,
    5,
  ]);
});

Deno.test("planPartitions gives dead ranks nothing", () => {
  assertEquals(sizes(planPartitions({ policy: "sync", worldSize: 3, total: 10, alive: [true, false, true] })), [
    5,
    0,
    5,
  ]);
  assertThrows(
    () => planPartitions({ policy: "sync", worldSize: 1, total: 10, alive: [false] }),
    RangeError,
    "no rank",
  );
});

Deno.test("extendPartitions splits a dead rank's range among survivors", () => {
  assertEquals(extendPartitions({ offset: 40, size: 11 }, [0, 2, 3]), [
    { offset: 40, size: 4 },
    { offset: 44, size: 4 },
    { offset: 48, size: 3 },
  ]);
  assertThrows(() => extendPartitions({ offset: 0, size: 1 }, []), RangeError, "survivor");
});
