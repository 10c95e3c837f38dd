/**
 * A Vite app outside the repository that installed the packed package (test/consumer/
 * vite-app, made by test/consumer/project.ts): its only configuration is the plugin line the
 * README gives, its program is imported the plain way (`import { builder } from
 * "./program.ts"`), and it trains on 2 worker ranks in Chromium from the dev server, then
 * from `vite build` + `vite preview`. Then the plain way: a page and a program module that
 * import `node_modules/flodl-webgpu/lib/index.js` by path, from a static file server with
 * no bundler and no special headers (test/consumer/browser-module).
 */
import { expect, type Page, test } from "@playwright/test";
import { type ChildProcess, spawn } from "node:child_process";
import { createReadStream, existsSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, normalize } from "node:path";
import { PORT } from "../../playwright.config.ts";
import { consumerProject, pinned, removeProject, run } from "../consumer/project.ts";

/** Past the demo spec's PORT + 1 and PORT + 2. */
const APP_PORT = PORT + 3;
const SAMPLES = 1024;

let dir = "";
test.beforeAll(() => {
  dir = consumerProject("vite-app", [pinned("vite")]);
});
test.afterAll(() => removeProject(dir));

/** Start `vite <args>` in the app and wait until it answers; the caller stops it by its pid. */
async function serve(args: string[]): Promise<ChildProcess> {
  const vite = spawn(join(dir, "node_modules", ".bin", "vite"), [
    ...args,
    "--port",
    String(APP_PORT),
    "--strictPort",
    "--host",
    "127.0.0.1",
  ], {
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  vite.stdout!.on("data", (d) => (output += d));
  vite.stderr!.on("data", (d) => (output += d));
  for (let i = 0; i < 300; i++) {
    if (vite.exitCode !== null) throw new Error(`vite ${args.join(" ")} exited ${vite.exitCode}:\n${output}`);
    if (await fetch(`http://127.0.0.1:${APP_PORT}/`).then((r) => r.ok, () => false)) return vite;
    await new Promise((r) => setTimeout(r, 100));
  }
  vite.kill();
  throw new Error(`vite ${args.join(" ")} did not answer in 30 s:\n${output}`);
}

function stop(vite: ChildProcess): Promise<void> {
  if (vite.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    vite.once("exit", () => resolve());
    vite.kill();
  });
}

/** Open the app, wait for its run to end, check both ranks trained and the loss fell. */
async function trains(page: Page, path = "/"): Promise<void> {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("response", (r) => {
    if (r.status() >= 400 && !r.url().endsWith("/favicon.ico")) errors.push(`HTTP ${r.status()} ${r.url()}`);
  });
  await page.goto(`http://127.0.0.1:${APP_PORT}${path}`);
  const status = page.locator("#status");
  await expect(status).toHaveAttribute("data-state", /^(done|failed)$/, { timeout: 300_000 });
  expect(await status.textContent()).toBe("Trained 4 tensors");
  const epochs = ((await page.locator("#log").textContent()) ?? "").trim().split("\n").map((l) => JSON.parse(l)) as {
    epoch: number;
    loss: number;
    samplesPerRank: number[];
  }[];
  expect(epochs.map((e) => e.epoch)).toEqual([0, 1, 2, 3]);
  for (const e of epochs) expect(e.samplesPerRank.reduce((a, b) => a + b), `epoch ${e.epoch}`).toBe(SAMPLES);
  const perRank = [0, 1].map((r) => epochs.reduce((s, e) => s + e.samplesPerRank[r], 0));
  expect(perRank.every((n) => n > 0), `both ranks trained: ${perRank}`).toBe(true);
  expect(epochs[3].loss, `the loss falls: ${epochs.map((e) => e.loss.toFixed(3))}`).toBeLessThan(epochs[0].loss / 2);
  expect(errors).toEqual([]);
}

test("a Vite app that installed the package trains on 2 ranks from the dev server", async ({ page }) => {
  const vite = await serve([]);
  try {
    await trains(page);
    expect(await page.evaluate(() => crossOriginIsolated), "the plugin's isolation headers").toBe(true);
  } finally {
    await stop(vite);
  }
});

test("the same app trains from vite build + vite preview", async ({ page }) => {
  const started = Date.now();
  run(join(dir, "node_modules", ".bin", "vite"), ["build", "--logLevel", "warn"], dir);
  console.log(`consumer vite build: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  expect(existsSync(join(dir, "dist", "_headers")), "the plugin writes _headers").toBe(true);
  const vite = await serve(["preview"]);
  try {
    await trains(page);
  } finally {
    await stop(vite);
  }
});

const TYPES: Record<string, string> = { ".html": "text/html", ".js": "text/javascript", ".json": "application/json" };

test("a plain page imports the package's modules by path and trains on 2 ranks", async ({ page }) => {
  const site = consumerProject("browser-module");
  // Any static server: files as they are, no headers beyond the content type.
  const server = createServer((req, res) => {
    const file = join(site, normalize(decodeURIComponent(new URL(req.url!, "http://x").pathname)));
    const path = existsSync(file) && statSync(file).isDirectory() ? join(file, "index.html") : file;
    if (!path.startsWith(site) || !existsSync(path)) return res.writeHead(404).end();
    res.writeHead(200, { "Content-Type": TYPES[extname(path)] ?? "application/octet-stream" });
    createReadStream(path).pipe(res);
  });
  await new Promise<void>((r) => server.listen(APP_PORT, "127.0.0.1", r));
  try {
    await trains(page);
  } finally {
    await new Promise((r) => server.close(r));
    removeProject(site);
  }
});
