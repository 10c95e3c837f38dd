import {
  ApplyPolicy,
  AverageBackend,
  cpuEquivalent,
  defaultRunConfig,
  ElCheConfig,
  ElCheMode,
  EpochCallbackPolicy,
  EvalCadence,
  lrScaleFactor,
  Reduction,
} from "../../../src/distributed/coordinator/control/config.ts";
import { TrendGuard } from "../../../src/distributed/coordinator/control/guards.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";

Deno.test("ElCheMode.split and fromParts are inverse over the five modes", () => {
  assertEquals(ElCheMode.all(), ["nccl-sync", "nccl-cadence", "cpu-sync", "cpu-cadence", "cpu-async"]);
  for (const m of ElCheMode.all()) assertEquals(ElCheMode.fromParts(...ElCheMode.split(m)), m);
  assertEquals(ElCheMode.split(ElCheMode.CpuAsync), [ApplyPolicy.Async, AverageBackend.Cpu]);
  assertThrows(() => ElCheMode.fromParts("async", "nccl"), RangeError, "dropped", "cpu-async", "async + nccl");
  assert(ElCheMode.is("cpu-sync") && !ElCheMode.is("nccl-async"), "is()");
  assertEquals(cpuEquivalent("nccl-cadence"), "cpu-cadence");
});

Deno.test("ElCheConfig presets differ from the base defaults as in flodl", () => {
  const base = new ElCheConfig();
  assertEquals(
    [base.mode, base.anchor, base.relaxUp, base.metaController, base.noDivergenceGuard, base.gamma, base.bf16Wire],
    ["cpu-cadence", 10, false, true, false, 1, false],
  );
  assertEquals([base.minAnchor, base.maxAnchor, base.overheadTarget, base.easgdAlpha, base.maxOvershoot], [
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
  ]);
  assertEquals([ElCheConfig.cpuSync().anchor, ElCheConfig.ncclSync().anchor], [1, 1]);
  assertEquals([ElCheConfig.cpuSync().mode, ElCheConfig.ncclSync().mode], ["cpu-sync", "nccl-sync"]);
  const a = ElCheConfig.cpuAsync();
  assertEquals([a.mode, a.anchor, a.overheadTarget, a.easgdAlpha], ["cpu-async", 10, 0.05, 0.5]);
  assertEquals([ElCheConfig.cpuCadence().fields(), ElCheConfig.ncclCadence().mode], [
    new ElCheConfig().fields(),
    "nccl-cadence",
  ]);
  for (const m of ElCheMode.all()) assertEquals(ElCheConfig.defaultFor(m).mode, m);
});

Deno.test("ElCheConfig.with copies, shares the guard and not the ratio array", () => {
  const guard = new TrendGuard(0.1);
  const ratios = [0.5, 0.5];
  const a = new ElCheConfig({ partitionRatios: ratios, convergenceGuard: guard });
  ratios[0] = 9;
  const b = a.with({ anchor: 3 });
  b.partitionRatios![1] = 7;
  assertEquals([a.partitionRatios, b.partitionRatios, a.anchor, b.anchor], [[0.5, 0.5], [0.5, 7], 10, 3]);
  assert(b.convergenceGuard === guard && a.clone().convergenceGuard === guard, "guard is shared");
});

Deno.test("EvalCadence, EpochCallbackPolicy and Reduction values", () => {
  assertEquals(EvalCadence.epochs(2), { kind: "epochs", n: 2 });
  assertEquals([1, 2, 3, 4].map((k) => EvalCadence.due(EvalCadence.epochs(2), k)), [false, true, false, true]);
  assertEquals([EvalCadence.due(EvalCadence.epochs(0), 2), EvalCadence.due(undefined, 2)], [false, false]);
  assertThrows(() => EvalCadence.epochs(-1), RangeError, "EvalCadence.epochs", "got -1");
  assertEquals([EpochCallbackPolicy.fastest(), EpochCallbackPolicy.rank(1)], [{ kind: "fastest" }, {
    kind: "rank",
    rank: 1,
  }]);
  assertThrows(() => EpochCallbackPolicy.rank(1.5), RangeError, "got 1.5");
  assertEquals(Object.values(Reduction), ["mean", "sum", "max", "min", "last"]);
});

Deno.test("defaultRunConfig holds the defaults of flodl (web: backend Cpu)", () => {
  const c = defaultRunConfig();
  assertEquals(
    [c.policy, c.backend, c.lrScaleRatio, c.heartbeatTimeoutSecs, c.snapshotTimeoutSecs, c.reportsPerEpoch, c.augment],
    ["cadence", "cpu", 1, 30, 5, 0, 1],
  );
  assertEquals([c.epochSplits, c.vramPool, c.vramMaxUsage, c.ramMaxUsage, c.sampleCache, c.diskStageGb], [
    1,
    true,
    0.9,
    0.5,
    true,
    0,
  ]);
  assertEquals([c.epochCallbackPolicy, c.progressiveDispatch, c.evalEvery, c.maxFailure], [
    { kind: "fastest" },
    undefined,
    undefined,
    undefined,
  ]);
  assert(defaultRunConfig().elche !== c.elche, "a fresh ElCheConfig each call");
});

Deno.test("lrScaleFactor = 1 + (W − 1)·ratio for W > 1 and ratio > 0", () => {
  assertEquals([lrScaleFactor(4, 1), lrScaleFactor(4, 0.5), lrScaleFactor(4, 0), lrScaleFactor(1, 1)], [4, 2.5, 1, 1]);
});
