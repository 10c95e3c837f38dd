import { applyWindowCap, electAnchor, proposeGrowth, recomputeCounts } from "../../../src/distributed/coordinator/control/elche_math.ts";
import { assertEquals } from "../../util/assert.ts";

const T = true, F = false;

Deno.test("electAnchor: slow cohort within 15%, sticky current anchor with a 10% margin, else lowest rank", () => {
  assertEquals(electAnchor([0, 0], [T, T], null), null);
  assertEquals(electAnchor([10, 5, 8], [T, T, T], null), 0); // cohort {0}: 8 < 8.5
  assertEquals(electAnchor([9, 10, 5], [T, T, T], null), 0); // cohort {0, 1}: lowest
  assertEquals(electAnchor([10, 10.9, 5], [T, T, T], 0), 0); // 10.9 <= 11: stays
  assertEquals(electAnchor([10, 11.05, 5], [T, T, T], 0), 1); // > 11 and 10 >= 0.85·11.05 = 9.39
  assertEquals(electAnchor([10, 11, 5], [T, T, T], 2), 0); // current not in cohort
  assertEquals(electAnchor([10, 8, 5], [F, T, T], 0), 1); // dead ranks never anchor
});

Deno.test("recomputeCounts: base A·slow/m capped at 64, slack in batches, dead zone and d-stepping", () => {
  const base = { anchor: 10, slow: 10, alive: [T, T, T], slackMs: [0, 0, 0], calibrated: true };
  const r = recomputeCounts({ ...base, m: [10, 4, 0.1], counts: [10, 10, 10], calibrated: false });
  assertEquals(r.counts, [10, 25, 640]); // round(10·2.5) = 25; ratio 100 capped at 64
  const s = recomputeCounts({ ...base, m: [10, 4, 5], counts: [10, 24, 20], slackMs: [0, 0, 12] });
  // rank 1: target 25, |25 − 24| = 1 <= 1.2 → unchanged; rank 2: 20 − ceil(12/5) = 17, slack forces the move.
  assertEquals(s.counts, [10, 24, 17]);
  const d = recomputeCounts({ ...base, m: [10, 2, 20], counts: [10, 10, 10], maxBatchDiff: 4 });
  assertEquals(d.counts, [10, 14, 6]); // targets 50 and 5, each moved by at most 4
  const dead = recomputeCounts({ ...base, m: [10, 2, 5], counts: [10, 0, 10], alive: [T, F, T] });
  assertEquals(dead.counts, [10, 0, 20]);
  const hinted = recomputeCounts({ ...base, slow: 0, m: [0, 0, 0], counts: [1, 1, 1], hint: { slow: 1, ratio: 1.5 } });
  assertEquals(hinted.counts, [15, 10, 15]);
});

Deno.test("applyWindowCap scales to the cap with floor 1 and gives the remainder to the largest count", () => {
  const c = [10, 20, 30];
  assertEquals(applyWindowCap(c, [T, T, T], 60), false);
  assertEquals(applyWindowCap(c, [T, T, T], 20), true);
  assertEquals(c, [3, 6, 11]); // floor 3.33, 6.67, 10 → 19, +1 to the largest
  const tiny = [5, 5, 5];
  assertEquals(applyWindowCap(tiny, [T, T, T], 2), true);
  assertEquals(tiny, [1, 1, 1]); // floor of 1 wins when W > cap
});

Deno.test("proposeGrowth: overhead = fixed / (A·m + fixed), fires above τ (2τ before Stable), at most ×2", () => {
  const g = {
    anchor: 10,
    minAnchor: 10,
    maxAnchor: 1000,
    overheadTarget: 0.05,
    marginalMs: 10,
    fillMs: 0,
    stable: true,
  };
  assertEquals(proposeGrowth({ ...g, syncMs: 5 }), null); // 5 / 105 = 0.0476 <= 0.05
  assertEquals(proposeGrowth({ ...g, syncMs: 6 }), 12); // 6 / 106 = 0.0566 → ×1.132 → ceil(11.32)
  assertEquals(proposeGrowth({ ...g, syncMs: 6, stable: false }), null);
  assertEquals(proposeGrowth({ ...g, syncMs: 3, fillMs: 8 }), 20); // 11 / 111 = 0.0991 → ×1.982 → ceil(19.82)
  assertEquals(proposeGrowth({ ...g, syncMs: 500, maxAnchor: 15 }), 15); // ×2 → 20, clamped
  assertEquals(proposeGrowth({ ...g, syncMs: 0 }), null);
});
