/**
 * The saved dashboard of an elastic run (test/fixtures/elastic_run.ts: the real coordinator
 * and monitor over fake ranks) opened from file:// in Chromium: the "Ranks" table names
 * each rank's host, adapter and transport and its membership (lost in epoch 2 with the
 * reason, joined for epoch 3, a worker rank "from the start"), and the membership events
 * list both changes in order.
 */
import { expect, test } from "@playwright/test";
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = join(import.meta.dirname, "..", "..");

test("saved dashboard of an elastic run: ranks with host, adapter, transport; joined and lost with epoch and reason", async ({ page }) => {
  const dir = join(root, "test-results", "dashboard-elastic");
  mkdirSync(dir, { recursive: true });
  execFileSync("npx", ["deno", "run", "-A", "--no-check", "test/fixtures/elastic_run.ts", dir], { cwd: root, stdio: "pipe" });
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(pathToFileURL(join(dir, "dashboard.html")).href);
  await page.waitForFunction(() => (globalThis as any).flodlDashboard !== undefined, null, { timeout: 30_000 });
  expect(errors, "page errors").toEqual([]);

  const row = (r: number) => page.locator(`#fd-ranks tr[data-rank="${r}"] td`);
  await expect(page.locator("#fd-h-ranks")).toBeVisible();
  await expect(row(0)).toHaveText(["coordinator-host", "llvmpipe", "worker", "from the start"]);
  await expect(row(2).nth(0)).toHaveText("gpu-box.lab");
  await expect(row(2).nth(2)).toHaveText("remote");
  await expect(row(2).nth(3)).toContainText("lost in epoch 2: ");
  await expect(row(2).nth(3)).toContainText("NATS connection closed");
  await expect(row(3)).toHaveText(["laptop", "Apple M3", "remote", "joined for epoch 3"]);

  const events = page.locator("#fd-membership tr[data-kind]");
  await expect(events).toHaveCount(2);
  await expect(events.nth(0).locator("td").nth(2)).toHaveText("lost");
  await expect(events.nth(1).locator("td").nth(2)).toHaveText("joined");
  await expect(events.nth(1).locator("td").nth(3)).toHaveText("3");
  await expect(events.nth(1).locator("td").nth(4)).toHaveText("laptop: Apple M3 (remote)");
});
