/**
 * Runs the trainer bench page (bench/ddp.html) in Chromium (WebGPU on SwiftShader without a
 * GPU; every rank a Web Worker with its own device) and writes
 * bench/results/<date>-chromium-ddp[-<BENCH_TAG>].json; prints the tables.
 * BENCH_DDP_SUBSET=3200 and BENCH_DDP_RANKS=2,4 size it.
 */
import { expect, test } from "@playwright/test";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { ddpLines } from "./report.ts";
import type { DdpPageOptions, DdpPageResult } from "./ddp_page.ts";

test("the data-parallel trainer in Chromium: ranks x modes x wire, a 3x slower rank", async ({ page, browser }) => {
  page.on("console", (m) => console.log(m.text()));
  page.on("pageerror", (e) => console.log("pageerror", e.message));
  const loadBefore = loadavg();
  await page.goto("/bench/ddp.html");
  await expect(page.locator("#status")).toHaveText("ready", { timeout: 180_000 });
  const options: DdpPageOptions = {
    subset: process.env.BENCH_DDP_SUBSET ? Number(process.env.BENCH_DDP_SUBSET) : undefined,
    ranks: process.env.BENCH_DDP_RANKS?.split(",").map(Number),
  };
  const result = await page.evaluate(
    (o) => (globalThis as unknown as { benchDdp: { run(o: unknown): Promise<DdpPageResult> } }).benchDdp.run(o),
    options,
  );
  const date = new Date().toISOString();
  const out = { runtime: `chromium ${browser.version()}`, date, load: { before: loadBefore, after: loadavg() }, ...result };
  console.log("\n" + ddpLines(out, `Chromium ${browser.version()}, trainer, ${date.slice(0, 16)}Z`).join("\n"));
  const dir = new URL("./results/", import.meta.url);
  mkdirSync(dir, { recursive: true });
  const tag = process.env.BENCH_TAG;
  const file = new URL(`${date.slice(0, 10)}-chromium-ddp${tag ? `-${tag}` : ""}.json`, dir);
  writeFileSync(file, JSON.stringify(out, null, 2) + "\n");
  console.log(`wrote ${file.pathname} (${result.totalS} s)`);
  expect(result.runs.length, "every configuration ran").toBeGreaterThan(3);
});
