import { SGD, type SgdOptions } from "../../../src/optim/mod.ts";
import { sgdStepRef } from "../../reference/optim.ts";
import { assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { compare, parametersOf, problem, refOf, release, runBoth } from "./harness.ts";

const CASES: Partial<SgdOptions>[] = [
  { lr: 0.1 },
  { lr: 0.1, weightDecay: 0.05 },
  { lr: 0.1, momentum: 0.9 },
  { lr: 0.05, momentum: 0.8, dampening: 0.3, weightDecay: 0.1 },
  { lr: 0.1, momentum: 0.9, nesterov: true, weightDecay: 0.01 },
];

for (const [k, options] of CASES.entries()) {
  gpuTest(`SGD(${JSON.stringify(options)}) matches the f64 PyTorch rule over 5 steps on odd shapes`, async (device) => {
    const pr = problem(100 + k);
    const params = parametersOf(pr);
    const opt = new SGD(params, { lr: options.lr!, ...options });
    const o = { momentum: 0, dampening: 0, nesterov: false, weightDecay: 0, ...options, lr: options.lr! };
    const ref = refOf(pr);
    runBoth(device, pr, params, opt, ref, (p, g, s) => sgdStepRef(p, g, s, o));
    await compare(params, opt, ref, o.momentum ? ["momentum_buffer"] : [], 1e-4, "SGD");
    release(params, opt);
  });
}

gpuTest("SGD rejects bad hyperparameters naming the option and the value", () => {
  const params = parametersOf(problem(1, 1, 1, [[3]]));
  assertThrows(() => new SGD(params, { lr: -0.1 }), RangeError, "SGD", "lr", "-0.1");
  assertThrows(() => new SGD(params, { lr: NaN }), RangeError, "lr", "NaN");
  assertThrows(() => new SGD(params, { lr: 0.1, momentum: -1 }), RangeError, "momentum", "-1");
  assertThrows(() => new SGD(params, { lr: 0.1, weightDecay: -0.5 }), RangeError, "weightDecay", "-0.5");
  assertThrows(() => new SGD(params, { lr: 0.1, dampening: Infinity }), RangeError, "dampening", "Infinity");
  assertThrows(() => new SGD(params, { lr: 0.1, nesterov: true }), RangeError, "nesterov", "momentum 0");
  assertThrows(
    () => new SGD(params, { lr: 0.1, nesterov: true, momentum: 0.9, dampening: 0.1 }),
    RangeError,
    "nesterov",
    "dampening 0.1",
  );
  assertThrows(() => new SGD(params, { lr: "0.1" as unknown as number }), TypeError, "lr", '"0.1"');
  assertThrows(() => new SGD([{ params, lr: -1 }], { lr: 0.1 }), RangeError, "param group 0", "lr", "-1");
  release(params);
});
