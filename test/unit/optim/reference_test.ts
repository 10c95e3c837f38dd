/**
 * The f64 optimizer references (test/reference/optim.ts) replay PyTorch: each golden case of
 * test/fixtures/optim_golden.json (made by make_optim_golden.py with torch in float64) is
 * run through the reference and must agree to 1e-12 after every step, state included.
 */
import {
  adamStepRef,
  clipGradNormRef,
  clipGradValueRef,
  type RefState,
  rmspropStepRef,
  sgdStepRef,
} from "../../reference/optim.ts";
import { assertEquals, assertRelClose } from "../../util/assert.ts";

interface OptimCase {
  optimizer: "SGD" | "Adam" | "AdamW" | "RMSprop";
  options: Record<string, unknown>;
  params0: number[][];
  grads: number[][][];
  after: number[][][];
  state: Record<string, number | number[]>[];
}
interface ClipNormCase {
  maxNorm: number;
  normType: number | "inf";
  grads: number[][];
  norm: number;
  clipped: number[][];
}
interface Golden {
  optim: OptimCase[];
  clipNorm: ClipNormCase[];
  clipValue: { clipValue: number; grads: number[][]; clipped: number[][] }[];
}

const golden: Golden = JSON.parse(
  await Deno.readTextFile(new URL("../../fixtures/optim_golden.json", import.meta.url)),
);

function stepFor(c: OptimCase): (p: Float64Array, g: number[], s: RefState) => void {
  const o = c.options as Record<string, any>;
  switch (c.optimizer) {
    case "SGD":
      return (p, g, s) =>
        sgdStepRef(p, g, s, {
          lr: o.lr,
          momentum: o.momentum ?? 0,
          dampening: o.dampening ?? 0,
          nesterov: o.nesterov ?? false,
          weightDecay: o.weightDecay ?? 0,
        });
    case "Adam":
    case "AdamW":
      return (p, g, s) =>
        adamStepRef(p, g, s, {
          lr: o.lr,
          betas: o.betas ?? [0.9, 0.999],
          eps: o.eps ?? 1e-8,
          weightDecay: o.weightDecay ?? (c.optimizer === "AdamW" ? 0.01 : 0),
          decoupled: c.optimizer === "AdamW",
        });
    case "RMSprop":
      return (p, g, s) =>
        rmspropStepRef(p, g, s, {
          lr: o.lr,
          alpha: o.alpha ?? 0.99,
          eps: o.eps ?? 1e-8,
          momentum: o.momentum ?? 0,
          centered: o.centered ?? false,
          weightDecay: o.weightDecay ?? 0,
        });
  }
}

Deno.test("golden fixture has every optimizer case", () => {
  assertEquals(golden.optim.length, 12, "optimizer cases");
});

for (const c of golden.optim) {
  Deno.test(`${c.optimizer}(${JSON.stringify(c.options)}) f64 reference matches PyTorch over 5 steps`, () => {
    const step = stepFor(c);
    const params = c.params0.map((p) => Float64Array.from(p));
    const states: RefState[] = params.map(() => ({ step: 0 }));
    c.grads.forEach((gs, t) => {
      params.forEach((p, j) => step(p, gs[j], states[j]));
      params.forEach((p, j) => assertRelClose(p, c.after[t][j], 1e-12, `step ${t + 1} param ${j}`));
    });
    states.forEach((s, j) => {
      for (const [name, want] of Object.entries(c.state[j])) {
        if (name === "step") assertEquals(s.step, want, `param ${j} step`);
        else {assertRelClose(
            (s as unknown as Record<string, Float64Array>)[name],
            want as number[],
            1e-12,
            `param ${j} ${name}`,
          );}
      }
      const names = Object.keys(s).filter((k) => k !== "step").sort();
      assertEquals(names, Object.keys(c.state[j]).filter((k) => k !== "step").sort(), `param ${j} state names`);
    });
  });
}

for (const c of golden.clipNorm) {
  Deno.test(`clipGradNorm reference (maxNorm ${c.maxNorm}, p ${c.normType}) matches PyTorch`, () => {
    const got = clipGradNormRef(c.grads, c.maxNorm, c.normType === "inf" ? Infinity : c.normType);
    assertRelClose([got.norm], [c.norm], 1e-12, "norm");
    got.grads.forEach((g, j) => assertRelClose(g, c.clipped[j], 1e-12, `grad ${j}`));
  });
}

Deno.test("clipGradValue reference matches PyTorch", () => {
  for (const c of golden.clipValue) {
    clipGradValueRef(c.grads, c.clipValue).forEach((g, j) => assertRelClose(g, c.clipped[j], 1e-12, `grad ${j}`));
  }
});
