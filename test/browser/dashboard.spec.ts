/**
 * The saved dashboard (src/monitor/dashboard_html.ts) opened from file:// in Chromium:
 * nothing leaves file://, the charts render, the three synthetic epochs show, no page
 * errors, every theme. Plus the Vite side: the same assets arrive through
 * import.meta.glob, and the live view (dashboard_live.ts) renders with npm's uPlot.
 */
import { expect, type Page, test } from "@playwright/test";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { viewScript } from "../../src/monitor/dashboard_script.ts";

const root = join(import.meta.dirname, "..", "..");
const outDir = join(root, "test-results", "dashboard");
/** Charts of the synthetic run: loss per epoch / batch / reduce, eval, throughput, share, reduce timings, wire bytes. */
const CHARTS = 8;

function makeDashboard(theme: string): string {
  mkdirSync(outDir, { recursive: true });
  const out = join(outDir, `dashboard-${theme}.html`);
  execFileSync("npx", ["deno", "run", "-A", "test/fixtures/make_dashboard.ts", out, theme], { cwd: root, stdio: "pipe" });
  return out;
}

/** Open a saved dashboard, recording every request and every error. */
async function open(page: Page, file: string) {
  const requests: string[] = [];
  const errors: string[] = [];
  page.on("request", (r) => requests.push(r.url()));
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  await page.goto(pathToFileURL(file).href);
  await page.waitForFunction(() => (globalThis as any).flodlDashboard !== undefined, null, { timeout: 30_000 });
  return { requests, errors };
}

const background = (page: Page) =>
  page.evaluate(() => getComputedStyle(document.querySelector(".fd")!).backgroundColor);
const DARK_BG = "rgb(13, 17, 23)";
const LIGHT_BG = "rgb(255, 255, 255)";

for (const theme of ["light", "dark", "auto"]) {
  test(`saved dashboard (${theme}) opens from file:// offline with charts, 3 epochs, no errors`, async ({ page }) => {
    const file = makeDashboard(theme);
    const { requests, errors } = await open(page, file);

    expect(requests.filter((u) => !u.startsWith("file://") && !u.startsWith("data:")), "requests leaving file://").toEqual([]);
    expect(errors, "page errors").toEqual([]);

    await expect(page.locator(".uplot")).toHaveCount(CHARTS);
    await expect(page.locator(".uplot canvas")).toHaveCount(CHARTS);
    await expect(page.locator("#fd-summary tr[data-key=epochs] td")).toHaveText("3");
    await expect(page.locator("#fd-loss-epoch")).toHaveAttribute("data-points", "3");
    await expect(page.locator("#fd-eval")).toHaveAttribute("data-points", "3");
    await expect(page.locator("h1")).toHaveText("synthetic run");
    for (const c of await page.locator("figure.fd-chart").all()) {
      await expect(c.locator(".fd-plot")).toHaveAttribute("role", "img");
      expect(await c.locator(".fd-plot").getAttribute("aria-label")).toBeTruthy();
    }
    // the swimlane drew something
    const inked = await page.evaluate(() => {
      const c = document.querySelector("canvas.fd-swimlane") as HTMLCanvasElement;
      const px = c.getContext("2d")!.getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < px.length; i += 4) if (px[i] > 0) n++;
      return n;
    });
    expect(inked, "swimlane pixels drawn").toBeGreaterThan(1000);
    // Each rank lane is covered by its compute, throttle, reduce and idle bands along the run
    // (the lanes were empty when only timeline events fed them).
    const laneCover = await page.evaluate(() => {
      const c = document.querySelector("canvas.fd-swimlane") as HTMLCanvasElement;
      const dpr = c.width / c.clientWidth;
      const g = c.getContext("2d")!;
      // drawSwimlane: lanes 26 px from y = 16, coordinator first; labels take the first 96 px
      return [1, 2].map((lane) => {
        const y = Math.round((16 + lane * 26 + 13) * dpr);
        const x0 = Math.round(100 * dpr), x1 = c.width - Math.round(12 * dpr);
        const px = g.getImageData(x0, y, x1 - x0, 1).data;
        let n = 0;
        for (let i = 3; i < px.length; i += 4) if (px[i] > 0) n++;
        return n / (x1 - x0);
      });
    });
    for (const [r, f] of laneCover.entries()) expect(f, `rank ${r} lane covered`).toBeGreaterThan(0.9);
    // The eval chart names its metric and its axis fits the accuracies (0.6 to 0.8), inside [0, 1].
    await expect(page.locator("#fd-cap-eval")).toHaveText("Eval accuracy per epoch");
    const [lo, hi] = (await page.locator("#fd-eval").getAttribute("data-y-range"))!.split(",").map(Number);
    expect(lo >= 0.5 && lo <= 0.6 && hi >= 0.8 && hi <= 0.9, `eval y range [${lo}, ${hi}]`).toBe(true);
    // Throughput in samples/s in the record tree as in the charts (192 samples in 500 ms).
    await expect(page.locator("#fd-tree th", { hasText: "throughput (samples/s)" })).toHaveCount(1);
    await expect(page.locator("#fd-tree tr", { hasText: "root/local/rank0" }).locator("td[data-key=throughput]"))
      .toHaveText("384");
    // Adapters are named once, in the subtitle; legends say "rank r".
    await expect(page.locator(".fd-sub")).toContainText("rank 0 on lavapipe #0");
    for (const t of await page.locator(".u-legend").allInnerTexts()) expect(t).not.toContain("lavapipe");
    await expect(page.locator("#fd-wire-bytes .u-legend")).toContainText("up: ranks → coordinator");
    await expect(page.locator("#fd-wire-bytes .u-legend")).toContainText("down: consensus → ranks");
    // the drift alert of round 5
    await expect(page.locator("#fd-alerts tr[data-sev=warn]")).toHaveCount(1);

    if (theme === "light") {
      await page.emulateMedia({ colorScheme: "dark" });
      expect(await background(page), "light stays light").toBe(LIGHT_BG);
    } else if (theme === "dark") {
      await page.emulateMedia({ colorScheme: "light" });
      expect(await background(page), "dark stays dark").toBe(DARK_BG);
    } else {
      await page.emulateMedia({ colorScheme: "dark" });
      expect(await background(page), "auto follows dark").toBe(DARK_BG);
      await page.emulateMedia({ colorScheme: "light" });
      expect(await background(page), "auto follows light").toBe(LIGHT_BG);
      await expect(page.locator(".uplot canvas")).toHaveCount(CHARTS); // rebuilt, not duplicated
    }
    expect(errors, "page errors after theme changes").toEqual([]);
  });
}

test("under Vite the assets arrive by import.meta.glob and the live view renders with npm uPlot", async ({ page }) => {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  // Any page of the dev server will do; the runner with no matching module runs nothing.
  // The first import of npm "uplot" may make Vite optimise it and reload the page: retry.
  for (let i = 0;; i++) {
    await page.goto("/test/browser/runner.html?module=none");
    try {
      await page.evaluate(() => import("/src/monitor/dashboard_live.ts" as string).then(() => true));
      await page.waitForTimeout(500);
      if (await page.evaluate(() => import("/src/monitor/dashboard_live.ts" as string).then(() => true))) break;
    } catch (e) {
      if (i >= 3 || !/context was destroyed|navigation/i.test(String(e))) throw e;
    }
  }
  errors.length = 0;
  const got = await page.evaluate(async () => {
    const m = await import("/src/monitor/mod.ts" as string);
    const live = await import("/src/monitor/dashboard_live.ts" as string);
    const a = m.dashboardAssets();
    const html: string = m.renderDashboardHtml({ worldSize: 2, epochs: [] }, { theme: "dark" });
    const div = document.createElement("div");
    div.style.width = "900px";
    document.body.append(div);
    const view = new live.DashboardView(div, { theme: "light" });
    view.setData({ worldSize: 2, epochs: [] });
    for (let e = 0; e < 3; e++) {
      for (let s = 0; s < 4; s++) {
        for (let r = 0; r < 2; r++) view.appendBatch({ rank: r, epoch: e, loss: 1 / (1 + e + s), ms: 5 });
      }
      view.appendReduce({ round: e, epoch: e, ms: 5, averageMs: 2, bytesUp: 100, bytesDown: 100, anchor: 2 });
      view.appendEpoch({
        epoch: e,
        avgLoss: 1 / (1 + e),
        epochMs: 100,
        perRankLoss: [1 / (1 + e), 1.1 / (1 + e)],
        perRankSamples: [64, 64],
        perRankThroughput: [0.64, 0.6],
        perRankBatchShare: [0.5, 0.5],
      });
      view.appendEval(e, 0.5 + e / 10);
    }
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    return {
      viewJs: a.viewJs as string,
      uplotJs: a.uplotJs as string,
      uplotCss: a.uplotCss as string,
      htmlHasUplot: html.includes("var uPlot="),
      charts: div.querySelectorAll(".uplot canvas").length,
      epochs: div.querySelector("#fd-summary tr[data-key=epochs] td")?.textContent,
      lanes: !(div.querySelector("#fd-timeline")!.closest("section") as HTMLElement).hidden,
    };
  });
  expect(errors, "page errors").toEqual([]);
  const disk = (p: string) => readFileSync(join(root, p), "utf8");
  expect(got.viewJs, "view script through Vite = the modules on disk, joined").toBe(viewScript((f) => disk(`src/monitor/${f}`)));
  expect(got.uplotJs, "uPlot through Vite = node_modules file").toBe(disk("node_modules/uplot/dist/uPlot.iife.min.js"));
  expect(got.uplotCss).toBe(disk("node_modules/uplot/dist/uPlot.min.css"));
  expect(got.htmlHasUplot).toBe(true);
  expect(got.charts, "live charts (no timeline/records: 8 uPlot charts)").toBe(CHARTS);
  expect(got.epochs).toBe("3");
  expect(got.lanes, "live batches alone show the rank lanes").toBe(true);
});
