import {
  DivergenceReport,
  MsfGuard,
  NoGuard,
  resolveGuard,
  TrendGuard,
  type Verdict,
} from "../../../src/distributed/coordinator/control/guards.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";

const rep = (d: number) => new DivergenceReport([d / 2, d], 1);
const kinds = (vs: Verdict[]) => vs.map((v) => v.kind);

Deno.test("DivergenceReport.fromAcks fills missing ranks with 0 and keeps pre-norms only when every ack has one", () => {
  const r = DivergenceReport.fromAcks(3, [
    { rank: 0, divergence: 0.1, preNorm: 2, postNorm: 2 },
    { rank: 2, divergence: 0.3, preNorm: 2.5, postNorm: 2 },
  ]);
  assertEquals(r.deltas, [0.1, 0, 0.3]);
  assertEquals(r.maxDelta(), 0.3);
  assertEquals(r.postNorm, 2);
  // cos_r = (pre² + post² − (δ·post)²) / (2·pre·post)
  const cos = r.cosines()!;
  assertRelClose([cos[0], cos[2]], [(4 + 4 - 0.04) / 8, (6.25 + 4 - 0.36) / 10], 1e-12, "cosines");
  assert(Number.isNaN(cos[1]), "rank without an ack has no cosine");
  assertEquals(r.magnitudeShifts()!.filter((x) => !Number.isNaN(x)), [0, 0.5]);
  const partial = DivergenceReport.fromAcks(2, [{ rank: 0, divergence: 0.1, preNorm: 1, postNorm: 1 }, {
    rank: 1,
    divergence: 0.2,
    postNorm: 1,
  }]);
  assertEquals(partial.preNorms, undefined);
  assertEquals(partial.cosines(), undefined);
  assertEquals(new DivergenceReport([], 0).maxDelta(), 0);
  assertThrows(
    () => DivergenceReport.fromAcks(2, [{ rank: 2, divergence: 0, postNorm: 1 }]),
    RangeError,
    "rank",
    "got 2",
  );
});

Deno.test("DivergenceReport cosine is clamped to [-1, 1]", () => {
  const r = new DivergenceReport([3], 1, [1]); // (1 + 1 − 9) / 2 = −3.5 → −1
  assertEquals(r.cosines(), [-1]);
});

Deno.test("NoGuard is always Stable", () => {
  const g = new NoGuard();
  assertEquals(kinds([0.1, 0.2, 0.9, 5].map((d) => g.report(rep(d)))), ["stable", "stable", "stable", "stable"]);
  assertEquals(g.telemetry(), []);
});

Deno.test("TrendGuard suppresses when the last three D rise strictly and the latest exceeds the threshold", () => {
  const g = new TrendGuard(0.05);
  assertEquals(kinds([0.01, 0.02, 0.03].map((d) => g.report(rep(d)))), ["stable", "stable", "stable"]);
  assertEquals(g.report(rep(0.06)).kind, "suppressGrowth"); // 0.02 < 0.03 < 0.06 and 0.06 > 0.05
  assertEquals(g.report(rep(0.06)).kind, "stable"); // not strictly rising
  assertEquals(g.report(rep(0.07)).kind, "stable"); // 0.06, 0.06, 0.07
  assertEquals(g.report(rep(0.08)).kind, "suppressGrowth");
  assertEquals(g.trendHistory(), [0.03, 0.06, 0.06, 0.07, 0.08]);
  g.reset();
  assertEquals(g.trendHistory(), []);
  assertEquals(new TrendGuard().threshold, 0.01);
  assertThrows(() => new TrendGuard(NaN), RangeError, "threshold", "NaN");
});

Deno.test("TrendGuard withHistory keeps the newest five and drives the next verdict", () => {
  const g = new TrendGuard(0.05).withHistory([9, 9, 9, 0.01, 0.04, 0.05]);
  assertEquals(g.trendHistory(), [9, 9, 0.01, 0.04, 0.05]);
  assertEquals(g.report(rep(0.06)).kind, "suppressGrowth");
  assertEquals(g.clone().trendHistory(), g.trendHistory());
});

/** D_t = D0 · exp(λ · kMax · t): λ_raw is exactly λ each event after the first. */
function msfRun(g: MsfGuard, lambda: number, events: number, kMax = 10): Verdict[] {
  const out: Verdict[] = [];
  for (let t = 0; t < events; t++) out.push(g.report(rep(0.01 * Math.exp(lambda * kMax * t)), 2 * kMax, kMax));
  return out;
}

Deno.test("MsfGuard nudges after 3 events above the nudge threshold and each firing resets its streak", () => {
  const g = new MsfGuard();
  // λ = 0.02 > 1e-2 > 1e-3: event 0 only seeds D_prev; events 1..3 build both streaks; event 3 fires, nudge wins.
  assertEquals(kinds(msfRun(g, 0.02, 7)), ["stable", "stable", "stable", "nudgeDown", "stable", "stable", "nudgeDown"]);
  const [[, raw], [, ema]] = g.telemetry();
  assertRelClose([raw, ema], [0.02, 0.02], 1e-9, "lambda");
});

Deno.test("MsfGuard suppresses on a sustained rate between the two thresholds", () => {
  const g = new MsfGuard();
  assertEquals(kinds(msfRun(g, 0.005, 5)), ["stable", "stable", "stable", "suppressGrowth", "stable"]);
  const h = new MsfGuard().withSuppress(0.004, 2);
  assertEquals(kinds(msfRun(h, 0.005, 3)), ["stable", "stable", "suppressGrowth"]);
  const q = new MsfGuard().withoutNudge();
  assertEquals(kinds(msfRun(q, 0.5, 4)), ["stable", "stable", "stable", "suppressGrowth"]);
});

Deno.test("MsfGuard EMA is bias-corrected: e_t = α·e + (1−α)·λ, reported e_t / (1 − α^t)", () => {
  const g = new MsfGuard().withAlpha(0.8);
  const k = 4;
  const D = [0.01, 0.02, 0.015];
  D.forEach((d) => g.report(new DivergenceReport([d], 1), k, k));
  const l1 = Math.log(2) / k, l2 = Math.log(0.75) / k;
  const e = 0.8 * (0.2 * l1) + 0.2 * l2;
  assertRelClose(g.telemetry().map(([, v]) => v), [l2, e / (1 - 0.64)], 1e-12, "telemetry");
});

Deno.test("MsfGuard: a D below 1e-8 resets the previous value and breaks the streaks", () => {
  const g = new MsfGuard().withSuppress(1e-3, 2);
  g.report(rep(0.01), 10, 10);
  g.report(rep(0.02), 10, 10); // λ sample, streak 1
  g.report(rep(1e-9), 10, 10); // no sample, streak broken, prev reset
  assertEquals(g.report(rep(0.04), 10, 10).kind, "stable"); // seeds prev only
  assertEquals(g.report(rep(0.08), 10, 10).kind, "stable"); // streak 1
  assertEquals(g.report(rep(0.16), 10, 10).kind, "suppressGrowth"); // streak 2
  const z = new MsfGuard();
  z.report(rep(0.01), 0, 0);
  z.report(rep(0.02), 0, 0); // k_max = 0: no rate
  assertEquals(z.telemetry(), []);
});

Deno.test("MsfGuard builder methods reject out-of-range values", () => {
  assertThrows(() => new MsfGuard().withAlpha(0), RangeError, "alpha", "got 0");
  assertThrows(() => new MsfGuard().withAlpha(NaN), RangeError, "alpha", "NaN");
  assertThrows(() => new MsfGuard().withNudge(1e-2, 3, 0.05), RangeError, "factor", "0.05");
  assertThrows(() => new MsfGuard().withSuppress(-1, 3), RangeError, "threshold", "-1");
  assertThrows(() => new MsfGuard().withSuppress(1e-3, 0), RangeError, "sustain", "got 0");
});

Deno.test("MsfGuard clone copies configuration and state", () => {
  const g = new MsfGuard().withNudge(0.5, 2, 0.25);
  msfRun(g, 0.02, 3);
  const c = g.clone();
  assertEquals(c.nudgeFactor, 0.25);
  assertEquals(c.telemetry(), g.telemetry());
  g.reset();
  assertEquals(g.telemetry(), []);
});

Deno.test("resolveGuard: explicit > noDivergenceGuard > TrendGuard(threshold | 0.05 | 0.3 with EASGD)", () => {
  const msf = new MsfGuard();
  assert(resolveGuard({ explicit: msf, noDivergenceGuard: true, divergenceThreshold: 1 }) === msf, "explicit wins");
  assertEquals(resolveGuard({ noDivergenceGuard: true, divergenceThreshold: 1 }).name, "NoGuard");
  assertEquals((resolveGuard({ noDivergenceGuard: false }) as TrendGuard).threshold, 0.05);
  assertEquals((resolveGuard({ noDivergenceGuard: false, easgdAlpha: 0.5 }) as TrendGuard).threshold, 0.3);
  assertEquals(
    (resolveGuard({ noDivergenceGuard: false, easgdAlpha: 0.5, divergenceThreshold: 0.2 }) as TrendGuard).threshold,
    0.2,
  );
  const seeded = resolveGuard({ noDivergenceGuard: false, trendHistory: [0.1, 0.2] });
  assertEquals(seeded.trendHistory(), [0.1, 0.2]);
});
