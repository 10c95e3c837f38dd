/**
 * Runs the bench page (bench/engine.html) in Chromium (WebGPU on SwiftShader without a GPU)
 * and writes bench/results/<date>-chromium[-<BENCH_TAG>].json; prints the tables.
 * BENCH_SIZES=256,512 limits W1; BENCH_ONLY=ours,tf limits the contenders. The second test
 * times matmul tilings on first use (bench/tiling_first_use.ts; BENCH_TILINGS=8x8x8x1,…); the
 * third each contender's first MLP step in a fresh browser context (bench/first_step.ts).
 */
import { expect, test } from "@playwright/test";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { ratios, reportLines } from "./report.ts";
import type { FirstStep, SuiteOptions, SuiteResult } from "./suite.ts";
import type { BenchPage } from "./page.ts";
import { CONTENDERS, type Contender } from "./contenders.ts";

test("flodl-webgpu vs TF.js webgpu vs jax-js in Chromium", async ({ page, browser }) => {
  page.on("console", (m) => console.log(m.text()));
  page.on("pageerror", (e) => console.log("pageerror", e.message));
  const loadBefore = loadavg();
  await page.goto("/bench/engine.html");
  await expect(page.locator("#status")).toHaveText("ready", { timeout: 180_000 });
  const options: SuiteOptions = {
    sizes: process.env.BENCH_SIZES?.split(",").map(Number),
    only: process.env.BENCH_ONLY?.split(",") as SuiteOptions["only"],
  };
  const result = await page.evaluate((o) => (globalThis as unknown as { bench: { run(o: unknown): Promise<SuiteResult> } }).bench.run(o), options);
  const date = new Date().toISOString();
  const adapter = await page.evaluate(async () => {
    const a = await navigator.gpu?.requestAdapter();
    return a ? `${a.info.vendor}|${a.info.architecture}|${a.info.description}` : "none";
  });
  const out = { runtime: `chromium ${browser.version()}`, ua: await page.evaluate(() => navigator.userAgent), adapter, date, load: { before: loadBefore, after: loadavg() }, ...result, ratios: ratios(result) };
  console.log("\n" + reportLines(result, `Chromium ${browser.version()} (${adapter}), ${date.slice(0, 16)}Z`).join("\n"));
  const dir = new URL("./results/", import.meta.url);
  mkdirSync(dir, { recursive: true });
  const tag = process.env.BENCH_TAG;
  const file = new URL(`${date.slice(0, 10)}-chromium${tag ? `-${tag}` : ""}.json`, dir);
  writeFileSync(file, JSON.stringify(out, null, 2) + "\n");
  console.log(`wrote ${file.pathname} (${result.totalS} s)`);
  for (const c of Object.values(result.contenders)) {
    expect(c!.error, `${c!.name} failed`).toBeUndefined();
    for (const w of c!.w1) expect(w.ok, `${c!.name} W1 n=${w.n}: C differs from the f64 reference`).toBe(true);
    for (const w of c!.w2) expect(w.ok, `${c!.name} W2 ${w.mode}: loss ${w.firstLoss} → ${w.lastLoss} off the reference`).toBe(true);
  }
});

test("matmul tilings on first use: compile included (bench/tiling_first_use.ts)", async ({ page }) => {
  page.on("console", (m) => console.log(m.text()));
  page.on("pageerror", (e) => console.log("pageerror", e.message));
  await page.goto("/bench/engine.html");
  await expect(page.locator("#status")).toHaveText("ready", { timeout: 180_000 });
  const tilings = process.env.BENCH_TILINGS?.split(",");
  const rows = await page.evaluate((t) => (globalThis as unknown as { bench: { firstUse(t?: string[]): Promise<unknown[]> } }).bench.firstUse(t), tilings);
  console.log(`load ${loadavg().map((x) => x.toFixed(1)).join(" ")}; ${rows.length} tilings`);
  expect(rows.length).toBeGreaterThan(0);
});

test("first MLP step per contender, each in a fresh context (bench/first_step.ts)", async ({ browser }) => {
  const only = (process.env.BENCH_ONLY?.split(",") ?? CONTENDERS) as Contender[];
  const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
  const loadBefore = loadavg().map((x) => x.toFixed(1)).join(" ");
  const rows: FirstStep[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const who of only) {
      const context = await browser.newContext();
      const page = await context.newPage();
      page.on("pageerror", (e) => console.log("pageerror", e.message));
      await page.goto("/bench/engine.html");
      await expect(page.locator("#status")).toHaveText("ready", { timeout: 180_000 });
      const r = await page.evaluate((w) => (globalThis as unknown as { bench: BenchPage }).bench.firstStep(w), who);
      await context.close();
      rows.push(r);
      console.log(`${r.name}: set up ${(r.setupMs / 1e3).toFixed(1)} s, first step at ${(r.firstStepMs / 1e3).toFixed(1)} s (${r.stepMs.first.toFixed(0)} ms), then ${r.stepMs.steady} ms a step`);
    }
  }
  const s = (ms: number) => (ms / 1000).toFixed(1);
  console.log(`\nFirst MLP step in a fresh context, Chromium ${browser.version()}, load ${loadBefore} before, ${loadavg().map((x) => x.toFixed(1)).join(" ")} after; seconds since navigation:\n`);
  console.log("| Contender | Set up | First step at | First step alone | Later steps (ms) |\n|---|---|---|---|---|");
  for (const r of rows) console.log(`| ${r.name} ${r.version} | ${s(r.setupMs)} | ${s(r.firstStepMs)} | ${s(r.stepMs.first)} | ${r.stepMs.steady} |`);
  for (const r of rows) expect(r.ok, `${r.name}: W2 loss off the float64 reference`).toBe(true);
});
