/**
 * The demo page (index.html, demo/) end to end in Chromium, from a production build
 * (`vite build` + `vite preview`, what a deployment serves): train a small MLP on 2 ranks,
 * watch the live charts gain points and an eval accuracy arrive, see the 3-D drift view
 * draw, ask the trained model about a drawn digit, download the dashboard (opened again from
 * file://) and the model (safetensors), save the README screenshots, check the narrow
 * layout, and run a second training in the same page that it stops; then gpt-nano's text
 * samples. The dev server's side (Vite serving src/ and the rank workers unbundled) is what
 * every other spec runs on: the join spec opens this same page there.
 *
 * SwiftShader on 2 cores is slow: a few hundred samples per rank, 1 epoch, long timeouts.
 */
import { expect, type Page, test } from "@playwright/test";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import config, { PORT } from "../../playwright.config.ts";

const root = join(import.meta.dirname, "..", "..");
const outDir = join(root, "test-results", "demo");
const distDir = join(outDir, "dist");
// The README's screenshots are refreshed with UPDATE_SCREENSHOTS=1; a normal run keeps its
// shots under test-results/ so `npm test` leaves the tree clean.
const shotsDir = process.env.UPDATE_SCREENSHOTS ? join(root, "docs", "screenshots") : join(root, "test-results", "screenshots");
/** `vite preview`'s port: PORT + 1 is the join spec's dev server (playwright.config.ts). */
const PREVIEW_PORT = PORT + 2;
const PREVIEW = `http://127.0.0.1:${PREVIEW_PORT}`;
/** 600 training images per rank, 300 test images. */
const QUERY = "?subset=1200&test=300";
const PROGRAM = process.env.DEMO_PROGRAM ?? "mlp";
/** Accuracy the MLP must beat after one epoch on 1200 images (chance is 0.1). */
const MIN_ACCURACY = 0.5;

// NOTE: in headless Chromium on SwiftShader, presenting a WebGPU canvas loses the GPU
// device (and wipes every 2-D canvas) unless the compositor's GL runs on SwiftShader too.
const launch = config.use?.launchOptions ?? {};
if (!launch.args?.includes("--use-angle=swiftshader")) throw new Error("playwright.config.ts lacks --use-angle=swiftshader");
test.use({ viewport: { width: 1280, height: 800 } });

interface DemoState {
  state: string;
  epochs: number;
  reduces: number;
  evals: { epoch: number; value: number }[];
  probabilities: number[] | null;
  error: string;
}

const demoState = (page: Page) =>
  page.evaluate(() => {
    const d = (globalThis as any).__demo;
    return {
      state: d.state,
      epochs: d.epochs,
      reduces: d.reduces,
      evals: d.evals,
      probabilities: d.probabilities,
      error: d.error,
    } as DemoState;
  });

const points = (page: Page, chart: string) =>
  page.locator(`#fd-${chart}`).getAttribute("data-points").then((v) => Number(v ?? 0));

/** Record page errors (console errors included). */
function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  return errors;
}

/** Open the page and wait until it says it is ready (adapter found, 3-D view up). */
async function open(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/${QUERY}`);
  await expect(page.locator("#status")).toHaveText(/^Ready/, { timeout: 60_000 });
  await expect(page.locator("#gpu")).toHaveText(/^GPU adapter: \S/);
  expect(await page.evaluate(() => (globalThis as any).__demo.drift !== undefined), "3-D view created").toBe(true);
  expect(await page.evaluate(() => (globalThis as any).__demo.drift.probe()), "3-D view before training").toBe(0);
  // Every option's text fits its dropdown ("cpu-cadence: ElChe cadenc" did not).
  const cut = await page.evaluate(() =>
    [...document.querySelectorAll("select")].flatMap((sel) => {
      const cs = getComputedStyle(sel);
      const g = document.createElement("canvas").getContext("2d")!;
      g.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      const room = sel.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20; // 20: the arrow
      return [...sel.options].filter((o) => g.measureText(o.text).width > room).map((o) => `${sel.id}: ${o.text}`);
    })
  );
  expect(cut, "option texts wider than their dropdown").toEqual([]);
  // Remember every value the batch-loss chart shows, to see it grow during the run.
  await page.evaluate(() => {
    const seen: number[] = ((globalThis as any).__seen = []);
    new MutationObserver(() => {
      const v = Number(document.querySelector("#fd-loss-batch")?.getAttribute("data-points") ?? 0);
      if (seen[seen.length - 1] !== v) seen.push(v);
    }).observe(document.getElementById("dashboard")!, { subtree: true, attributes: true, attributeFilter: ["data-points"] });
  });
}

interface RunOptions {
  ranks: number;
  mode: string;
  epochs: number;
  slow?: { rank: number; factor: number };
}

/** Set the controls with the keyboard-reachable form and start. */
async function startRun(page: Page, o: RunOptions): Promise<void> {
  await page.selectOption("#program", PROGRAM);
  await page.fill("#ranks", String(o.ranks));
  await page.selectOption("#mode", o.mode);
  await page.fill("#epochs", String(o.epochs));
  await page.fill("#batch", "32");
  await page.fill("#anchor", "3");
  await page.check("#bf16");
  await page.selectOption("#slow-rank", o.slow ? String(o.slow.rank) : "");
  if (o.slow) await page.fill("#slow-factor", String(o.slow.factor));
  await page.evaluate(() => ((globalThis as any).__seen.length = 0));
  await page.click("#start");
  await expect(page.locator("#stop")).toBeEnabled();
}

/**
 * While the ranks compile and the first epoch runs, the status counts (it said only
 * "epoch 0/2…" for a minute), and the live charts are in view at 1280×800.
 */
async function checkWarmUp(page: Page): Promise<void> {
  // (A fast GPU may finish before a poll sees a line: "Done after" is accepted then.)
  await expect(page.locator("#status")).toHaveText(/^(Warming up: \d+ ranks compile|Epoch 1\/\d+ · batches: rank 0 \d+|Done after)/, {
    timeout: 120_000,
  });
  await expect(page.locator("#status")).toHaveText(/^(Epoch \d+\/\d+ · batches: rank 0 \d+, rank 1 \d+ · \d+ samples\/s|Done after)/, {
    timeout: 300_000,
  });
  // The view draws on animation frames, which wait while SwiftShader compiles the other rank's pipelines.
  await expect(page.locator("#fd-loss-batch")).toBeVisible({ timeout: 120_000 });
  await page.evaluate(() => window.scrollTo(0, 0));
  const box = (await page.locator("#fd-loss-batch").boundingBox())!;
  expect(box.y + box.height / 2, "the batch-loss chart's middle is above the fold at 1280×800").toBeLessThan(800);
}

const settled = (page: Page) =>
  page.waitForFunction(() => ["done", "stopped", "error"].includes((globalThis as any).__demo.state), null, {
    timeout: 540_000,
    polling: 1000,
  });

/** After a finished run: charts, eval accuracy, the 3-D view, devices. */
async function checkRun(page: Page, epochs: number): Promise<DemoState> {
  const s = await demoState(page);
  expect(s.error, "page error message").toBe("");
  expect(s.state).toBe("done");
  expect(s.epochs).toBe(epochs);
  // The charts gained points while training, and hold the whole run now.
  const seen = await page.evaluate(() => (globalThis as any).__seen as number[]);
  expect(seen.length, `batch-loss point counts seen: ${seen}`).toBeGreaterThanOrEqual(2);
  expect(seen[seen.length - 1]).toBeGreaterThan(seen[0]);
  await expect(page.locator("#fd-summary tr[data-key=epochs] td")).toHaveText(String(epochs));
  expect(await points(page, "loss-epoch")).toBe(epochs);
  expect(await points(page, "loss-batch")).toBeGreaterThanOrEqual(2);
  expect(await points(page, "eval")).toBe(s.evals.length);
  for (const chart of ["throughput", "batch-share"]) expect(await points(page, chart), chart).toBe(epochs);
  for (const chart of ["loss-reduce", "reduce-timing", "wire-bytes"]) {
    expect(await points(page, chart), chart).toBe(s.reduces);
  }
  expect(s.reduces).toBeGreaterThanOrEqual(1);
  // An eval accuracy, well above chance.
  expect(s.evals.length).toBeGreaterThanOrEqual(1);
  const acc = s.evals[s.evals.length - 1].value;
  expect(acc).toBeGreaterThan(MIN_ACCURACY);
  expect(acc).toBeLessThanOrEqual(1);
  await expect(page.locator("#accuracy")).toHaveText(/Test accuracy after epoch \d+: \d+\.\d%/);
  await expect(page.locator("#devices")).toHaveText(/^Ranks: 0: .+; 1: .+/);
  // The 3-D view got the frames of the reduces (all but zero-mass ones) and its render
  // pipeline draws the ranks.
  const drift = await page.evaluate(() => ({ ...(globalThis as any).__demo.drift.stats }));
  expect(drift.reduces).toBeGreaterThanOrEqual(1);
  expect(drift.reduces).toBeLessThanOrEqual(s.reduces);
  expect(drift.frames).toBeGreaterThan(0);
  const inked = await page.evaluate(() => (globalThis as any).__demo.drift.probe());
  expect(inked, "pixels the 3-D view drew for ranks and consensus").toBeGreaterThan(100);
  console.log(
    `[demo] ${epochs} epoch(s), ${s.reduces} reduces, accuracy ${(acc * 100).toFixed(1)}%, ` +
      `batch-loss points seen ${seen.join(",")}, 3-D view ${drift.frames} frames, ${inked} px`,
  );
  return s;
}

/** Draw a 7 on the pad and read the ten probabilities. */
async function drawDigit(page: Page): Promise<number[]> {
  await page.click("#clear");
  const box = (await page.locator("#pad").boundingBox())!;
  const at = (fx: number, fy: number) => [box.x + fx * box.width, box.y + fy * box.height] as const;
  await page.mouse.move(...at(0.25, 0.22));
  await page.mouse.down();
  await page.mouse.move(...at(0.75, 0.22), { steps: 8 });
  await page.mouse.move(...at(0.45, 0.82), { steps: 8 });
  await page.mouse.up();
  await page.waitForFunction(() => (globalThis as any).__demo.probabilities !== null, null, { timeout: 60_000 });
  const p = (await demoState(page)).probabilities!;
  expect(p.length).toBe(10);
  for (const v of p) expect(v >= 0 && v <= 1, `probability ${v} in [0, 1]`).toBe(true);
  expect(Math.abs(p.reduce((a, b) => a + b, 0) - 1)).toBeLessThanOrEqual(1e-3);
  await expect(page.locator("#probs li[data-p]")).toHaveCount(10);
  await expect(page.locator("#probs .probs-note")).toHaveText(/^The model says \d \(\d+\.\d%\)\.$/);
  // The 28×28 preview holds the centred digit.
  const ink = await page.evaluate(() => {
    const c = document.getElementById("pad-preview") as HTMLCanvasElement;
    const px = c.getContext("2d")!.getImageData(0, 0, 28, 28).data;
    let n = 0;
    for (let i = 0; i < px.length; i += 4) if (px[i] > 64) n++;
    return n;
  });
  expect(ink, "inked pixels of the 28×28 input").toBeGreaterThan(20);
  return p;
}

/** Download the dashboard, open it from file:// and count its epochs. */
async function checkDashboardDownload(page: Page, label: string, epochs: number, evals: number): Promise<void> {
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download-dashboard")]);
  expect(download.suggestedFilename()).toMatch(/-dashboard\.html$/);
  const file = join(outDir, `${label}-dashboard.html`);
  await download.saveAs(file);
  const saved = await page.context().newPage();
  const errors = watchErrors(saved);
  await saved.goto(pathToFileURL(file).href);
  await saved.waitForFunction(() => (globalThis as any).flodlDashboard !== undefined, null, { timeout: 30_000 });
  await expect(saved.locator("#fd-summary tr[data-key=epochs] td")).toHaveText(String(epochs));
  await expect(saved.locator("h1")).toHaveText(`MNIST ${PROGRAM} · cpu-cadence · 2 ranks`);
  await expect(saved.locator("#fd-cap-eval")).toHaveText("Eval accuracy per epoch");
  expect(await points(saved, "loss-epoch")).toBe(epochs);
  expect(await points(saved, "eval")).toBe(evals);
  expect(errors, "errors in the saved dashboard").toEqual([]);
  await saved.close();
}

/** Download the model and read it back as safetensors: every tensor, f32, sizes matching. */
async function checkModelDownload(page: Page, label: string): Promise<void> {
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download-model")]);
  expect(download.suggestedFilename()).toMatch(/\.safetensors$/);
  const file = join(outDir, `${label}.safetensors`);
  await download.saveAs(file);
  const bytes = readFileSync(file);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString("utf8"));
  const names = Object.keys(header).filter((k) => k !== "__metadata__");
  // The same tensors, names and shapes as the run's TrainedState (parameters, then buffers).
  const trained = await page.evaluate(() => (globalThis as any).__demo.trained as { name: string; shape: number[] }[]);
  expect(names).toEqual(trained.map((t) => t.name));
  for (const t of trained) expect(header[t.name].shape, t.name).toEqual(t.shape);
  expect(header.__metadata__?.model).toBe(PROGRAM);
  let end = 0;
  for (const k of names) {
    const t = header[k];
    expect(t.dtype).toBe("F32");
    const count = t.shape.reduce((a: number, b: number) => a * b, 1);
    expect(t.data_offsets[1] - t.data_offsets[0], `${k} bytes`).toBe(count * 4);
    end = Math.max(end, t.data_offsets[1]);
  }
  expect(bytes.length).toBe(8 + n + end);
}

/** The whole flow on one server. */
async function flow(page: Page, base: string, label: string): Promise<void> {
  mkdirSync(outDir, { recursive: true });
  const errors = watchErrors(page);
  await open(page, base);
  await startRun(page, { ranks: 2, mode: "cpu-cadence", epochs: 1 });
  await checkWarmUp(page);
  await settled(page);
  const first = await checkRun(page, 1);
  await drawDigit(page);
  await checkDashboardDownload(page, label, 1, first.evals.length);
  await checkModelDownload(page, label);
  expect(errors, "page errors").toEqual([]);
}

test("dev server: data sizes are controls, 'Join a run' is folded apart, each rank's share says why", async ({ page }) => {
  test.setTimeout(400_000);
  const errors = watchErrors(page);
  await page.goto(`/?subset=640&test=100`);
  await expect(page.locator("#status")).toHaveText(/^Ready/, { timeout: 120_000 });
  // "Join a run" is its own section after the training form, folded until opened.
  await expect(page.locator("#join-section")).not.toHaveAttribute("open", /.*/);
  await expect(page.locator("#join-token")).toBeHidden();
  expect(await page.locator("#controls #join-token").count(), "the join box is not a training control").toBe(0);
  // The data sizes: preset from the address, changed on the page (the address follows).
  await expect(page.locator("#subset")).toHaveValue("640");
  await expect(page.locator("#test-size")).toHaveValue("100");
  await page.fill("#subset", "960");
  await page.locator("#subset").dispatchEvent("change");
  await expect(page).toHaveURL(/[?&]subset=960(&|$)/);
  await expect(page.locator("#data-note")).toContainText("The first 960 of MNIST's 60000 training images");
  // A 2-rank run: each rank's share and speed, and a line saying why they differ (or not).
  await page.selectOption("#program", "logistic");
  await page.fill("#ranks", "2");
  await page.fill("#epochs", "1");
  await page.fill("#batch", "32");
  await page.click("#start");
  await settled(page);
  expect(await demoState(page)).toMatchObject({ state: "done", error: "" });
  expect(await page.evaluate(() => (globalThis as any).__demo.session.program.data.train.len()), "train images").toBe(960);
  await expect(page.locator("#rank-share")).toHaveText(
    /^Batches per rank: rank 0 \d+% \(\d+, \d+ ms each, \d+ computing\), rank 1 \d+% \(\d+, \d+ ms each/,
  );
  await expect(page.locator("#rank-why")).toHaveText(/ElChe|compiling|started later/);
  console.log(`[demo] ${await page.locator("#rank-share").textContent()} / ${await page.locator("#rank-why").textContent()}`);
  // Once a program loaded its data, a new size reloads the page with it, the controls kept.
  await page.fill("#subset", "320");
  await page.locator("#subset").dispatchEvent("change");
  await page.waitForURL(/[?&]subset=320(&|$)/);
  await expect(page.locator("#status")).toHaveText(/^Ready/, { timeout: 120_000 });
  await expect(page.locator("#program")).toHaveValue("logistic");
  await expect(page.locator("#subset")).toHaveValue("320");
  expect(errors, "page errors").toEqual([]);
});

test.describe("production build", () => {
  let preview: ChildProcess | undefined;

  test.beforeAll(async () => {
    test.setTimeout(300_000);
    const vite = join(root, "node_modules", "vite", "bin", "vite.js");
    execFileSync(process.execPath, [vite, "build", "--outDir", distDir, "--emptyOutDir", "--logLevel", "warn"], {
      cwd: root,
      stdio: "pipe",
    });
    preview = spawn(process.execPath, [vite, "preview", "--outDir", distDir, "--port", String(PREVIEW_PORT), "--strictPort", "--logLevel", "warn"], { cwd: root, stdio: "pipe" });
    let log = "";
    preview.stdout?.on("data", (d) => (log += d));
    preview.stderr?.on("data", (d) => (log += d));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (preview.exitCode !== null) throw new Error(`vite preview exited (${preview.exitCode}): ${log}`);
      const ok = await fetch(`${PREVIEW}/`).then((r) => r.ok, () => false);
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`vite preview did not answer on ${PREVIEW} within 60 s: ${log}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  });

  test.afterAll(() => {
    preview?.kill();
  });

  test("without WebGPU the page says so and how to enable it, and cannot start", async ({ page }) => {
    await page.addInitScript(() => {
      Object.defineProperty(Navigator.prototype, "gpu", { get: () => undefined, configurable: true });
    });
    const errors = watchErrors(page);
    await page.goto(`${PREVIEW}/${QUERY}`);
    await expect(page.locator("#gpu")).toContainText("does not expose WebGPU", { timeout: 60_000 });
    await expect(page.locator("#gpu li")).toHaveCount(4);
    await expect(page.locator("#gpu")).toContainText("chrome://flags");
    await expect(page.locator("#gpu")).toContainText("Firefox Nightly");
    await expect(page.locator("#status")).toHaveText("WebGPU is not available.");
    await expect(page.locator("#start")).toBeDisabled();
    expect(await page.evaluate(() => (globalThis as any).__demo.state)).toBe("no-webgpu");
    expect(errors).toEqual([]);
  });

  test("demo from vite build + vite preview: train, charts, 3-D view, digit, downloads, layouts, a second run stopped early", async ({ page }) => {
    test.setTimeout(1_100_000);
    await flow(page, PREVIEW, "build");

    // Screenshots for the README, and no horizontal scroll at either size.
    mkdirSync(shotsDir, { recursive: true });
    const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(await overflow(), "horizontal overflow at 1280×800").toBeLessThanOrEqual(0);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.waitForTimeout(1500); // the 3-D view zooms out to the whole run
    await page.screenshot({ path: join(shotsDir, "demo.png") });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(500);
    expect(await overflow(), "horizontal overflow at 390×844").toBeLessThanOrEqual(0);
    await page.screenshot({ path: join(shotsDir, "demo-narrow.png") });
    await page.setViewportSize({ width: 1280, height: 800 });

    // Keyboard: the 3-D view orbits with the arrow keys (against its idle turn, which goes right).
    const yaw = () => page.evaluate(() => (globalThis as any).__demo.drift.camera.yaw as number);
    const before = await yaw();
    await page.focus("#drift");
    await page.keyboard.press("ArrowLeft");
    await page.keyboard.press("ArrowLeft");
    expect(await yaw()).toBeLessThan(before - 0.15);

    // A second run in the same page (same program module, new run): cpu-async with a slow
    // rank, stopped after its first reduce; the stopped model still answers.
    await startRun(page, { ranks: 2, mode: "cpu-async", epochs: 3, slow: { rank: 1, factor: 2 } });
    await page.waitForFunction(() => (globalThis as any).__demo.reduces >= 1, null, { timeout: 300_000, polling: 500 });
    await page.click("#stop");
    await settled(page);
    const second = await demoState(page);
    expect(second.error).toBe("");
    expect(second.state).toBe("stopped");
    expect(second.epochs).toBeLessThan(3);
    await expect(page.locator("#status")).toHaveText(/^Stopped after/);
    expect(await points(page, "loss-epoch"), "the second run's dashboard starts afresh").toBe(second.epochs);
    await drawDigit(page);
  });

  test("gpt-nano on the Brown Corpus: two ranks, text from the consensus after the epoch and from the trained model", async ({ page }) => {
    test.setTimeout(900_000);
    const errors = watchErrors(page);
    // Small: 16 sequences of 32 characters, batch 8 on 2 ranks = one step per rank and epoch
    // (a gpt-nano step of 16 × 128 takes minutes on SwiftShader under load).
    await page.goto(`${PREVIEW}/?seqs=16&valSeqs=8&seqLen=32&sampleChars=16`);
    await expect(page.locator("#status")).toHaveText(/^Ready/, { timeout: 60_000 });
    await page.selectOption("#program", "gpt-nano");
    await page.fill("#ranks", "2");
    await page.selectOption("#mode", "cpu-sync");
    await page.fill("#epochs", "1");
    await page.fill("#batch", "8");
    await page.click("#start");
    await settled(page);
    const s = await page.evaluate(() => {
      const d = (globalThis as any).__demo;
      return { state: d.state, error: d.error, epochs: d.epochs, evals: d.evals, reduces: d.reduces };
    });
    expect(s.error, "page error message").toBe("");
    expect(s.state).toBe("done");
    expect(s.epochs).toBe(1);
    expect(s.reduces, "cpu-sync reduces every step").toBeGreaterThanOrEqual(1);
    // The eval is the validation CE: positive, below a uniform guess over 85 characters.
    expect(s.evals.length).toBe(1);
    for (const e of s.evals) {
      expect(e.value).toBeGreaterThan(0);
      expect(e.value).toBeLessThan(Math.log(85) + 0.5);
    }
    await page.waitForFunction(() => (globalThis as any).__demo.samples.length >= 2, null, { timeout: 400_000, polling: 500 });
    const samples: { epoch: number; text: string }[] = await page.evaluate(() => (globalThis as any).__demo.samples);
    expect(samples.map((x) => x.epoch), "a sample per epoch, then the trained model's").toEqual([1, 1]);
    for (const x of samples) expect(x.text).toMatch(/^The [\s\S]{16}$/);
    await expect(page.locator("#text-samples li")).toHaveCount(2);
    await expect(page.locator("#text-panel")).toBeVisible();
    await expect(page.locator("#status")).toContainText("validation CE");
    expect(errors).toEqual([]);
  });
});
