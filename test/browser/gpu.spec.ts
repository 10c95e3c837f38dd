/**
 * The GPU test modules of test/gpu/ (the ones `deno test` runs), run in Chromium with
 * WebGPU (SwiftShader without a GPU). One Playwright test per folder, its modules in one page
 * on one shared device, as `deno test` runs them in one process: a page per module compiled
 * the same pipelines again on SwiftShader, and that was most of this spec's time. The
 * trainer's modules (distributed/) start rank workers with devices of their own: a test each.
 */
import { expect, test } from "@playwright/test";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const root = join(import.meta.dirname, "..", "gpu");
function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    // *_deno_test.ts modules use Deno's file system: deno test runs them, not the browser.
    return statSync(p).isDirectory() ? walk(p) : name.endsWith("_test.ts") && !name.endsWith("_deno_test.ts") ? [relative(root, p)] : [];
  });
}

const groups = new Map<string, string[]>();
for (const mod of walk(root).sort()) {
  const key = mod.startsWith("distributed/") ? mod : mod.slice(0, mod.lastIndexOf("/") + 1);
  groups.set(key, [...(groups.get(key) ?? []), mod]);
}

for (const [key, mods] of groups) {
  test(`gpu/${key}${mods.length > 1 ? ` (${mods.length} modules)` : ""}`, async ({ page }) => {
    const timeout = 600_000 * Math.max(1, Math.ceil(mods.length / 6));
    test.setTimeout(timeout);
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`/test/browser/runner.html?module=${mods.map(encodeURIComponent).join(",")}`);
    await page.waitForFunction(() => (globalThis as any).__gpuTests?.done === true, null, { timeout });
    const state = await page.evaluate(() => (globalThis as any).__gpuTests);
    const failed = state.results.filter((r: { ok: boolean }) => !r.ok);
    for (const f of failed) console.log(`FAIL ${f.name}\n${f.error}`);
    // Where the time went, for whoever trims the suite next (SwiftShader is slow).
    const slow = [...state.results].sort((a: { ms: number }, b: { ms: number }) => b.ms - a.ms).slice(0, 8);
    console.log(`gpu/${key}: slowest ${slow.map((r: { name: string; ms: number }) => `${(r.ms / 1000).toFixed(1)} s ${r.name}`).join("; ")}`);
    expect(errors, "page errors").toEqual([]);
    expect(state.results.length, "tests registered").toBeGreaterThanOrEqual(mods.length);
    expect(failed.map((f: { name: string }) => f.name), `failures on ${state.adapter}`).toEqual([]);
  });
}
