import { ElChe, OVERSHOOT_CEILING, OVERSHOOT_INITIAL } from "../../../src/distributed/coordinator/control/elche.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";

const stable = { kind: "stable" } as const;
const suppress = { kind: "suppressGrowth" } as const;

/** Report `k` windows where rank r runs at msPerBatch[r] and did c[r] batches. */
function feed(e: ElChe, msPerBatch: number[], syncMs = 0, k = 1): void {
  for (let i = 0; i < k; i++) {
    const c = e.batchCounts;
    e.reportTiming(c.map((n, r) => n * msPerBatch[r]), c, syncMs);
  }
}

Deno.test("ElChe first report elects the slow rank and sizes fast ranks by the speed ratio", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10 });
  assertEquals(e.phase, "probe");
  e.reportTiming([100, 50], [10, 10], 1000); // m = [10, 5]
  assertEquals(e.anchorRank, 0);
  // c0 = A; c1 = round(A · min(10 / 5, 64)) = 20. No growth on the first report (probe).
  assertEquals(e.batchCounts, [10, 20]);
  assertEquals(e.pendingGrowth, null);
  assertEquals(e.phase, "warmup");
  assertEquals(e.calibrationCount, 1);
});

Deno.test("ElChe caps the count ratio at 64", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 2 });
  e.reportTiming([2000, 1], [2, 1], 0); // m = [1000, 1]: ratio 1000 → capped at 64
  assertEquals(e.batchCounts, [2, 128]);
});

Deno.test("ElChe window-pressure growth is proposed at report time and committed by Stable", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10 });
  feed(e, [10, 5]);
  // Warmup: overhead = 50 / (10·10 + 50) = 1/3 > 2τ = 0.1; scale = min((1/3)/0.05, 2) = 2 → ceil(20) = 20.
  feed(e, [10, 5], 50);
  assertEquals(e.pendingGrowth, 20);
  assertEquals(e.anchor, 10);
  e.applyVerdict(stable);
  assertEquals(e.anchor, 20);
  assertEquals(e.batchCounts, [20, 40]);
  assertEquals(e.pendingGrowth, null);
});

Deno.test("ElChe growth fires at 2τ before Stable and at τ from Stable on", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10 });
  feed(e, [10, 10]);
  // overhead = 8 / (10·10 + 8) = 0.0741: above τ = 0.05, below 2τ = 0.1.
  feed(e, [10, 10], 8, 3);
  assertEquals(e.phase, "warmup");
  assertEquals(e.pendingGrowth, null);
  feed(e, [10, 10], 8); // 5th calibration: Stable
  assertEquals(e.phase, "stable");
  feed(e, [10, 10], 8);
  // scale = 0.0741 / 0.05 = 1.481 → ceil(14.81) = 15.
  assertEquals(e.pendingGrowth, 15);
});

Deno.test("ElChe growth respects maxAnchor and the fill term", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10, maxAnchor: 12 });
  feed(e, [10, 10]);
  e.stageFill([40, 0]); // fixed = 10 + 40 = 50 → overhead 1/3 → 2A = 20 → clamped to 12
  feed(e, [10, 10], 10);
  assertEquals(e.pendingGrowth, 12);
});

Deno.test("ElChe Sync never proposes growth", () => {
  const e = new ElChe({ worldSize: 2, policy: "sync", anchor: 1 });
  feed(e, [10, 10], 0, 2);
  feed(e, [10, 10], 1000);
  assertEquals(e.pendingGrowth, null);
});

Deno.test("ElChe SuppressGrowth latches growth off until 5 Stable verdicts in a row", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10 });
  feed(e, [10, 10]);
  feed(e, [10, 10], 50);
  assertEquals(e.pendingGrowth, 20);
  e.applyVerdict(suppress);
  assertEquals(e.anchor, 10);
  assertEquals(e.growthEnabled, false);
  for (let i = 0; i < 4; i++) {
    feed(e, [10, 10], 50);
    assertEquals(e.pendingGrowth, null);
    e.applyVerdict(stable);
  }
  assertEquals(e.growthEnabled, false);
  e.applyVerdict(stable); // 5th Stable in a row re-arms
  assertEquals(e.growthEnabled, true);
  feed(e, [10, 10], 50);
  assertEquals(e.pendingGrowth, 20);
});

Deno.test("ElChe NudgeDown shrinks A by ceil(A·f), ignores minAnchor and drops pending growth", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 20, minAnchor: 10 });
  feed(e, [10, 5]);
  feed(e, [10, 5], 100);
  assert(e.pendingGrowth !== null, "a proposal is staged");
  e.applyVerdict({ kind: "nudgeDown", factor: 0.3 });
  assertEquals(e.anchor, 6); // ceil(20·0.3) = 6, below minAnchor 10
  assertEquals(e.pendingGrowth, null);
  assertEquals(e.batchCounts, [6, 12]);
  e.nudge(0.01); // f clamped to 0.1 → ceil(0.6) = 1
  assertEquals(e.anchor, 1);
  e.nudge(NaN);
  e.nudge(3); // f clamped to 1: A unchanged
  assertEquals(e.anchor, 1);
});

Deno.test("ElChe dead zone ignores count changes within 5% once calibrated", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 20 });
  e.reportTiming([200, 100], [20, 20], 0); // m = [10, 5] → c = [20, 40]
  assertEquals(e.batchCounts, [20, 40]);
  // Rank 1 slows: window [5, 5.25] → m1 = 5.125 → target round(20·10/5.125) = 39: |39 − 40| = 1 <= 2 → unchanged.
  e.reportTiming([200, 210], [20, 40], 0);
  assertEquals(e.batchCounts, [20, 40]);
  // Window [5, 5.25, 6] → m1 = 5.4167 → target round(36.92) = 37: |37 − 40| = 3 > 2 → moves.
  e.reportTiming([200, 240], [20, 40], 0);
  assertEquals(e.batchCounts, [20, 37]);
});

Deno.test("ElChe maxBatchDiff steps a calibrated count by at most d", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10, maxBatchDiff: 3 });
  e.reportTiming([100, 100], [10, 10], 0); // uncalibrated: jumps straight to target
  assertEquals(e.batchCounts, [10, 10]);
  e.reportTiming([100, 20], [10, 10], 0); // m1 = mean(10, 2) = 6 → target round(10·10/6) = 17: +3 only
  assertEquals(e.batchCounts, [10, 13]);
  e.reportTiming([100, 26], [10, 13], 0); // m1 = mean(10, 2, 2) = 4.667 → target 21: +3
  assertEquals(e.batchCounts, [10, 16]);
});

Deno.test("ElChe callback slack shrinks the staged rank's quota by ceil(slack / m)", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10 });
  feed(e, [10, 5]);
  e.stageCallbackSlack(1, 22); // ceil(22 / 5) = 5 batches
  feed(e, [10, 5]);
  assertEquals(e.batchCounts, [10, 15]);
  feed(e, [10, 5]); // slack consumed: back to 20
  assertEquals(e.batchCounts, [10, 20]);
});

Deno.test("ElChe window cap scales counts down and gives the remainder to the largest", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10, maxTotalBatches: 10 });
  e.reportTiming([100, 50], [10, 10], 0); // uncapped [10, 20], Σ 30 > 10
  // floor(10·10/30) = 3, floor(20·10/30) = 6, remainder 1 → largest
  assertEquals(e.batchCounts, [3, 7]);
  assertEquals(e.windowCapBinding, true);
  feed(e, [10, 5], 1000);
  assertEquals(e.pendingGrowth, null); // no growth while the cap binds
});

Deno.test("ElChe anchor election is frozen before Stable and sticky with a 10% margin after", () => {
  const e = new ElChe({ worldSize: 3, policy: "cadence", anchor: 10 });
  feed(e, [10, 9, 5]); // cohort: m >= 8.5 → {0, 1}; no current anchor → lowest
  assertEquals(e.anchorRank, 0);
  feed(e, [8, 12, 5], 0, 3); // rank 1 is now slower, but election is frozen in Warmup
  assertEquals(e.anchorRank, 0);
  const f = new ElChe({ worldSize: 3, policy: "cadence", anchor: 10 });
  feed(f, [10, 10.5, 5], 0, 6); // Stable: 10.5 is within 10% of 10 → sticky
  assertEquals(f.phase, "stable");
  assertEquals(f.anchorRank, 0);
  feed(f, [10, 13, 5], 0, 5); // m1 = 13 > 11 → takes over
  assertEquals(f.anchorRank, 1);
});

Deno.test("ElChe phases advance at 1, 5 and 20 calibrations", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 4 });
  const seen: string[] = [];
  for (let i = 0; i < 20; i++) {
    feed(e, [10, 10]);
    seen.push(e.phase);
  }
  assertEquals(seen.indexOf("warmup"), 0);
  assertEquals(seen.indexOf("stable"), 4);
  assertEquals(seen.indexOf("mature"), 19);
});

Deno.test("ElChe escapes a pinned anchor rank that never reports after 5 invalid reports", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10 }).pinAnchorRank(1);
  for (let i = 0; i < 4; i++) e.reportTiming([100, 0], [10, 0], 0);
  assertEquals(e.calibrationCount, 0);
  assertEquals(e.anchorRank, 1);
  e.reportTiming([100, 0], [10, 0], 0);
  assertEquals(e.anchorRank, 0);
  assertEquals(e.calibrationCount, 1);
});

Deno.test("ElChe clears a rank's trust window after 5 invalid reports", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10 });
  feed(e, [10, 5]);
  for (let i = 0; i < 4; i++) e.reportTiming([100, NaN], [10, 20], 0);
  assertEquals(e.smoothedMsPerBatch, [10, 5]);
  e.reportTiming([100, -1], [10, 20], 0);
  assertEquals(e.smoothedMsPerBatch, [10, 0]);
});

Deno.test("ElChe speed hint seeds counts and pins the anchor; partition ratios pin the smallest share", () => {
  const e = new ElChe({ worldSize: 3, policy: "async", anchor: 10 }).withSpeedRatio(1, 2.5);
  assertEquals(e.batchCounts, [25, 10, 25]);
  assertEquals(e.anchorRank, 1);
  assertThrows(() => e.withSpeedRatio(0, 0.5), RangeError, "ratio", "0.5");
  const p = new ElChe({ worldSize: 3, policy: "sync", anchor: 1, partitionRatios: [0.4, 0.35, 0.25] });
  assertEquals(p.anchorRank, 2);
});

Deno.test("ElChe relaxAnchorUp grows A by one unless the projected lead exceeds maxBatchDiff", () => {
  const e = new ElChe({ worldSize: 2, policy: "async", anchor: 10, maxBatchDiff: 5, relaxUp: true });
  feed(e, [10, 5]);
  // proj = round(11 · 10 / 5) = 22; 22 − 11 = 11 > 5 → refused
  assertEquals(e.relaxAnchorUp(), false);
  const f = new ElChe({ worldSize: 2, policy: "async", anchor: 10, maxBatchDiff: 12, relaxUp: true });
  feed(f, [10, 5]);
  f.applyVerdict(stable); // Stable + relaxUp under Async → A + 1
  assertEquals(f.anchor, 11);
  const g = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10, relaxUp: true });
  g.applyVerdict(stable); // not Async: no relax-up
  assertEquals(g.anchor, 10);
});

Deno.test("ElChe auto overshoot: 3, +1 per Stable up to 15, hold on Suppress, reset on Nudge", () => {
  const e = new ElChe({ worldSize: 2, policy: "async", anchor: 10 });
  assertEquals(e.maxOvershoot, OVERSHOOT_INITIAL);
  e.applyVerdict(stable);
  e.applyVerdict(stable);
  assertEquals(e.maxOvershoot, 5);
  e.applyVerdict(suppress);
  assertEquals(e.maxOvershoot, 5);
  for (let i = 0; i < 20; i++) e.applyVerdict(stable);
  assertEquals(e.maxOvershoot, OVERSHOOT_CEILING);
  assertEquals(e.budget(0), 10 + 15);
  e.applyVerdict({ kind: "nudgeDown", factor: 0.5 });
  assertEquals(e.maxOvershoot, 3);
  const fixed = new ElChe({ worldSize: 2, policy: "async", anchor: 10, maxOvershoot: 7 });
  fixed.applyVerdict(stable);
  assertEquals(fixed.maxOvershoot, 7);
  const cadence = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10 });
  assertEquals(cadence.budget(1), 10);
});

Deno.test("ElChe recentBatchShare sums the last counts windows", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10 });
  assertEquals(e.recentBatchShare(), [0.5, 0.5]);
  feed(e, [10, 5]); // [10, 20]
  feed(e, [10, 2.5]); // m1 = mean(5, 2.5) = 3.75 → round(26.67) = 27
  assertEquals(e.batchCounts, [10, 27]);
  const s = e.recentBatchShare();
  assertEquals(s, [20 / 67, 47 / 67]);
});

Deno.test("ElChe markDead re-elects the anchor among survivors and zeroes the dead rank", () => {
  const e = new ElChe({ worldSize: 3, policy: "cadence", anchor: 10 });
  feed(e, [10, 8, 5]); // cohort {0} (8 < 8.5) → anchor 0; c = [10, 13, 20]
  assertEquals(e.batchCounts, [10, 13, 20]);
  e.markDead(0);
  assertEquals(e.anchorRank, 1);
  // slow = 8: rank 1 → A, rank 2 → round(10·8/5) = 16
  assertEquals(e.batchCounts, [0, 10, 16]);
  assertEquals(e.fastestRank(), 2);
  assertEquals(e.recentBatchShare().length, 3);
  feed(e, [0, 8, 5]);
  assertEquals(e.batchCounts, [0, 10, 16]);
});

Deno.test("ElChe exportState / importState round-trip and check the world size", () => {
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10 });
  feed(e, [10, 5], 0, 6);
  const s = e.exportState();
  assertEquals(s, {
    anchor: 10,
    anchor_rank: 0,
    smoothed_ms_per_batch: [10, 5],
    phase: "stable",
    calibration_count: 6,
  });
  const f = new ElChe({ worldSize: 2, policy: "cadence", anchor: 3, minAnchor: 1, maxAnchor: 8 });
  f.importState(s);
  assertEquals(f.anchor, 8); // the new config's maxAnchor bounds the saved anchor
  assertEquals(f.phase, "stable");
  assertEquals(f.batchCounts, [8, 16]);
  const g = new ElChe({ worldSize: 3, policy: "cadence", anchor: 10 });
  assertThrows(() => g.importState(s), RangeError, "saved world size is 2", "3");
});

Deno.test("ElChe rejects bad construction and bad report lengths", () => {
  assertThrows(() => new ElChe({ worldSize: 1, policy: "cadence", anchor: 10 }), RangeError, "worldSize", "got 1");
  assertThrows(() => new ElChe({ worldSize: 2, policy: "cadence", anchor: 5, minAnchor: 6 }), RangeError, "minAnchor");
  const e = new ElChe({ worldSize: 2, policy: "cadence", anchor: 10 });
  assertThrows(() => e.reportTiming([1], [1, 1], 0), RangeError, "expected 2 entries, got 1");
});

Deno.test("ElChe markJoined: a rank admitted at a boundary gets the anchor's count until its own windows report, then its speed ratio", () => {
  const e = new ElChe({ worldSize: 3, policy: "cadence", anchor: 10 });
  e.markDead(2); // a spare slot: out from the start
  feed(e, [10, 5, 0], 0, 3); // rank 0 twice as slow as rank 1
  assertEquals(e.batchCounts, [10, 20, 0]);
  e.markJoined(2);
  assert(e.isAlive(2), "alive");
  assertEquals(e.batchCounts, [10, 20, 10], "uncalibrated newcomer: c = A (the anchor rank's count)");
  assertEquals(e.anchorRank, 0, "the anchor rank stays");
  feed(e, [10, 5, 2.5], 0, 1); // its first window: 4x the anchor's speed
  assertEquals(e.batchCounts, [10, 20, 40]);
  assertThrows(() => e.markJoined(3), RangeError, "markJoined", "[0, 3)", "got 3");
});
