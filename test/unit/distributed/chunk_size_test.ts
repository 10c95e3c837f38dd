import {
  chunkSize,
  type ChunkSizeInput,
  finalWindowSplit,
  isFinalWindow,
} from "../../../src/distributed/coordinator/schedule/chunk_size.ts";
import { assertEquals } from "../../util/assert.ts";

const T = true, F = false;

Deno.test("isFinalWindow: remainder below Σ_alive c + alive ranks", () => {
  assertEquals(isFinalWindow(31, [10, 20], [T, T]), true);
  assertEquals(isFinalWindow(32, [10, 20], [T, T]), false);
  assertEquals(isFinalWindow(11, [10, 20], [T, F]), false); // dead rank's count and slot excluded
  assertEquals(isFinalWindow(10, [10, 20], [T, F]), true);
});

Deno.test("finalWindowSplit with rem >= Σc: full counts plus one extra each to the slowest non-fastest ranks", () => {
  assertEquals(finalWindowSplit(31, [10, 20], [T, T]), [11, 20]);
  assertEquals(finalWindowSplit(42, [10, 20, 10], [T, T, T]), [11, 20, 11]);
  assertEquals(finalWindowSplit(41, [12, 20, 8], [T, T, T]), [12, 20, 9]); // slowest = smallest c
  assertEquals(finalWindowSplit(32, [10, 10, 10], [T, T, T]), [10, 11, 11]); // fastest = rank 0 on ties
  assertEquals(finalWindowSplit(12, [10], [T]), [12]); // lone rank takes everything
  assertEquals(finalWindowSplit(7, [3, 9, 4], [T, F, T]), [3, 0, 4]);
});

Deno.test("finalWindowSplit with rem < Σc: largest-remainder split, then single batches move to the smallest peer", () => {
  // quotas 7·[2, 4, 8] / 14 = [1, 2, 4]; rank 0's lone batch moves to rank 1 (smallest with >= 1).
  assertEquals(finalWindowSplit(7, [2, 4, 8], [T, T, T]), [0, 3, 4]);
  // quotas 5·[3, 3, 4] / 10 = [1.5, 1.5, 2] → [1, 1, 2] + 1 to rank 0 (tie on .5, lower rank) → [2, 1, 2];
  // rank 1's lone batch moves to rank 0 (tie with rank 2 on 2, lower rank).
  assertEquals(finalWindowSplit(5, [3, 3, 4], [T, T, T]), [3, 0, 2]);
  // quotas 9·[1, 10] / 11 = [0.818, 8.18] → [0, 8] + 1 to rank 0 → [1, 8] → [0, 9].
  assertEquals(finalWindowSplit(9, [1, 10], [T, T]), [0, 9]);
  assertEquals(finalWindowSplit(1, [5, 5], [T, T]), [1, 0]); // no peer has a batch: stays
  assertEquals(finalWindowSplit(0, [5, 5], [T, T]), [0, 0]);
});

const base: ChunkSizeInput = {
  policy: "cadence",
  rank: 0,
  rem: 100,
  counts: [10, 20],
  alive: [T, T],
  calibrated: true,
  pickSpace: 6400,
  batchSize: 16,
  stepsSinceAvg: 0,
  maxOvershoot: 3,
};

Deno.test("chunkSize barrier-paced: the rest of the window, min(c[r] − n_r, rem)", () => {
  assertEquals(chunkSize({ ...base, rank: 1 }), 20);
  assertEquals(chunkSize({ ...base, rank: 1, stepsSinceAvg: 5 }), 15);
  assertEquals(chunkSize({ ...base, rank: 1, rem: 7 }), 7);
  assertEquals(chunkSize({ ...base, rank: 1, stepsSinceAvg: 20 }), 0);
  assertEquals(chunkSize({ ...base, policy: "sync", counts: [1, 1] }), 1);
  assertEquals(chunkSize({ ...base, rem: 0 }), 0);
});

Deno.test("chunkSize Async calibrated: max(4, ceil(rem·c/Σc)) capped to rem and max(1, c + overshoot − n)", () => {
  const a = { ...base, policy: "async" as const };
  assertEquals(chunkSize(a), 13); // ceil(100·10/30) = 34 → cap 10 + 3 − 0 = 13
  assertEquals(chunkSize({ ...a, rank: 1, stepsSinceAvg: 10 }), 13); // 67 → cap 20 + 3 − 10
  assertEquals(chunkSize({ ...a, rank: 1, stepsSinceAvg: 23 }), 0); // at its budget: held
  assertEquals(chunkSize({ ...a, counts: [1, 1], maxOvershoot: 10 }), 11); // ceil(50) → cap 11
  assertEquals(chunkSize({ ...a, counts: [1, 30], rem: 40 }), 4); // ceil(40/31) = 2 → floor 4, cap 4
  assertEquals(chunkSize({ ...a, counts: [1, 30], rem: 40, maxOvershoot: 0 }), 1); // cap max(1, 1)
  assertEquals(chunkSize({ ...a, counts: [10, 20], rem: 30, maxOvershoot: 100 }), 10); // ceil(30·10/30) = 10
});

Deno.test("chunkSize Async edge schedule when rem < Σc: min(c[r], rem) within the budget", () => {
  const a = { ...base, policy: "async" as const, rem: 25 };
  assertEquals(chunkSize({ ...a, rank: 1 }), 20);
  assertEquals(chunkSize({ ...a, rank: 0, stepsSinceAvg: 8 }), 5);
  assertEquals(chunkSize({ ...a, rank: 1, rem: 6 }), 6);
});

Deno.test("chunkSize Async uncalibrated without hint: probe max(4, floor(P / (W·10·B)))", () => {
  const a = { ...base, policy: "async" as const, calibrated: false };
  assertEquals(chunkSize(a), 20); // 6400 / (2·10·16) = 20, not capped by the budget
  assertEquals(chunkSize({ ...a, pickSpace: 100 }), 4);
  assertEquals(chunkSize({ ...a, alive: [T, F], rem: 30 }), 30); // 6400 / 160 = 40 → rem 30
  assertEquals(chunkSize({ ...a, hinted: true }), 13); // a hint sizes like rule 5
});
