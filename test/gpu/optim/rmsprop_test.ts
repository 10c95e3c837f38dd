import { RMSprop, type RmspropOptions } from "../../../src/optim/mod.ts";
import { rmspropStepRef } from "../../reference/optim.ts";
import { assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { compare, parametersOf, problem, refOf, release, runBoth } from "./harness.ts";

const CASES: Partial<RmspropOptions>[] = [
  {},
  { lr: 0.01, weightDecay: 0.1, eps: 1e-3 },
  { lr: 0.005, momentum: 0.5 },
  { lr: 0.005, centered: true },
  { lr: 0.01, alpha: 0.9, eps: 1e-3, momentum: 0.7, centered: true, weightDecay: 0.05 },
];

for (const [k, options] of CASES.entries()) {
  gpuTest(
    `RMSprop(${JSON.stringify(options)}) matches the f64 PyTorch rule over 5 steps on odd shapes`,
    async (device) => {
      const pr = problem(300 + k);
      const params = parametersOf(pr);
      const opt = new RMSprop(params, options);
      const o = { lr: 1e-2, alpha: 0.99, eps: 1e-8, momentum: 0, centered: false, weightDecay: 0, ...options };
      const ref = refOf(pr);
      runBoth(device, pr, params, opt, ref, (p, g, s) => rmspropStepRef(p, g, s, o));
      const names = ["square_avg", ...(o.momentum > 0 ? ["momentum_buffer"] : []), ...(o.centered ? ["grad_avg"] : [])];
      await compare(params, opt, ref, names, 1e-4, "RMSprop");
      release(params, opt);
    },
  );
}

gpuTest("RMSprop rejects bad hyperparameters naming the option and the value", () => {
  const params = parametersOf(problem(4, 1, 1, [[3]]));
  assertThrows(() => new RMSprop(params, { alpha: 1.5 }), RangeError, "RMSprop", "alpha", "[0, 1]", "1.5");
  assertThrows(() => new RMSprop(params, { eps: -1 }), RangeError, "eps", "-1");
  assertThrows(() => new RMSprop(params, { momentum: -0.9 }), RangeError, "momentum", "-0.9");
  assertThrows(() => new RMSprop(params, { centered: 1 as unknown as boolean }), TypeError, "centered", "1");
  release(params);
});
