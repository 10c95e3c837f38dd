/**
 * LR schedulers against their formulas (flodl/src/nn/scheduler.rs), written out again here,
 * plus values worked by hand from those formulas.
 */
import {
  CosineScheduler,
  CyclicLR,
  ExponentialLR,
  MultiStepLR,
  OneCycleLR,
  PlateauScheduler,
  type Scheduler,
  StepDecay,
  WarmupScheduler,
} from "../../../src/optim/mod.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";

const STEPS = Array.from({ length: 260 }, (_, i) => i);

function close(got: number, want: number, label: string, tol = 1e-12): void {
  assert(Math.abs(got - want) <= tol * Math.max(Math.abs(want), 1e-12), `${label}: got ${got}, want ${want}`);
}

function matches(s: Scheduler, formula: (t: number) => number, label: string): void {
  for (const t of STEPS) close(s.lr(t), formula(t), `${label} step ${t}`);
}

Deno.test("StepDecay is base·γ^floor(step/size)", () => {
  matches(new StepDecay(0.1, 7, 0.5), (t) => 0.1 * 0.5 ** Math.floor(t / 7), "StepDecay");
  const s = new StepDecay(0.1, 10, 0.5);
  close(s.lr(9), 0.1, "step 9");
  close(s.lr(10), 0.05, "step 10");
  close(s.lr(20), 0.025, "step 20");
});

Deno.test("ExponentialLR is base·γ^step", () => {
  matches(new ExponentialLR(0.2, 0.97), (t) => 0.2 * 0.97 ** t, "ExponentialLR");
  close(new ExponentialLR(0.1, 0.9).lr(1), 0.09, "step 1");
});

Deno.test("MultiStepLR is base·γ^(milestones passed), milestones in any order", () => {
  const ms = [90, 30, 60];
  matches(new MultiStepLR(0.1, ms, 0.1), (t) => 0.1 * 0.1 ** ms.filter((m) => t >= m).length, "MultiStepLR");
  const s = new MultiStepLR(0.1, ms, 0.1);
  close(s.lr(29), 0.1, "29");
  close(s.lr(30), 0.01, "30");
  close(s.lr(90), 1e-4, "90");
  assertEquals(s.milestones, [30, 60, 90], "sorted milestones");
});

Deno.test("CosineScheduler is min + ½(base−min)(1+cos(π·min(step,T)/T)), flat after T", () => {
  const T = 100;
  matches(
    new CosineScheduler(0.1, 0.001, T),
    (t) => 0.001 + 0.5 * 0.099 * (1 + Math.cos(Math.PI * Math.min(t, T) / T)),
    "Cosine",
  );
  const s = new CosineScheduler(0.1, 0.001, T);
  close(s.lr(0), 0.1, "start");
  close(s.lr(50), 0.0505, "middle");
  close(s.lr(T), 0.001, "end");
  close(s.lr(T + 50), 0.001, "after the end");
});

Deno.test("WarmupScheduler ramps target·(step+1)/w, then runs the inner schedule from 0", () => {
  const inner = new CosineScheduler(0.1, 0, 90);
  const w = new WarmupScheduler(inner, 0.1, 10);
  matches(w, (t) => (t < 10 ? 0.1 * (t + 1) / 10 : inner.lr(t - 10)), "Warmup");
  close(w.lr(0), 0.01, "first step");
  close(w.lr(9), 0.1, "last warmup step");
  close(w.lr(10), 0.1, "inner step 0");
  const none = new WarmupScheduler(new StepDecay(0.3, 5, 0.5), 1, 0);
  close(none.lr(5), 0.15, "zero warmup steps delegate at once");
});

Deno.test("OneCycleLR rises linearly from max/25 to max, then cosine back to max/25", () => {
  const max = 0.01, T = 100, min = max / 25;
  for (const frac of [0.3, 0.25, 0]) {
    const w = Math.round(T * frac);
    const formula = (t: number) => {
      const s = Math.min(t, T);
      if (s < w) return min + (s / w) * (max - min);
      return min + 0.5 * (max - min) * (1 + Math.cos(Math.PI * (s - w) / Math.max(T - w, 1)));
    };
    matches(new OneCycleLR(max, T, frac), formula, `OneCycle ${frac}`);
  }
  const s = new OneCycleLR(max, T);
  assertEquals(s.warmupSteps, 30, "30% warmup by default");
  close(s.lr(0), 0.0004, "start");
  close(s.lr(30), 0.01, "peak");
  close(s.lr(100), 0.0004, "end");
  close(s.lr(500), 0.0004, "after the end");
});

Deno.test("CyclicLR is triangular: base + (max−base)·scale over up/down half-cycles", () => {
  for (const [up, down] of [[4, 4], [3, 7]]) {
    const formula = (t: number) => {
      const pos = t % (up + down);
      const scale = pos <= up ? pos / up : 1 - (pos - up) / down;
      return 0.001 + (0.01 - 0.001) * scale;
    };
    matches(new CyclicLR(0.001, 0.01, up, down), formula, `Cyclic ${up}/${down}`);
  }
  const s = new CyclicLR(0.001, 0.01, 4);
  close(s.lr(0), 0.001, "start");
  close(s.lr(2), 0.0055, "half way up");
  close(s.lr(4), 0.01, "top");
  close(s.lr(6), 0.0055, "half way down");
  close(s.lr(8), 0.001, "next cycle");
});

Deno.test("PlateauScheduler multiplies by factor after patience non-improving observations, floored at minLr", () => {
  const s = new PlateauScheduler(0.1, 2, 0.5, 0.02);
  const seen = [1, 0.9, 0.95, 0.93, 0.8, 0.85, 0.85, 0.9, 0.9, 0.9, 0.9, NaN, NaN].map((m) => s.observe(m));
  // 1, 0.9 improve; 0.95, 0.93 -> cut to 0.05; 0.8 improves; 0.85, 0.85 -> 0.025;
  // 0.9, 0.9 -> 0.0125 floored to 0.02; 0.9, 0.9 -> stays 0.02; NaN never improves.
  assertEquals(
    seen,
    [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.02, 0.02, 0.02, 0.02, 0.02],
    "lr per observation",
  );
  assertEquals(s.lr(1234), 0.02, "lr ignores the step");
  assertEquals(s.best, 0.8, "best");
});

Deno.test("schedulers reject bad arguments naming them", () => {
  assertThrows(() => new StepDecay(0.1, 0, 0.5), RangeError, "StepDecay", "stepSize", "got 0");
  assertThrows(() => new CosineScheduler(0.1, 0, 0), RangeError, "CosineScheduler", "totalSteps", "got 0");
  assertThrows(() => new CyclicLR(0.001, 0.01, 10, 0), RangeError, "CyclicLR", "stepSizeDown", "got 0");
  assertThrows(() => new OneCycleLR(0.01, 100, 1.5), RangeError, "OneCycleLR", "warmupFrac", "1.5");
  assertThrows(() => new MultiStepLR(0.1, [10, -1], 0.1), RangeError, "MultiStepLR", "milestones[1]", "-1");
  assertThrows(() => new WarmupScheduler(new ExponentialLR(0.1, 0.9), 0.1, 2.5), RangeError, "warmupSteps", "2.5");
  assertThrows(() => new ExponentialLR(NaN, 0.9), RangeError, "ExponentialLR", "baseLr", "NaN");
  assertThrows(() => new PlateauScheduler(0.1, 0, 0.5), RangeError, "PlateauScheduler", "patience", "got 0");
  assertThrows(() => new PlateauScheduler(0.1, 3, 1.5), RangeError, "factor", "1.5");
  assertThrows(() => new StepDecay(0.1, 10, 0.5).lr(-1), RangeError, "StepDecay.lr", "step", "-1");
  assertThrows(() => new CosineScheduler(0.1, 0, 10).lr(1.5), RangeError, "CosineScheduler.lr", "1.5");
});
