/**
 * Every build-time rule of flodl (and the web's deviations) makes `run()` reject before
 * any rank starts, with a message naming the knob and the bad value. No GPU needed: the
 * rules are checked before an adapter is asked for.
 */
import {
  ApplyPolicy,
  ArrayDataSet,
  AverageBackend,
  EpochCallbackPolicy,
  Trainer,
} from "../../../src/index.ts";
import { assertRejects, assertThrows } from "../../util/assert.ts";

const data = new ArrayDataSet([{ data: new Float32Array(40), shape: [20, 2] }, { data: new Int32Array(20), shape: [20] }]);
const never = () => {
  throw new Error("must not be called: validation comes first");
};
const base = () =>
  Trainer.builder(never, never, never).dataset(data).batchSize(4).numEpochs(1).cluster({ ranks: [{}, {}] });

const CASES: [string, () => ReturnType<typeof base>, typeof RangeError | typeof TypeError, string[]][] = [
  ["missing dataset", () => Trainer.builder(never, never, never).batchSize(4).numEpochs(1), TypeError, ["dataset is required"]],
  ["missing batchSize", () => Trainer.builder(never, never, never).dataset(data).numEpochs(1), TypeError, ["batchSize is required"]],
  ["missing numEpochs", () => Trainer.builder(never, never, never).dataset(data).batchSize(4), TypeError, ["numEpochs is required"]],
  ["bad batchSize", () => base().batchSize(0), RangeError, ["batchSize", "got 0"]],
  ["(Async, Nccl)", () => base().policy(ApplyPolicy.Async).backend(AverageBackend.Nccl), RangeError, ["async", "nccl"]],
  ["bf16 on Nccl", () => base().backend(AverageBackend.Nccl).bf16Wire(true), RangeError, ["bf16Wire", "CPU averaging plane"]],
  ["empty partitionRatios", () => base().policy(ApplyPolicy.Sync).partitionRatios([]), RangeError, ["partitionRatios", "[]"]],
  ["non-positive ratio", () => base().policy(ApplyPolicy.Sync).partitionRatios([1.2, -0.2]), RangeError, ["partitionRatios", "-0.2"]],
  ["ratios not summing to 1", () => base().policy(ApplyPolicy.Sync).partitionRatios([0.5, 0.6]), RangeError, ["partitionRatios", "1.1000"]],
  ["ratios vs world size", () => base().policy(ApplyPolicy.Sync).partitionRatios([0.3, 0.3, 0.4]), RangeError, ["partitionRatios", "world size 2"]],
  ["easgdAlpha 0", () => base().policy(ApplyPolicy.Async).easgdAlpha(0), RangeError, ["easgdAlpha", "got 0"]],
  ["easgdAlpha > 1", () => base().policy(ApplyPolicy.Async).easgdAlpha(1.5), RangeError, ["easgdAlpha", "1.5"]],
  ["non-finite gamma", () => base().gamma(Infinity), RangeError, ["gamma", "Infinity"]],
  ["epochCallbackPolicy rank >= W", () => base().epochCallbackPolicy(EpochCallbackPolicy.rank(2)), RangeError, ["epochCallbackPolicy", "world size 2", "got 2"]],
  ["overheadTarget", () => base().overheadTarget(0.9), RangeError, ["overheadTarget", "0.9"]],
  ["minAnchor > maxAnchor", () => base().minAnchor(50).maxAnchor(10), RangeError, ["minAnchor", "50"]],
  ["anchor 0", () => base().anchor(0), RangeError, ["anchor", "got 0"]],
  ["lrScaleRatio", () => base().lrScaleRatio(-1), RangeError, ["lrScaleRatio", "-1"]],
  ["maxGradNorm", () => base().maxGradNorm(0), RangeError, ["maxGradNorm", "got 0"]],
  ["heartbeatTimeoutSecs", () => base().heartbeatTimeoutSecs(0), RangeError, ["heartbeatTimeoutSecs", "got 0"]],
  ["augment", () => base().augment(0), RangeError, ["augment", "got 0"]],
  ["cluster slowdown", () => base().cluster({ ranks: [{ slowdown: 0.5 }, {}] }), RangeError, ["slowdown", "0.5"]],
  ["vramMaxUsage below 0.5", () => base().vramMaxUsage(0.4), RangeError, ["vramMaxUsage", "[0.5, 0.99]", "got 0.4"]],
  ["vramMaxUsage above 0.99", () => base().vramMaxUsage(1), RangeError, ["vramMaxUsage", "[0.5, 0.99]", "got 1"]],
  ["ramMaxUsage above 0.9", () => base().ramMaxUsage(0.95), RangeError, ["ramMaxUsage", "[0, 0.9]", "got 0.95"]],
  ["ramMaxUsage negative", () => base().ramMaxUsage(-0.1), RangeError, ["ramMaxUsage", "[0, 0.9]", "got -0.1"]],
  ["diskStage negative", () => base().diskStage(-1), RangeError, ["diskStage", ">= 0", "got -1"]],
  ["diskStage NaN", () => base().diskStage(NaN), RangeError, ["diskStage", "got NaN"]],
  ["diskStageDir empty", () => base().diskStage(1).diskStageDir(""), RangeError, ["diskStageDir", "non-empty", 'got ""']],
  ["vramPool not a boolean", () => base().vramPool("off" as unknown as boolean), TypeError, ["vramPool", "boolean", '"off"']],
  ["cluster vramBytes", () => base().cluster({ ranks: [{ vramBytes: -5 }, {}] }), RangeError, ["rank 0", "vramBytes", "got -5"]],
  ["cluster ramBytes", () => base().cluster({ ranks: [{}, { ramBytes: NaN }] }), RangeError, ["rank 1", "ramBytes", "got NaN"]],
  [
    "an unusable diskStageDir",
    () => base().diskStage(1).diskStageDir("/proc/flodl-no-such/stage"),
    Error,
    ["diskStageDir", "/proc/flodl-no-such/stage", "not usable"],
  ],
  ["checkpointAtEpoch without savePath", () => base().checkpointAtEpoch(1), RangeError, ["checkpointAtEpoch", "savePath"]],
  ["a missing resume bundle", () => base().resumeFrom("/nonexistent/flodl-ckpt"), Error, ["resumeFrom", "flodl-ckpt.meta.json"]],
  ["scalarReduction on a core key", () => base().scalarReduction("loss", "sum"), RangeError, ["scalarReduction", "loss"]],
  ["dashboardTheme", () => base().dashboardTheme("neon" as "dark"), RangeError, ["dashboardTheme", "neon"]],
];

for (const [name, make, cls, fragments] of CASES) {
  Deno.test(`run() rejects ${name} before any rank starts, naming the knob and the value`, async () => {
    await assertRejects(() => make().run(), cls, ...fragments);
  });
}

Deno.test("a builder the entry module does not reach: run() rejects naming the call site and the rule, never hangs", async () => {
  // `base()` creates its builder inside a function: a rank re-running this module never sees it.
  const e = await assertRejects(() => base().run(), Error, "was not reached", "builder_test.ts:", "create the builder there");
  if (!/rank [01]/.test(e.message)) throw new Error(`message names no rank: ${e.message}`);
});

/** Every public method of flodl 0.7's DdpBuilder, snake_case as written there. */
const FLODL_METHODS = [
  "dataset", "sample_dataset", "batch_size", "num_epochs", "policy", "backend", "outer_optimizer", "outer_optimizer_arc",
  "elche", "overhead_target", "max_anchor", "min_anchor", "anchor", "divergence_threshold", "no_divergence_guard",
  "convergence_guard", "max_batch_diff", "partition_ratios", "max_overshoot", "elche_relax_up", "easgd_alpha", "gamma",
  "bf16_wire", "meta_controller", "checkpoint_every", "save_path", "resume_from", "checkpoint_at_epoch", "max_failure",
  "heartbeat_timeout_secs", "progressive_dispatch", "max_grad_norm", "augment", "transform", "transform_fn", "vram_pool",
  "vram_max_usage", "ram_max_usage", "sample_cache", "disk_stage", "disk_stage_dir", "timeline", "lr_scale_ratio",
  "checkpoint_fn", "scheduler", "epoch_fn", "metrics_fn", "eval_dataset", "eval_every", "reports_per_epoch", "record_log",
  "save_dashboard", "dashboard_theme", "scalar_reduction", "eval_fn", "eval_result_fn", "epoch_callback_policy", "cluster",
  "run", "into_worker",
];

Deno.test("DdpBuilder has every public method of flodl's, camelCased, and each setter chains", () => {
  const b = base() as unknown as Record<string, unknown>;
  const missing = FLODL_METHODS.map((m) => m.replace(/_([a-z])/g, (_, c) => c.toUpperCase())).filter((m) => typeof b[m] !== "function");
  if (missing.length) throw new Error(`missing builder methods: ${missing.join(", ")}`);
  const chained = base().anchor(3).gamma(0.5).bf16Wire(true).metaController(false).maxGradNorm(1).augment(2);
  if (!(chained instanceof Object) || chained.state.config.elche.gamma !== 0.5) throw new Error("setters chain and store");
});

Deno.test("remoteRanks: maxSlots (elastic spare slots) must be an integer >= slots and >= 1; slots may be 0 only with maxSlots; credentials cover every slot", async () => {
  const { createRunCredentials } = await import("../../../src/index.ts");
  const url = "ws://127.0.0.1:1";
  const creds = await createRunCredentials(3);
  const spec = (o: object) => ({ slots: 1, url, credentials: creds, ...o });
  assertThrows(() => base().remoteRanks(spec({ maxSlots: 0 })), RangeError, "maxSlots", ">= slots", "got 0");
  assertThrows(() => base().remoteRanks(spec({ slots: 2, maxSlots: 1 })), RangeError, "maxSlots", "(2)", "got 1");
  assertThrows(() => base().remoteRanks(spec({ maxSlots: 1.5 })), RangeError, "maxSlots", "got 1.5");
  assertThrows(() => base().remoteRanks(spec({ slots: 0 })), RangeError, "slots", ">= 1", "got 0");
  base().remoteRanks(spec({ slots: 0, maxSlots: 1 })); // elastic: nobody awaited, one spare slot
  // 2 local + 1 awaited + 1 spare = 4 ranks: 3 credentials are too few (checked before anything starts).
  await assertRejects(() => base().remoteRanks(spec({ maxSlots: 2 })).run(), RangeError, "credentials", "2 local + 2 remote = 4", "got 3");
});
