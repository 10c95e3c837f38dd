import { LrEventMeta } from "../../../src/distributed/coordinator/control/meta.ts";
import type { Verdict } from "../../../src/distributed/coordinator/control/guards.ts";
import { assertEquals, assertRelClose } from "../../util/assert.ts";

const S: Verdict = { kind: "stable" };
const X: Verdict = { kind: "suppressGrowth" };
const N: Verdict = { kind: "nudgeDown", factor: 0.5 };

Deno.test("LrEventMeta fires eff(0.5) on an LR cliff of more than 30%, silent on gentle decay", () => {
  const m = new LrEventMeta();
  assertEquals(m.observe(0.1, 10, S, "stable"), null);
  assertEquals(m.observe(0.08, 10, S, "stable"), null); // 20% drop
  assertEquals(m.observe(0.05, 10, S, "stable"), 0.5); // 37.5% drop, flat anchor → trend 0
  assertEquals(m.observe(0.05, 10, S, "stable"), null);
  assertEquals(m.observe(0.5, 10, S, "stable"), null); // rises are silent
});

Deno.test("LrEventMeta eff(base) = clamp(base − (1 − base)·trend, 0.1, 0.95) with the anchor trend", () => {
  const m = new LrEventMeta();
  m.observe(1, 10, S, "stable");
  // anchors [10, 20]: mean 15, trend (20 − 15) / 15 = 1/3 → eff(0.5) = 0.5 − 0.5/3
  assertRelClose([m.observe(0.5, 20, S, "stable")!], [0.5 - 0.5 / 3], 1e-12, "factor");
  assertRelClose([m.trend()], [1 / 3], 1e-12, "trend");
  const low = new LrEventMeta();
  for (const a of [100, 100, 100, 100]) low.observe(1, a, S, "mature");
  // anchors [100, 100, 100, 100, 1]: trend (1 − 80.2) / 80.2 → eff(0.5) = 0.5 + 0.5·0.9875 > 0.95 → 0.95
  assertEquals(low.observe(0.1, 1, S, "mature"), 0.95);
  const high = new LrEventMeta();
  high.observe(1, 1, S, "stable");
  // anchors [1, 100]: trend (100 − 50.5) / 50.5 = 0.98 → eff(0.5) = 0.01 → 0.1
  assertEquals(high.observe(0.1, 100, S, "stable"), 0.1);
});

Deno.test("LrEventMeta convergence watcher: K = 5 / 3 / 2 non-Stable verdicts, base 0.3 / 0.5 / 0.7", () => {
  const w = new LrEventMeta();
  const warm = [X, N, X, X].map((v) => w.observe(undefined, 10, v, "warmup"));
  assertEquals(warm, [null, null, null, null]);
  assertEquals(w.observe(undefined, 10, X, "warmup"), 0.3);
  const s = new LrEventMeta();
  assertEquals([X, S, X, X].map((v) => s.observe(undefined, 10, v, "stable")), [null, null, null, null]);
  assertEquals(s.observe(undefined, 10, N, "stable"), 0.5);
  assertEquals(s.observe(undefined, 10, X, "stable"), 0.5); // the streak keeps firing while it lasts
  const m = new LrEventMeta();
  assertEquals([X, X].map((v) => m.observe(undefined, 10, v, "mature")), [null, 0.7]);
});

Deno.test("LrEventMeta multiplies both factors when both watchers fire", () => {
  const m = new LrEventMeta();
  m.observe(0.1, 10, X, "mature");
  assertEquals(m.observe(0.01, 10, X, "mature"), 0.5 * 0.7);
});

Deno.test("LrEventMeta is silent and records nothing during Probe", () => {
  const m = new LrEventMeta();
  assertEquals(m.observe(1, 10, X, "probe"), null);
  assertEquals(m.observe(0.01, 10, X, "probe"), null);
  assertEquals(m.observe(0.001, 10, X, "mature"), null); // the probe LR samples were not kept
  m.reset();
  assertEquals(m.trend(), 0);
});
