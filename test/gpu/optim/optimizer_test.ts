/** The Optimizer base: groups, learning-rate control, state dicts, reset, zeroGrad, step bookkeeping. */
import { Parameter } from "../../../src/autograd/mod.ts";
import type { Device, Dispatch } from "../../../src/gpu/mod.ts";
import { Adam, RMSprop, SGD } from "../../../src/optim/mod.ts";
import { fromArray } from "../../../src/tensor/mod.ts";
import { adamStepRef, sgdStepRef } from "../../reference/optim.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { compare, parametersOf, problem, refOf, release, runBoth, setGrads } from "./harness.ts";

const SGD_DEFAULTS = { momentum: 0, dampening: 0, nesterov: false, weightDecay: 0 };
const ADAM = { lr: 0.01, betas: [0.9, 0.999] as const, eps: 1e-8, weightDecay: 0, decoupled: false };

/** Count dispatches recorded while `fn` runs. */
function countDispatches(device: Device, fn: () => void): Dispatch[] {
  const seen: Dispatch[] = [];
  const original = device.dispatch;
  device.dispatch = (d: Dispatch) => {
    seen.push(d);
    original.call(device, d);
  };
  try {
    fn();
  } finally {
    device.dispatch = original;
  }
  return seen;
}

gpuTest("param groups update each parameter with its group's lr and options", async (device) => {
  const pr = problem(400);
  const params = parametersOf(pr);
  const opt = new SGD([{ params: params.slice(0, 2), lr: 0.1 }, { params: params.slice(2), lr: 0.01, momentum: 0.5 }], {
    lr: 0.05,
    momentum: 0.9,
  });
  assertEquals(opt.paramGroups.map((g) => [g.lr, g.momentum]), [[0.1, 0.9], [0.01, 0.5]], "group options");
  const options = [
    { ...SGD_DEFAULTS, lr: 0.1, momentum: 0.9 },
    { ...SGD_DEFAULTS, lr: 0.01, momentum: 0.5 },
  ];
  const ref = refOf(pr);
  runBoth(device, pr, params, opt, ref, (p, g, s, j) => sgdStepRef(p, g, s, options[j < 2 ? 0 : 1]));
  await compare(params, opt, ref, ["momentum_buffer"], 1e-4, "groups");
  release(params, opt);
});

gpuTest("setLr, setGroupLr and scaleLr set the rate the next step uses", async () => {
  const pr = problem(401, 4);
  const params = parametersOf(pr);
  const opt = new SGD([{ params: params.slice(0, 1) }, { params: params.slice(1) }], { lr: 0.1 });
  const ref = refOf(pr);
  const lrs = [[0.1, 0.1], [0.2, 0.2], [0.2, 0.05], [0.1, 0.025]];
  const changes = [() => {}, () => opt.setLr(0.2), () => opt.setGroupLr(1, 0.05), () => opt.scaleLr(0.5)];
  for (let t = 0; t < 4; t++) {
    changes[t]();
    assertEquals(opt.lr, lrs[t][0], `lr getter at step ${t}`);
    assertEquals(opt.paramGroups.map((g) => g.lr), lrs[t], `group lrs at step ${t}`);
    setGrads(params, pr.grads[t]);
    opt.step();
    ref.params.forEach((p, j) =>
      sgdStepRef(p, pr.grads[t][j], ref.states[j], { ...SGD_DEFAULTS, lr: lrs[t][j === 0 ? 0 : 1] })
    );
  }
  await compare(params, opt, ref, [], 1e-4, "lr changes");
  assertThrows(() => opt.setLr(-1), RangeError, "setLr", "lr", "-1");
  assertThrows(() => opt.setGroupLr(2, 0.1), RangeError, "setGroupLr", "[0, 1]", "got 2");
  assertThrows(() => opt.scaleLr(NaN), RangeError, "scaleLr", "factor", "NaN");
  opt.paramGroups[0].lr = -0.5;
  assertThrows(() => opt.step(), RangeError, "param group 0", "lr", "-0.5");
  release(params, opt);
});

gpuTest("a state dict loaded into a fresh optimizer gives the same next step", async (device) => {
  const pr = problem(402, 4);
  const a = parametersOf(pr);
  const optA = new Adam(a, { lr: 0.01 });
  const ref = refOf(pr);
  runBoth(device, pr, a, optA, ref, (p, g, s) => adamStepRef(p, g, s, ADAM), 3);
  const sd = optA.stateDict();
  assertEquals(
    Object.keys(sd.tensors).sort(),
    ["0", "1", "2", "3"].flatMap((i) => [`${i}.exp_avg`, `${i}.exp_avg_sq`]).sort(),
    "tensor names",
  );
  assertEquals(
    sd.scalars,
    { "0.step": 3, "1.step": 3, "2.step": 3, "3.step": 3, "param_groups.0.lr": 0.01 },
    "scalars",
  );
  // A second model with the same weights and an optimizer made with another lr.
  const b = await Promise.all(a.map(async (p) => new Parameter(fromArray(await p.data.toF32(), p.shape), p.name)));
  const optB = new Adam(b, { lr: 0.5 });
  optB.loadStateDict(sd);
  assertEquals(optB.lr, 0.01, "lr restored from the state dict");
  setGrads(a, pr.grads[3]);
  setGrads(b, pr.grads[3]);
  optA.step();
  optB.step();
  ref.params.forEach((p, j) => adamStepRef(p, pr.grads[3][j], ref.states[j], ADAM));
  for (let j = 0; j < a.length; j++) {
    assertEquals([...await b[j].data.toF32()], [...await a[j].data.toF32()], `param ${j} after the loaded step`);
  }
  await compare(b, optB, ref, ["exp_avg", "exp_avg_sq"], 1e-4, "loaded Adam");
  release(a, optA);
  release(b, optB);
});

gpuTest("loadStateDict names a missing, unexpected or mis-shaped entry and changes nothing", (device) => {
  const pr = problem(403, 1, 1, [[3, 5], [7]]);
  const params = parametersOf(pr);
  const opt = new Adam(params);
  runBoth(device, pr, params, opt, refOf(pr), () => {});
  const good = opt.stateDict();
  const withT = (patch: Record<string, unknown>) => ({
    tensors: { ...good.tensors, ...patch } as any,
    scalars: good.scalars,
  });
  const withS = (patch: Record<string, unknown>) => ({
    tensors: good.tensors,
    scalars: { ...good.scalars, ...patch } as any,
  });
  const { ["1.exp_avg_sq"]: _dropped, ...missing } = good.tensors;
  assertThrows(
    () => opt.loadStateDict({ tensors: missing, scalars: good.scalars }),
    Error,
    "Adam.loadStateDict",
    'missing tensor "1.exp_avg_sq"',
  );
  assertThrows(
    () => opt.loadStateDict(withT({ "9.exp_avg": good.tensors["0.exp_avg"] })),
    Error,
    'unexpected tensor "9.exp_avg"',
  );
  assertThrows(
    () => opt.loadStateDict(withT({ "0.momentum_buffer": good.tensors["0.exp_avg"] })),
    Error,
    'unexpected tensor "0.momentum_buffer"',
    "exp_avg_sq",
  );
  assertThrows(
    () => opt.loadStateDict(withT({ "0.exp_avg": fromArray(new Float32Array(15), [5, 3]) })),
    RangeError,
    '"0.exp_avg" is [5,3]',
    '("p0") is [3,5]',
  );
  assertThrows(
    () => opt.loadStateDict(withT({ "1.exp_avg": fromArray(new Int32Array(7)) })),
    TypeError,
    '"1.exp_avg" is i32',
  );
  const { ["0.step"]: _s, ...noStep } = good.scalars;
  assertThrows(() => opt.loadStateDict({ tensors: good.tensors, scalars: noStep }), Error, 'missing scalar "0.step"');
  const { ["param_groups.0.lr"]: _l, ...noLr } = good.scalars;
  assertThrows(
    () => opt.loadStateDict({ tensors: good.tensors, scalars: noLr }),
    Error,
    'missing scalar "param_groups.0.lr"',
  );
  assertThrows(() => opt.loadStateDict(withS({ "0.step": 1.5 })), RangeError, '"0.step"', "1.5");
  assertThrows(
    () => opt.loadStateDict(withS({ "param_groups.3.lr": 0.1 })),
    Error,
    'unexpected scalar "param_groups.3.lr"',
  );
  assertEquals(opt.stateDict().scalars["0.step"], 1, "state unchanged after failed loads");
  // Its own state dict loads (no self-copy) and an SGD without momentum has steps only.
  opt.loadStateDict(good);
  const sgd = new SGD(params, { lr: 0.1 });
  sgd.loadStateDict({ tensors: {}, scalars: { "1.step": 4, "param_groups.0.lr": 0.2 } });
  assertEquals(sgd.stateDict(), { tensors: {}, scalars: { "1.step": 4, "param_groups.0.lr": 0.2 } }, "SGD state");
  release(params, opt);
});

gpuTest("resetState forgets moments and step counts: the next step is a first step again", async (device) => {
  const pr = problem(404, 5);
  const params = parametersOf(pr);
  const opt = new Adam(params, { lr: 0.01 });
  runBoth(device, pr, params, opt, refOf(pr), () => {}, 3);
  opt.resetState();
  assertEquals(opt.stateDict(), { tensors: {}, scalars: { "param_groups.0.lr": 0.01 } }, "state after reset");
  const ref = {
    params: await Promise.all(params.map(async (p) => Float64Array.from(await p.data.toF32()))),
    states: params.map(() => ({ step: 0 })),
  };
  const rest = { ...pr, grads: pr.grads.slice(3) };
  runBoth(device, rest, params, opt, ref, (p, g, s) => adamStepRef(p, g, s, ADAM));
  await compare(params, opt, ref, ["exp_avg", "exp_avg_sq"], 1e-4, "after reset");
  release(params, opt);
});

gpuTest("zeroGrad drops gradients by default and zeroes them in place when asked", async () => {
  const pr = problem(405, 1);
  const params = parametersOf(pr);
  const opt = new SGD(params, { lr: 0.1 });
  setGrads(params, pr.grads[0]);
  const kept = params[1].grad!;
  opt.zeroGrad(false);
  assert(params[1].grad === kept, "zeroGrad(false) keeps the gradient tensor");
  for (const p of params) assertEquals([...await p.grad!.toF32()].every((v) => v === 0), true, `${p.name} grad zeroed`);
  opt.zeroGrad();
  assertEquals(params.map((p) => p.grad), [null, null, null, null], "grads dropped");
  release(params, opt);
});

gpuTest("step records one fused dispatch per parameter with a gradient and skips the others", async (device) => {
  const pr = problem(406, 1);
  const params = parametersOf(pr);
  const before = await params[2].data.toF32();
  for (
    const opt of [
      new SGD(params, { lr: 0.1, momentum: 0.9 }),
      new Adam(params),
      new RMSprop(params, { centered: true, momentum: 0.5 }),
    ]
  ) {
    setGrads(params, pr.grads[0]);
    params[2].zeroGrad();
    const submits = device.submits;
    const seen = countDispatches(device, () => opt.step());
    assertEquals(device.submits, submits, `${opt.name}.step submits`);
    assertEquals(seen.length, 3, `${opt.name} dispatches for 3 gradients`);
    assertEquals(seen.every((d) => d.shader === "optim"), true, `${opt.name} kernels`);
    assertEquals(
      "2.step" in opt.stateDict().scalars,
      false,
      `${opt.name}: no state for the parameter without a gradient`,
    );
    opt.resetState();
  }
  assertEquals([...await params[2].data.toF32()], [...before], "parameter without a gradient unchanged");
  release(params);
});

gpuTest("optimizer state memory stays flat over steps", (device) => {
  const pr = problem(407, 1);
  const params = parametersOf(pr);
  setGrads(params, pr.grads[0]);
  const opt = new Adam(params);
  opt.step();
  device.endStep();
  const live = device.memory().liveBytes;
  for (let i = 0; i < 10; i++) {
    opt.step();
    device.endStep();
  }
  assertEquals(device.memory().liveBytes, live, "live bytes after 10 more steps");
  release(params, opt);
});

gpuTest("step and the constructor reject bad parameters and gradients, naming them", () => {
  const pr = problem(408, 1, 1, [[3, 5], [7]]);
  const params = parametersOf(pr);
  const opt = new SGD(params, { lr: 0.1 });
  params[1].grad = fromArray(new Float32Array(6), [6]).keep();
  assertThrows(() => opt.step(), RangeError, "SGD.step", 'parameter 1 ("p1")', "[6]", "[7]");
  assertThrows(() => new SGD([], { lr: 0.1 }), RangeError, "empty parameter list");
  assertThrows(
    () => new SGD([{ params }, { params: [params[0]] }], { lr: 0.1 }),
    RangeError,
    "param group 1",
    '"p0"',
    "more than one group",
  );
  assertThrows(() => new SGD([{ params: [{} as Parameter] }], { lr: 0.1 }), TypeError, "param group 0", "Parameters");
  release(params, opt);
});

gpuTest("several steps and a parameter update stay recorded until the step ends (one submit)", async (device) => {
  const pr = problem(409, 2);
  const params = parametersOf(pr);
  const opt = new SGD(params, { lr: 0.1, momentum: 0.9, nesterov: true });
  device.flush();
  const submits = device.submits;
  setGrads(params, pr.grads[0]);
  opt.step();
  opt.zeroGrad(false);
  device.flush();
  assertEquals(device.submits, submits + 1, "one submit for the whole step");
  const ref = refOf(pr);
  ref.params.forEach((p, j) =>
    sgdStepRef(p, pr.grads[0][j], ref.states[j], { ...SGD_DEFAULTS, lr: 0.1, momentum: 0.9, nesterov: true })
  );
  assertRelClose(await params[3].data.toF32(), ref.params[3], 1e-4, "param 3");
  release(params, opt);
});
