/**
 * Runs the sequence-model bench page (bench/seq.html) in Chromium: one sitting of
 * bench/seq_contenders.ts (SEQ_MODEL char-rnn | gpt-nano | bilstm | encoder, SEQ_BATCH, SEQ_SEQ, SEQ_STEPS,
 * SEQ_ROUNDS, SEQ_ONLY=ours,tf,jax, SEQ_MODES=loss-at-end,loss-every-step), prints the
 * table with the load average, writes bench/results/<date>-chromium-seq-<model>[-<BENCH_TAG>].json
 * and fails when a contender's loss does not fall. With SEQ_PROFILE=<replays> it profiles our
 * step instead (bench/seq_profile.ts's kernel-by-kernel table, in Chromium) and writes
 * bench/results/<date>-chromium-seq-profile-<model>[-<BENCH_TAG>].json.
 */
import { expect, test } from "@playwright/test";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import type { SeqContender, SeqMode, SeqModel, SeqResult, SittingOptions } from "./seq_contenders.ts";
import { DEFAULT_SHAPE, SEQ_MODELS } from "./seq_shapes.ts";

const num = (name: string, fallback: number) => {
  const v = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(v) || v <= 0) throw new RangeError(`${name} must be a positive integer, got ${process.env[name]}`);
  return v;
};

test("sequence models: ours vs TF.js vs jax-js in Chromium", async ({ page, browser }) => {
  test.skip(!!process.env.SEQ_PROFILE, "SEQ_PROFILE: the profile test runs instead");
  page.on("console", (m) => console.log(m.text()));
  page.on("pageerror", (e) => console.log("pageerror", e.message));
  const model = (process.env.SEQ_MODEL ?? "gpt-nano") as SeqModel;
  if (!SEQ_MODELS.includes(model)) throw new RangeError(`SEQ_MODEL must be one of ${SEQ_MODELS.join(", ")}, got ${model}`);
  const options: Omit<SittingOptions, "log"> = {
    shape: { model, batch: num("SEQ_BATCH", DEFAULT_SHAPE[model].batch), seq: num("SEQ_SEQ", DEFAULT_SHAPE[model].seq), steps: num("SEQ_STEPS", 3) },
    rounds: num("SEQ_ROUNDS", 3),
    contenders: process.env.SEQ_ONLY?.split(",") as SeqContender[] | undefined,
    modes: process.env.SEQ_MODES?.split(",") as SeqMode[] | undefined,
  };
  const loadBefore = loadavg();
  await page.goto("/bench/seq.html");
  await expect(page.locator("#status")).toHaveText("ready", { timeout: 180_000 });
  const adapter = await page.evaluate(async () => {
    const a = await navigator.gpu?.requestAdapter();
    return a ? `${a.info.vendor}|${a.info.architecture}|${a.info.description}` : "none";
  });
  const r = await page.evaluate(
    (o) => (globalThis as unknown as { seqBench: { run(o: unknown): Promise<{ results: SeqResult[]; table: string[]; seconds: number }> } }).seqBench.run(o),
    options,
  );
  const loadAfter = loadavg();
  const date = new Date().toISOString();
  console.log(`\nChromium ${browser.version()} (${adapter}), ${date.slice(0, 16)}Z`);
  console.log(r.table.join("\n"));
  console.log(`load before ${loadBefore.map((v) => v.toFixed(2)).join(" ")}, after ${loadAfter.map((v) => v.toFixed(2)).join(" ")}; sitting ${r.seconds.toFixed(0)} s`);
  const dir = new URL("./results/", import.meta.url);
  mkdirSync(dir, { recursive: true });
  const tag = process.env.BENCH_TAG;
  const file = new URL(`${date.slice(0, 10)}-chromium-seq-${model}${tag ? `-${tag}` : ""}.json`, dir);
  writeFileSync(file, JSON.stringify({ runtime: `chromium ${browser.version()}`, adapter, date, options, load: { before: loadBefore, after: loadAfter }, ...r }, null, 2) + "\n");
  console.log(`wrote ${file.pathname}`);
  for (const x of r.results) expect(x.lastLoss, `${x.contender} ${x.mode} round ${x.round}: loss ${x.firstLoss} → ${x.lastLoss} did not fall`).toBeLessThan(x.firstLoss);
});

test("sequence models: our step's kernels in Chromium (SEQ_PROFILE)", async ({ page, browser }) => {
  test.skip(!process.env.SEQ_PROFILE, "set SEQ_PROFILE=<replays per launch> to profile");
  page.on("console", (m) => console.log(m.text()));
  const model = (process.env.SEQ_MODEL ?? "gpt-nano") as SeqModel;
  const shape = { model, batch: num("SEQ_BATCH", 8), seq: num("SEQ_SEQ", 64), steps: 1 };
  const loadBefore = loadavg();
  await page.goto("/bench/seq.html");
  await expect(page.locator("#status")).toHaveText("ready", { timeout: 180_000 });
  type Profile = { stepMs: number; kernelMs: number; launches: number; families: { family: string; launches: number; ms: number; share: number }[]; kernels: { kernel: string; family: string; ms: number; flop?: number }[] };
  const p = await page.evaluate(
    ([s, r]) => (globalThis as unknown as { seqBench: { profile(s: unknown, r: number): Promise<Profile> } }).seqBench.profile(s, r),
    [shape, num("SEQ_PROFILE", 5)] as const,
  );
  const loadAfter = loadavg();
  const date = new Date().toISOString();
  const f = (v: number, d = 1) => v.toFixed(d);
  console.log(`\nChromium ${browser.version()}, ${date.slice(0, 16)}Z: ${model} B=${shape.batch} T=${shape.seq}, step ${f(p.stepMs)} ms, Σ kernel ${f(p.kernelMs)} ms, ${p.launches} launches; load ${loadBefore.map((v) => f(v, 2)).join(" ")} → ${loadAfter.map((v) => f(v, 2)).join(" ")}`);
  console.log("| family | launches | ms | share | GFLOP/s |\n|---|---|---|---|---|");
  for (const fam of p.families) {
    const flop = p.kernels.filter((k) => k.family === fam.family).reduce((a, k) => a + (k.flop ?? 0), 0);
    console.log(`| ${fam.family} | ${fam.launches} | ${f(fam.ms)} | ${f(100 * fam.share)}% | ${flop && fam.ms ? f(flop / 1e6 / fam.ms, 2) : ""} |`);
  }
  const byEntry = new Map<string, { n: number; ms: number; flop: number }>();
  for (const k of p.kernels) {
    const e = byEntry.get(k.kernel) ?? { n: 0, ms: 0, flop: 0 };
    e.n++, e.ms += k.ms, e.flop += k.flop ?? 0;
    byEntry.set(k.kernel, e);
  }
  console.log("| kernel | launches | ms | share | GFLOP/s |\n|---|---|---|---|---|");
  for (const [k, e] of [...byEntry].sort((a, b) => b[1].ms - a[1].ms).slice(0, 15)) {
    console.log(`| ${k} | ${e.n} | ${f(e.ms)} | ${f((100 * e.ms) / p.kernelMs)}% | ${e.flop && e.ms ? f(e.flop / 1e6 / e.ms, 2) : ""} |`);
  }
  const dir = new URL("./results/", import.meta.url);
  mkdirSync(dir, { recursive: true });
  const tag = process.env.BENCH_TAG;
  const file = new URL(`${date.slice(0, 10)}-chromium-seq-profile-${model}${tag ? `-${tag}` : ""}.json`, dir);
  writeFileSync(file, JSON.stringify({ runtime: `chromium ${browser.version()}`, date, shape, load: { before: loadBefore, after: loadAfter }, ...p }, null, 2) + "\n");
  console.log(`wrote ${file.pathname}`);
});
