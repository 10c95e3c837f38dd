import {
  type DdpRunConfig,
  defaultRunConfig,
  ElCheConfig,
  EpochCallbackPolicy,
  EvalCadence,
} from "../../../src/distributed/coordinator/control/config.ts";
import { resolveConfig, validateConfig } from "../../../src/distributed/run/validate_config.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

/** A valid config with `patch` applied; `elche` patches merge into the ElCheConfig. */
function cfg(patch: Partial<DdpRunConfig> = {}, elche: Partial<ElCheConfig> = {}): DdpRunConfig {
  const c = { ...defaultRunConfig(), batchSize: 32, numEpochs: 2, ...patch };
  c.elche = c.elche.with(elche);
  return c;
}

const bad = (c: DdpRunConfig, ...frag: string[]) =>
  assertThrows(() => validateConfig(c, { worldSize: 2, datasetLen: 100 }), RangeError, ...frag);

Deno.test("validateConfig accepts the defaults and requires batchSize and numEpochs", () => {
  validateConfig(cfg(), { worldSize: 2, datasetLen: 100 });
  assertThrows(() => validateConfig({ ...defaultRunConfig(), numEpochs: 1 }), TypeError, "batchSize is required");
  assertThrows(() => validateConfig({ ...defaultRunConfig(), batchSize: 1 }), TypeError, "numEpochs is required");
  bad(cfg({ batchSize: 0 }), "batchSize", "integer >= 1", "got 0");
  bad(cfg({ numEpochs: 1.5 }), "numEpochs", "got 1.5");
  assertThrows(
    () => validateConfig(cfg({}, { anchor: "10" as unknown as number })),
    TypeError,
    "anchor must be a number",
    "10",
  );
});

Deno.test("rule 1: Async+Nccl is rejected naming cpu-async; nccl-sync and nccl-cadence resolve (the shared-memory collective)", () => {
  bad(cfg({ policy: "async", backend: "nccl" }), "NCCL async was dropped", "cpu-async");
  assertEquals(resolveConfig(cfg({ backend: "nccl" })).mode, "nccl-cadence");
  assertEquals(resolveConfig(cfg({ policy: "sync", backend: "nccl" })).mode, "nccl-sync");
  bad(cfg({ policy: "fast" as never }), "policy", 'got "fast"');
});

Deno.test("rule 2: partitionRatios non-empty, finite, > 0, sum 1 ± 0.05, one per rank", () => {
  bad(cfg({}, { partitionRatios: [] }), "partitionRatios", "non-empty", "got []");
  bad(cfg({}, { partitionRatios: [0.5, NaN] }), "partitionRatios", "[0.5, NaN]");
  bad(cfg({}, { partitionRatios: [1.5, -0.5] }), "partitionRatios", "> 0", "[1.5, -0.5]");
  bad(cfg({}, { partitionRatios: [0.5, 0.3] }), "partitionRatios", "sum 0.8000", "[0.5, 0.3]");
  bad(cfg({}, { partitionRatios: [0.3, 0.3, 0.4] }), "partitionRatios", "world size 2", "[0.3, 0.3, 0.4]");
  validateConfig(cfg({ policy: "sync" }, { partitionRatios: [0.52, 0.5] }), { worldSize: 2 });
  validateConfig(cfg({}, { partitionRatios: [0.3, 0.3, 0.4] })); // W unknown yet: length not checked
});

Deno.test("rules 3, 4, 7: easgdAlpha in (0, 1], gamma finite, bf16Wire on CPU only", () => {
  bad(cfg({}, { easgdAlpha: 0 }), "easgdAlpha must be in (0, 1], got 0");
  bad(cfg({}, { easgdAlpha: 1.5 }), "easgdAlpha", "got 1.5");
  bad(cfg({}, { gamma: Infinity }), "gamma must be finite, got Infinity");
  bad(cfg({}, { gamma: NaN }), "gamma", "NaN");
  bad(cfg({ backend: "nccl" }, { bf16Wire: true }), "bf16Wire", "CPU averaging plane", "cpu-cadence");
  validateConfig(cfg({}, { bf16Wire: true, gamma: -1, easgdAlpha: 1 }));
});

Deno.test("rule 8: each epoch slice holds at least one batch", () => {
  bad(cfg({ epochSplits: 4 }), "epochSplits", "floor(100 samples × augment 1 / 4) = 25 < batchSize 32", "got 4");
  validateConfig(cfg({ epochSplits: 4, augment: 2 }), { datasetLen: 100 });
  validateConfig(cfg({ epochSplits: 4 })); // dataset length unknown
});

Deno.test("rule 9: epochCallbackPolicy rank below the world size", () => {
  bad(cfg({ epochCallbackPolicy: EpochCallbackPolicy.rank(2) }), "epochCallbackPolicy rank", "< world size 2", "got 2");
  validateConfig(cfg({ epochCallbackPolicy: EpochCallbackPolicy.rank(1) }), { worldSize: 2 });
});

Deno.test("knobs flodl clamps are rejected instead, naming the knob, range and value", () => {
  bad(cfg({}, { overheadTarget: 0.6 }), "overheadTarget must be in [0.01, 0.5], got 0.6");
  bad(cfg({}, { overheadTarget: 0.001 }), "overheadTarget", "got 0.001");
  bad(cfg({}, { anchor: 0 }), "anchor must be an integer >= 1, got 0");
  bad(cfg({}, { minAnchor: 0 }), "minAnchor", "got 0");
  bad(cfg({}, { minAnchor: 8, maxAnchor: 5 }), "minAnchor must be <= maxAnchor (5), got 8");
  bad(cfg({}, { minAnchor: 2000 }), "minAnchor must be <= maxAnchor (1000, the default), got 2000");
  bad(cfg({}, { maxBatchDiff: -1 }), "maxBatchDiff", "got -1");
  bad(cfg({}, { maxOvershoot: 1.5 }), "maxOvershoot", "got 1.5");
  bad(cfg({}, { divergenceThreshold: NaN }), "divergenceThreshold", "NaN");
  bad(cfg({ augment: 0 }), "augment must be an integer >= 1, got 0");
  bad(cfg({ epochSplits: 0 }), "epochSplits must be an integer >= 1, got 0");
  bad(cfg({ vramMaxUsage: 0.4 }), "vramMaxUsage must be in [0.5, 0.99], got 0.4");
  bad(cfg({ ramMaxUsage: 0.95 }), "ramMaxUsage must be in [0, 0.9], got 0.95");
  bad(cfg({ lrScaleRatio: -1 }), "lrScaleRatio", "got -1");
  bad(cfg({ maxGradNorm: 0 }), "maxGradNorm", "> 0", "got 0");
  bad(cfg({ heartbeatTimeoutSecs: 0 }), "heartbeatTimeoutSecs", "got 0");
  bad(cfg({ checkpointEvery: 0 }), "checkpointEvery", "got 0");
  bad(cfg({ reportsPerEpoch: -2 }), "reportsPerEpoch", "got -2");
  bad(cfg({ recordLog: { dir: "logs", maxBytes: -1 } }), "recordLog maxBytes", "got -1");
  bad(cfg({ diskStageGb: -0.5 }), "diskStage must be finite and >= 0, got -0.5");
  bad(cfg({ diskStageGb: Infinity }), "diskStage", "got Infinity");
  bad(cfg({ vramMaxUsage: 0.995 }), "vramMaxUsage must be in [0.5, 0.99], got 0.995");
  bad(cfg({ ramMaxUsage: -0.01 }), "ramMaxUsage must be in [0, 0.9], got -0.01");
  bad(cfg({ diskStageDir: "" }), "diskStageDir must be a non-empty path", 'got ""');
  bad(cfg({ seed: -3 }), "seed", "got -3");
  bad(cfg({ evalEvery: { kind: "epochs", n: -1 } as EvalCadence }), "evalEvery", "got -1");
  bad(cfg({ dashboardTheme: "blue" as never }), "dashboardTheme", 'got "blue"');
  bad(cfg({ scalarReductions: { loss: "sum" } }), 'scalarReduction("loss")', "mean (a core key, fixed)", 'got "sum"');
  bad(cfg({ scalarReductions: { tok: "median" as never } }), 'scalarReduction("tok")', 'got "median"');
});

Deno.test("resolveConfig reconciles the mode, fills EASGD α for cpu-async and the anchor bounds", () => {
  const a = resolveConfig(cfg({ policy: "async" }));
  assertEquals([a.mode, a.elche.mode, a.easgdAlpha, a.elche.easgdAlpha, a.progressive], [
    "cpu-async",
    "cpu-async",
    0.5,
    0.5,
    true,
  ]);
  assertEquals([a.anchor, a.minAnchor, a.maxAnchor, a.overheadTarget], [10, 10, 1000, 0.05]);
  // The last of .elche(...) / .policy() wins per axis: an async preset under policy Sync is cpu-sync.
  const s = resolveConfig(cfg({ policy: "sync", elche: ElCheConfig.cpuAsync() }));
  assertEquals([s.mode, s.easgdAlpha, s.progressive], ["cpu-sync", undefined, false]);
  assertEquals(s.warnings, ["easgdAlpha 0.5 has no effect under sync (EASGD is Async only)"]);
  const lifted = resolveConfig(cfg({}, { minAnchor: 20 }));
  assertEquals([lifted.anchor, lifted.minAnchor], [20, 20]);
  const lowered = resolveConfig(cfg({}, { maxAnchor: 5 }));
  assertEquals([lowered.anchor, lowered.minAnchor, lowered.maxAnchor], [5, 5, 5]);
  const forced = resolveConfig(cfg({ progressiveDispatch: true, policy: "sync" }, { maxOvershoot: 4, relaxUp: true }));
  assertEquals(forced.progressive, true);
  assertEquals(forced.warnings.length, 2);
  const p = resolveConfig(cfg({ checkpointAtEpoch: 1, progressiveDispatch: false }, { partitionRatios: [0.5, 0.5] }));
  assertEquals(p.warnings.length, 2);
});
