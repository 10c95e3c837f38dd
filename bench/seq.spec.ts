/**
 * Runs the sequence-model bench page (bench/seq.html) in Chromium: one sitting of
 * bench/seq_contenders.ts (SEQ_MODEL char-rnn | gpt-nano, SEQ_BATCH, SEQ_SEQ, SEQ_STEPS,
 * SEQ_ROUNDS, SEQ_ONLY=ours,tf,jax, SEQ_MODES=loss-at-end,loss-every-step), prints the
 * table with the load average, writes bench/results/<date>-chromium-seq-<model>[-<BENCH_TAG>].json
 * and fails when a contender's loss does not fall.
 */
import { expect, test } from "@playwright/test";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import type { SeqContender, SeqMode, SeqModel, SeqResult, SittingOptions } from "./seq_contenders.ts";

const num = (name: string, fallback: number) => {
  const v = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(v) || v <= 0) throw new RangeError(`${name} must be a positive integer, got ${process.env[name]}`);
  return v;
};

test("sequence models: ours vs TF.js vs jax-js in Chromium", async ({ page, browser }) => {
  page.on("console", (m) => console.log(m.text()));
  page.on("pageerror", (e) => console.log("pageerror", e.message));
  const model = (process.env.SEQ_MODEL ?? "gpt-nano") as SeqModel;
  if (model !== "char-rnn" && model !== "gpt-nano") throw new RangeError(`SEQ_MODEL must be char-rnn or gpt-nano, got ${model}`);
  const options: Omit<SittingOptions, "log"> = {
    shape: { model, batch: num("SEQ_BATCH", model === "gpt-nano" ? 8 : 32), seq: num("SEQ_SEQ", 64), steps: num("SEQ_STEPS", 3) },
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
