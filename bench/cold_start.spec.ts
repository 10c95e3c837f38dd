/**
 * Cold start in Chromium (SwiftShader without a GPU), the browser side of bench/cold_start.ts:
 * for each ddp-bench model, solo and with 2 worker ranks, a fresh browser each (so no shader
 * cache of an earlier run is warm) opens bench/cold_start.html and times, from navigation,
 * the program (imports and data), the device, the pipeline compiles and the first step, and
 * the median of the steps after it. Prints a markdown table; writes
 * bench/results/<date>-chromium-cold-start[-<BENCH_TAG>].json.
 *
 *   npx playwright test -c bench/playwright.config.ts cold_start.spec.ts
 *   (BENCH_MODELS=mlp,gpt-nano, BENCH_RANKS=1,2, BENCH_STEPS=4)
 */
import { expect, test } from "@playwright/test";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import type { ModelName } from "../src/zoo/mod.ts";
import type { ColdStart } from "./cold_start_run.ts";
import type { ColdStartPage } from "./cold_start_page.ts";
import main from "../playwright.config.ts";

type Page = import("@playwright/test").Page;
const api = (page: Page) => page.evaluate(() => (globalThis as unknown as { coldStart: ColdStartPage }).coldStart.models);

test("cold start per model in Chromium (bench/cold_start.ts)", async ({ playwright }) => {
  const rankCounts = (process.env.BENCH_RANKS ?? "1,2").split(",").map(Number);
  const steps = Number(process.env.BENCH_STEPS ?? 4);
  const load = () => loadavg().map((x) => x.toFixed(1)).join(" ");
  const loadBefore = load();
  const results: ColdStart[] = [];
  const rows: string[] = [];
  const s = (ms: number) => (ms / 1000).toFixed(1);
  let version = "?";
  /** A fresh browser on the page; `use` gets it ready, then it is closed. */
  const fresh = async <T>(use: (page: Page) => Promise<T>): Promise<T> => {
    const browser = await playwright.chromium.launch(main.use?.launchOptions);
    version = browser.version();
    try {
      const page = await browser.newPage({ baseURL: "http://127.0.0.1:5190" });
      page.on("pageerror", (e) => console.log("pageerror", e.message));
      await page.goto("/bench/cold_start.html");
      await expect(page.locator("#status")).toHaveText("ready", { timeout: 180_000 });
      return await use(page);
    } finally {
      await browser.close();
    }
  };
  const models = (process.env.BENCH_MODELS?.split(",") ?? await fresh(api)) as ModelName[];
  for (const model of models) {
    for (const ranks of rankCounts) {
      const r = await fresh((page) =>
        page.evaluate(([m, n, k]) => (globalThis as unknown as { coldStart: ColdStartPage }).coldStart.run(m as ModelName, n as number, k as number), [model, ranks, steps] as const)
      );
      results.push(r);
      const first = Math.max(...r.firstStepMs);
      const step = r.steadyStepMs.map((x) => x.toFixed(0)).join(", ");
      if (r.compiles) {
        const total = r.compiles.reduce((a, c) => a + c.ms, 0);
        rows.push(`| ${model} | 1 | ${s(first)} | ${s(r.programMs)} | ${s(r.deviceMs! - r.programMs)} | ${r.compiles.length} | ${s(total)} | ${s(first - r.deviceMs! - total)} | ${step} |`);
      } else {
        rows.push(`| ${model} | ${ranks} | ${s(first)} (ranks: ${r.firstStepMs.map(s).join(", ")}) | ${s(r.programMs)} | — | — | — | — | ${step} |`);
      }
      console.log(rows.at(-1));
    }
  }
  console.log(`\nCold start in Chromium ${version}, load ${loadBefore} before, ${load()} after; seconds from navigation, steps in ms:\n`);
  console.log("| Model | Ranks | First step | Program + data | Device | Compiles | Σ compile | Rest | Later steps (median) |\n|---|---|---|---|---|---|---|---|---|");
  for (const r of rows) console.log(r);
  const dir = new URL("./results/", import.meta.url);
  mkdirSync(dir, { recursive: true });
  const tag = process.env.BENCH_TAG;
  const file = new URL(`${new Date().toISOString().slice(0, 10)}-chromium-cold-start${tag ? `-${tag}` : ""}.json`, dir);
  writeFileSync(file, JSON.stringify({ chromium: version, loadBefore, loadAfter: load(), results }, null, 1) + "\n");
  console.log(`wrote ${file.pathname}`);
});
