/**
 * Where a sequence-model training step spends its GPU time, kernel by kernel (bench/profile.ts's
 * capture-and-replay: each launch of one step replayed ×20 in one submit, the empty
 * submit-and-wait subtracted). For gpt-nano: the attention kernels' share of Σ kernel time and
 * their GFLOP/s beside matmul's (FLOPs as bench/profile.ts counts them). For char-rnn: the same
 * table, to see where an LSTM step goes.
 *
 *   deno run -A --no-check bench/seq_profile.ts [--model gpt-nano|char-rnn] [--batch 8] [--seq 64] [--top 25] [--repeat 20] [--out f.json]
 */
import { Device } from "../src/index.ts";
import { profileKernels, timeMedian } from "./profile.ts";
import { batchIds, oursModel, oursStep, SEQ_MODELS, type SeqModel } from "./seq_contenders.ts";
import { flag } from "./flags.ts";

const modelAt = Deno.args.indexOf("--model");
const model = (modelAt >= 0 ? Deno.args[modelAt + 1] : "gpt-nano") as SeqModel;
if (!SEQ_MODELS.includes(model)) throw new RangeError(`--model must be one of ${SEQ_MODELS.join(", ")}, got ${model}`);
const shape = { model, batch: flag("batch", 8), seq: flag("seq", 64), steps: 1 };
const TOP = flag("top", 25);
// Replays per launch: 20 (profile.ts's) costs 60 steps' GPU time; a multi-second step wants fewer.
const REPEAT = flag("repeat", 20);

const load = Deno.loadavg();
const device = await Device.request({ label: "seq-profile" });
const { x, y } = batchIds(shape.batch, shape.seq);
const m = oursModel(device, shape);
const record = () => oursStep(device, shape, m, x, y);
for (let i = 0; i < 2; i++) {
  await record().data.item();
  device.endStep();
}
const syncMs = await timeMedian(5, () => device.sync());
const stepMs = await timeMedian(3, async () => {
  await record().data.item();
  device.endStep();
});
const p = await profileKernels(device, record, syncMs, REPEAT);
const loadAfter = Deno.loadavg();

const f = (v: number, d = 1) => v.toFixed(d);
console.log(`${model} step B=${shape.batch} T=${shape.seq}: wall ${f(stepMs)} ms (loss read), ${p.launches} launches, Σ kernel ${f(p.kernelMs)} ms, empty submit+wait ${f(syncMs)} ms; load ${load.map((v) => f(v, 2)).join(" ")} → ${loadAfter.map((v) => f(v, 2)).join(" ")}`);
console.log("\n| family | launches | ms | share of Σ kernel | GFLOP | GFLOP/s |\n|---|---|---|---|---|---|");
for (const fam of p.families) {
  const ks = p.kernels.filter((k) => k.family === fam.family), flop = ks.reduce((a, k) => a + (k.flop ?? 0), 0);
  console.log(`| ${fam.family} | ${fam.launches} | ${f(fam.ms)} | ${f(100 * fam.share)}% | ${flop ? f(flop / 1e9, 3) : ""} | ${flop && fam.ms ? f(flop / 1e6 / fam.ms, 2) : ""} |`);
}
// Per kernel entry (summed over launches), then the largest single launches.
const byEntry = new Map<string, { n: number; ms: number; flop: number }>();
for (const k of p.kernels) {
  const e = byEntry.get(k.kernel) ?? { n: 0, ms: 0, flop: 0 };
  e.n++, e.ms += k.ms, e.flop += k.flop ?? 0;
  byEntry.set(k.kernel, e);
}
console.log("\n| kernel | launches | ms | share | GFLOP/s |\n|---|---|---|---|---|");
for (const [k, e] of [...byEntry].sort((a, b) => b[1].ms - a[1].ms)) {
  console.log(`| ${k} | ${e.n} | ${f(e.ms)} | ${f((100 * e.ms) / p.kernelMs)}% | ${e.flop && e.ms ? f(e.flop / 1e6 / e.ms, 2) : ""} |`);
}
console.log(`\nlargest ${TOP} launches:\n| # | kernel | detail | ms | GFLOP/s |\n|---|---|---|---|---|`);
p.kernels.map((k, i) => ({ ...k, i })).sort((a, b) => b.ms - a.ms).slice(0, TOP).forEach((k) => {
  console.log(`| ${k.i + 1} | ${k.kernel} | ${k.detail} | ${f(k.ms, 2)} | ${k.flop && k.ms ? f(k.flop / 1e6 / k.ms, 2) : ""} |`);
});
const outAt = Deno.args.indexOf("--out");
if (outAt >= 0) Deno.writeTextFileSync(Deno.args[outAt + 1], JSON.stringify({ shape, stepMs, syncMs, load: { before: load, after: loadAfter }, ...p }, null, 2) + "\n");
