/**
 * The data plane in Chromium (dataplane.ts says what each check does): a pack file of the
 * tiny program's blobs, written here by test/util/write_tiny_pack.ts into test-results/ and served by
 * Vite with Range support, read by byte ranges in the page and in rank workers; the RAM
 * cache and the OPFS disk stage, the device pool, a full storage quota, an unusable
 * diskStageDir; and nccl-* on a page without cross-origin isolation.
 */
import { expect, type Page, test } from "@playwright/test";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..", "..");
const PACK = "test-results/flodl-packs/tiny.safetensors";

test.beforeAll(() => {
  execFileSync("deno", ["run", "-A", "--no-check", "test/util/write_tiny_pack.ts", PACK], { cwd: ROOT, stdio: "inherit" });
});

/** Open the page on one check; return its outcome and every console warning (page and rank workers). */
async function runCheck(page: Page, check: string, query = "") {
  const warnings: string[] = [];
  const errors: string[] = [];
  const consoleLines: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "warning") warnings.push(m.text());
    consoleLines.push(`${m.worker() ? "worker" : "page"} ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`/test/browser/dataplane.html?check=${check}&pack=/${PACK}${query}`);
  try {
    await page.waitForFunction(() => (globalThis as any).__dataplane?.done === true, null, { timeout: Number(process.env.DATAPLANE_WAIT_MS ?? 540_000) });
  } catch (e) {
    console.log(`${check} did not finish; page log:\n${await page.locator("#log").textContent()}\nconsole:\n${consoleLines.slice(-40).join("\n")}`);
    throw e;
  }
  const r = await page.evaluate(() => (globalThis as any).__dataplane);
  if (!r.ok) console.log(`FAIL ${check}\n${r.error}\n${JSON.stringify(r.info)}`);
  expect(r.error, `${check}: error`).toBeUndefined();
  expect(r.ok, `${check}: ok`).toBe(true);
  expect(errors, "page errors").toEqual([]);
  return { info: r.info, warnings };
}

test("HTTP Range pack source: exact bytes in the page; a server that ignores Range and a missing file fail naming the URL", async ({ page }) => {
  test.setTimeout(120_000);
  // A server that ignores Range: the whole file with 200, whatever the request asks.
  const bytes = readFileSync(join(ROOT, PACK));
  await page.route("**/no-range/**", (route) =>
    route.fulfill({ status: 200, body: route.request().method() === "HEAD" ? "" : bytes, headers: { "content-length": String(bytes.length) } }));
  await page.route("**/missing/**", (route) => route.fulfill({ status: 404, body: "" }));
  const { info } = await runCheck(page, "range");
  console.log(info.rangeError);
});

test("2 rank workers train from the served pack through a small RAM cache and an OPFS disk stage, as from memory; each sample once; the stage is removed", async ({ page }) => {
  test.setTimeout(600_000);
  const { info, warnings } = await runCheck(page, "tiers");
  console.log(JSON.stringify(info.counters));
  expect(warnings.filter((w) => w.includes("diskStage")), "no diskStage warning").toEqual([]);
});

test("vramPool from the served pack (one rank): later epochs gather on the device, losses as from memory", async ({ page }) => {
  test.setTimeout(600_000);
  const { info } = await runCheck(page, "vram");
  console.log(JSON.stringify(info.counters));
});

test("a full storage quota: each rank warns naming diskStage and stages what fits (or stops staging); training is exact", async ({ page, context }) => {
  test.setTimeout(600_000);
  const cdp = await context.newCDPSession(page);
  const origin = new URL(test.info().project.use.baseURL!).origin;
  // A quota a few KB above what the origin uses: far below the 1 GB diskStage asks.
  await page.goto("/test/browser/dataplane.html?check=none");
  const usage = await page.evaluate(async () => (await navigator.storage.estimate()).usage ?? 0);
  await cdp.send("Storage.overrideQuotaForOrigin", { origin, quotaSize: usage + 4096 });
  try {
    const { info, warnings } = await runCheck(page, "quota");
    console.log(JSON.stringify(info), warnings);
    // Each rank says, naming diskStage, that it stages less: capped by the quota estimate()
    // reports, or (Chromium's estimate in a worker may not show an overridden quota) stopped
    // at the first write the quota refused.
    for (const rank of [0, 1]) {
      expect(
        warnings.some((w) =>
          w.includes(`rank ${rank}: diskStage asks 1073741824 bytes, the origin's storage quota leaves`) ||
          (w.startsWith("diskStage: writing") && w.includes(`rank${rank}.stage failed`) && w.includes("staging stops"))
        ),
        `rank ${rank} warns naming diskStage: ${JSON.stringify(warnings)}`,
      ).toBe(true);
    }
  } finally {
    await cdp.send("Storage.overrideQuotaForOrigin", { origin });
  }
});

test("an unusable diskStageDir fails run() naming the knob; a negative diskStage too", async ({ page }) => {
  test.setTimeout(120_000);
  const { info } = await runCheck(page, "unwritable");
  console.log(info.error);
});

test("nccl-* on a page without cross-origin isolation: run() fails naming crossOriginIsolated and both headers", async ({ page }) => {
  test.setTimeout(120_000);
  // The same page with the COOP/COEP headers stripped.
  await page.route((url) => url.pathname.endsWith("/test/browser/dataplane.html"), async (route) => {
    const res = await route.fetch();
    const headers = { ...res.headers() };
    delete headers["cross-origin-opener-policy"];
    delete headers["cross-origin-embedder-policy"];
    await route.fulfill({ response: res, headers });
  });
  const { info } = await runCheck(page, "no-isolation");
  console.log(info.error);
});
