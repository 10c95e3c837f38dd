/**
 * The GPU test modules of test/gpu/ (the ones `deno test` runs), run in Chromium with
 * WebGPU (SwiftShader without a GPU): one Playwright test per module.
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

for (const mod of walk(root).sort()) {
  test(`gpu/${mod}`, async ({ page }) => {
    test.setTimeout(600_000);
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`/test/browser/runner.html?module=${encodeURIComponent(mod)}`);
    await page.waitForFunction(() => (globalThis as any).__gpuTests?.done === true, null, { timeout: 600_000 });
    const state = await page.evaluate(() => (globalThis as any).__gpuTests);
    const failed = state.results.filter((r: { ok: boolean }) => !r.ok);
    for (const f of failed) console.log(`FAIL ${f.name}\n${f.error}`);
    expect(errors, "page errors").toEqual([]);
    expect(state.results.length, "tests registered").toBeGreaterThan(0);
    expect(failed.map((f: { name: string }) => f.name), `failures on ${state.adapter}`).toEqual([]);
  });
}
