import { Adam, type AdamOptions, AdamW } from "../../../src/optim/mod.ts";
import { adamStepRef } from "../../reference/optim.ts";
import { assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { compare, parametersOf, problem, refOf, release, runBoth } from "./harness.ts";

// Tolerance. Each Adam step moves a parameter by lr·m̂/(√v̂ + eps), whose size is at most
// about lr·(1 − β1)/√(1 − β2) and which f32 computes with a handful of correctly rounded
// operations (relative error ~1e-7 each); m and v are short f32 recurrences of the same
// kind. Over 5 steps the parameter (O(1)) and the moments drift from the f64 values by a few
// f32 ulps, far inside 1e-4 with assertRelClose's floor of 1e-2·max|want| (which covers
// moments that cancel to near zero). The bias corrections come from the host in f64, so
// they add no error of their own. Hence the elementwise tolerance 1e-4 holds for Adam too;
// the cases below scale gradients down to 1e-3 with eps 1e-3 so eps's place (outside the
// bias-corrected square root, as PyTorch) shows at that tolerance.
const TOL = 1e-4;

const CASES: [string, Partial<AdamOptions>, number][] = [
  ["Adam", {}, 1],
  ["Adam", { lr: 0.02, betas: [0.8, 0.95], eps: 1e-3, weightDecay: 0.1 }, 1e-3],
  ["Adam", { lr: 0.05, weightDecay: 0.5 }, 1],
  ["AdamW", {}, 1],
  ["AdamW", { lr: 0.02, betas: [0.85, 0.99], eps: 1e-3, weightDecay: 0.5 }, 1e-3],
];

for (const [k, [kind, options, gradScale]] of CASES.entries()) {
  gpuTest(
    `${kind}(${JSON.stringify(options)}) matches the f64 PyTorch rule over 5 steps (grad scale ${gradScale})`,
    async (device) => {
      const pr = problem(200 + k, 5, gradScale);
      const params = parametersOf(pr);
      const opt = kind === "Adam" ? new Adam(params, options) : new AdamW(params, options);
      const o = {
        lr: 1e-3,
        betas: [0.9, 0.999] as const,
        eps: 1e-8,
        weightDecay: kind === "AdamW" ? 0.01 : 0,
        ...options,
        decoupled: kind === "AdamW",
      };
      const ref = refOf(pr);
      runBoth(device, pr, params, opt, ref, (p, g, s) => adamStepRef(p, g, s, o));
      await compare(params, opt, ref, ["exp_avg", "exp_avg_sq"], TOL, kind);
      release(params, opt);
    },
  );
}

gpuTest("Adam and AdamW reject bad hyperparameters naming the option and the value", () => {
  const params = parametersOf(problem(2, 1, 1, [[3]]));
  assertThrows(() => new Adam(params, { betas: [1, 0.999] }), RangeError, "Adam", "betas[0]", "[0, 1)", "got 1");
  assertThrows(() => new Adam(params, { betas: [0.9, -0.1] }), RangeError, "betas[1]", "-0.1");
  assertThrows(() => new Adam(params, { eps: -1e-8 }), RangeError, "eps", "-1e-8");
  assertThrows(() => new Adam(params, { lr: -1 }), RangeError, "lr", "-1");
  assertThrows(() => new AdamW(params, { weightDecay: -0.01 }), RangeError, "AdamW", "weightDecay", "-0.01");
  assertThrows(() => new AdamW(params, { betas: [0.9] as unknown as [number, number] }), TypeError, "betas", "[0.9]");
  release(params);
});

gpuTest("Adam defaults are PyTorch's and AdamW's weight decay defaults to 0.01", () => {
  const params = parametersOf(problem(3, 1, 1, [[3]]));
  const adam = new Adam(params);
  const g = adam.paramGroups[0];
  if (g.lr !== 1e-3 || g.betas[0] !== 0.9 || g.betas[1] !== 0.999 || g.eps !== 1e-8 || g.weightDecay !== 0) {
    throw new Error(`Adam defaults: ${JSON.stringify(g)}`);
  }
  const adamw = new AdamW(params);
  if (adamw.paramGroups[0].weightDecay !== 0.01) {
    throw new Error(`AdamW weightDecay ${adamw.paramGroups[0].weightDecay}`);
  }
  release(params);
});
