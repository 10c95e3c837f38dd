/**
 * OPFS storage, tar archives and checkpoint bundles in Chromium (no GPU needed): the checks
 * of storage.ts in the page and in a module worker, then a bundle downloaded through
 * downloadBytes and uploaded back through pickFile.
 */
import { expect, test } from "@playwright/test";
import { readFileSync } from "node:fs";

test("OpfsStorage, archives and bundles in a page and in a worker; download and upload", async ({ page }) => {
  test.setTimeout(300_000);
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto("/test/browser/storage.html");
  await page.waitForFunction(() => (globalThis as any).__storage?.done === true, null, { timeout: 240_000 });
  const state = await page.evaluate(() => (globalThis as any).__storage);
  const results = state.results as { where: string; name: string; ok: boolean; error?: string }[];
  for (const r of results.filter((r) => !r.ok)) console.log(`FAIL [${r.where}] ${r.name}\n${r.error}`);
  expect(results.filter((r) => r.where === "page").length, "page checks").toBe(4);
  expect(results.filter((r) => r.where === "worker").length, "worker checks").toBe(4);
  expect(results.filter((r) => !r.ok).map((r) => `[${r.where}] ${r.name}`), "failures").toEqual([]);

  // Download: the bytes the browser saves are the archive the page built.
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
  expect(download.suggestedFilename()).toBe("mnist.tar");
  const saved = readFileSync((await download.path())!);
  const offered = Buffer.from(await page.evaluate(() => (globalThis as any).__storage.download as string), "base64");
  expect(saved.equals(offered), "downloaded bytes equal the archive").toBe(true);

  // Upload: the same file goes back through the file chooser into OPFS under another stem.
  page.once(
    "filechooser",
    (chooser) => chooser.setFiles({ name: "mnist.tar", mimeType: "application/x-tar", buffer: saved }),
  );
  await page.click("#upload");
  await page.waitForFunction(() => (globalThis as any).__storage.upload !== undefined, null, { timeout: 60_000 });
  const upload = await page.evaluate(() => (globalThis as any).__storage.upload);
  if (!upload.ok) console.log(upload.error);
  expect(upload).toEqual({ ok: true, name: "mnist.tar" });
  expect(errors, "page errors").toEqual([]);
});
