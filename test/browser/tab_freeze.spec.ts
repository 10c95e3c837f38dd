/**
 * A frozen tab resumes (issue 27): a browser tab (a real Chromium tab, SwiftShader) is a
 * remote rank of a Deno coordinator with one local worker rank (test/fixtures/tab_coordinator.ts,
 * `--grace=60`: the run's `reconnectGraceSecs`). After the tab trained a few steps its
 * JavaScript is stopped for 30 s, then let go. Within the grace nothing is lost: the run
 * finishes with no rank lost, every sample exactly once (the coordinator's chunk ledger), and
 * the tab trains again after the thaw.
 *
 * How the tab is frozen: its renderer processes are stopped (SIGSTOP, the browser's own
 * renderers, found by `SystemInfo.getProcessInfo`) and continued (SIGCONT), as an OS freezes
 * a backgrounded browser: no JavaScript, no timer, no message handler, while the WebSocket
 * (Chromium's network process) stays open and the server keeps the connection. NOT
 * `Page.setWebLifecycleState` "frozen", the state Chromium puts a background tab in: in this
 * headless Chromium (156, new headless, pages always visible) it answers `{}` and freezes
 * nothing: a 100 ms page timer kept ticking through 5 s "frozen" and no `freeze` event fired
 * (measured). Nor `Debugger.pause`: it stopped a blank page's timer, but not this page's
 * (its longest timer gap across a 30 s pause was 651 ms, measured).
 *
 * That the freeze is real is checked, not assumed: a timer in the page records its ticks, and
 * the gap across the freeze must be the freeze; the coordinator folds no chunk of the tab's
 * while it is frozen. The page says "Back after N s without running" (demo/join.ts: its timer
 * saw the gap; no freeze event came). Not covered: a background-throttled tab (no real
 * mechanism in headless Chromium; a dispatched visibilitychange would not throttle anything).
 * Bigger than join.spec (4800 images): the tab must still have work after 30 s away.
 *
 * Past the grace (the second test, grace 10 s, two epochs): the frozen tab is dropped as
 * before (its samples go to the local rank); once thawed it reads the coordinator's bye
 * (its slot reopened), says hello again with the same token, and is admitted back at the
 * boundary before epoch 1, which it trains; every sample once per epoch. The page says
 * "dropped", then "Rejoined" (demo/join.ts).
 */
import { expect, type Page, test } from "@playwright/test";
import { join } from "node:path";
import { PORT } from "../../playwright.config.ts";
import type { Report } from "../fixtures/tab_report.ts";
import { Proc } from "./deno_proc.ts";

const root = join(import.meta.dirname, "..", "..");
const SUBSET = 4800, TEST = 300, BATCH = 24;
/** How long the tab is frozen, and the run's grace (above it). */
const FREEZE_MS = 30_000, GRACE_SECS = 60;
/** The second test's grace, below the freeze: the tab is dropped, and comes back by itself. */
const REJOIN_GRACE_SECS = 10;
/** Upper bound on the tab's first steps (SwiftShader compiles its pipelines first: minutes here), never an assertion. */
const TAB_STEPS_MS = 900_000;
test.describe.configure({ timeout: 1_800_000 });

/** Our own dev server without watching or HMR (a reloaded tab is a dead rank); join.spec takes PORT + 1, the demo test PORT + 1 and + 2. */
const DEV_PORT = PORT + 3;
const DEV = `http://127.0.0.1:${DEV_PORT}`;


interface JoinState {
  state: string;
  steps: number;
  samples: number;
  compiles: number;
  reason: string;
  frozen: boolean;
  aways: number;
  awayMs: number;
  rejoins: number;
}
const joinState = (page: Page) => page.evaluate(() => (globalThis as any).__demo.join as JoinState);

let server: { close(): Promise<void> } | undefined;
test.beforeAll(async () => {
  test.setTimeout(120_000);
  const { createServer } = await import("vite");
  const s = await createServer({
    root,
    configFile: join(root, "vite.config.ts"),
    cacheDir: join(root, "test-results", "tab_freeze", "vite-cache"),
    logLevel: "warn",
    server: { port: DEV_PORT, strictPort: true, hmr: false, watch: null },
  });
  await s.listen();
  server = s;
});
test.afterAll(async () => {
  await server?.close();
});

let procs: Proc[] = [];
test.afterEach(({}, info) => {
  if (info.status !== info.expectedStatus) for (const p of procs) console.log(`--- output of the coordinator:\n${p.out}`);
  for (const p of procs) p.stop();
  procs = [];
});

test(`a tab frozen for ${FREEZE_MS / 1000} s (grace ${GRACE_SECS} s) resumes: no rank lost, every sample once, the tab trains after the thaw`, async ({ page }) => {
  const c = new Proc(["run", "-A", "--no-check", "test/fixtures/tab_coordinator.ts", ...[1, 1, SUBSET, TEST, BATCH].map(String), `--grace=${GRACE_SECS}`]);
  procs.push(c);
  const token = (await c.wait(/^token 1 (\S+)$/m, "the tab's token"))[1];
  page.on("console", (m) => m.type() === "error" && console.log(`[tab] ${m.text()}`));
  page.on("pageerror", (e) => console.log(`[tab] ${e}`));
  await page.goto(`${DEV}/?join=${token}`);
  const t0 = Date.now();
  await expect.poll(async () => (await joinState(page)).steps, { timeout: TAB_STEPS_MS, message: "the tab's first steps" }).toBeGreaterThanOrEqual(3);
  console.log(`tab: 3 steps after ${(Date.now() - t0) / 1000} s`);
  // A timer whose ticks show whether the page's JavaScript ran while frozen.
  await page.evaluate(() => {
    const w = globalThis as unknown as { __ticks: number[] };
    w.__ticks = [];
    setInterval(() => w.__ticks.push(Date.now()), 100);
  });
  await page.waitForTimeout(500);
  const before = await joinState(page);
  expect(c.out, "the run had not ended when the tab was frozen").not.toMatch(/^report /m);

  const cdp = await page.context().browser()!.newBrowserCDPSession();
  const { processInfo } = await cdp.send("SystemInfo.getProcessInfo");
  const renderers = processInfo.filter((p) => p.type === "renderer").map((p) => p.id);
  expect(renderers.length, "the browser's renderer processes").toBeGreaterThan(0);
  const frozenAt = Date.now();
  let foldedAtFreeze: number, foldedAtThaw: number;
  try {
    for (const pid of renderers) process.kill(pid, "SIGSTOP");
    foldedAtFreeze = c.folded(1);
    await new Promise((r) => setTimeout(r, FREEZE_MS));
    foldedAtThaw = c.folded(1);
  } finally {
    for (const pid of renderers) process.kill(pid, "SIGCONT");
  }
  const thawedAt = Date.now();
  // Nothing of the tab's was folded while it was frozen, and its timer did not tick.
  expect(foldedAtThaw, "the coordinator folded no chunk of the frozen tab's").toBe(foldedAtFreeze);
  const ticks = await page.evaluate(() => (globalThis as unknown as { __ticks: number[] }).__ticks);
  const gap = Math.max(...ticks.slice(1).map((t, i) => (t > frozenAt && ticks[i] < thawedAt ? t - ticks[i] : 0)));
  console.log(`the page's timer: longest gap ${gap} ms across the ${thawedAt - frozenAt} ms freeze`);
  expect(gap, "stopping the renderers stopped the page's JavaScript").toBeGreaterThanOrEqual(FREEZE_MS - 2_000);
  await expect.poll(async () => (await joinState(page)).aways, { message: "the page saw it was away" }).toBe(1);
  const back = await joinState(page);
  expect(back.awayMs, "the page's own measure of the freeze").toBeGreaterThanOrEqual(FREEZE_MS - 2_000);
  await expect(page.locator("#join-status")).toHaveText(/Back after (29|3\d) s without running\.$/);

  const m = await c.wait(/^report (.*)$/m, "its report");
  const r = JSON.parse(m[1]) as Report;
  console.log(`report: ${JSON.stringify(r)}; rank 1 folded ${c.folded(1) - foldedAtThaw} samples after the thaw`);
  expect(r.error, `the run's error (coordinator output:\n${c.out})`).toBeUndefined();
  expect(r.lost, "no rank lost").toEqual([]);
  expect(r.once, `every sample trained exactly once (never ${r.never}, more ${r.twice})`).toBe(r.samples);
  expect(c.folded(1) - foldedAtThaw, "chunks of the tab's were folded after the thaw").toBeGreaterThan(0);
  await expect.poll(async () => (await joinState(page)).state, { timeout: 120_000 }).toBe("stopped");
  const end = await joinState(page);
  expect(end.steps, "the tab trained steps after the thaw").toBeGreaterThan(before.steps);
  expect(end.samples, "the page counts the samples its rank trained, as the coordinator's ledger").toBe(r.perRank[1]);
  expect(end.reason).toMatch(/coordinator ended the run/);
});

test(`a tab frozen for ${FREEZE_MS / 1000} s, past a ${REJOIN_GRACE_SECS} s grace: dropped, it rejoins its own slot by itself at the next epoch and trains it; every sample once per epoch`, async ({ page }) => {
  const args = [1, 1, SUBSET / 2, TEST, BATCH].map(String);
  const c = new Proc(["run", "-A", "--no-check", "test/fixtures/tab_coordinator.ts", ...args, `--grace=${REJOIN_GRACE_SECS}`, "--epochs=2", "--await-rejoin=1"]);
  procs.push(c);
  const token = (await c.wait(/^token 1 (\S+)$/m, "the tab's token"))[1];
  page.on("pageerror", (e) => console.log(`[tab] ${e}`));
  await page.goto(`${DEV}/?join=${token}`);
  await expect.poll(async () => (await joinState(page)).steps, { timeout: TAB_STEPS_MS, message: "the tab's first steps" }).toBeGreaterThanOrEqual(3);
  expect(c.out, "the run had not ended when the tab was frozen").not.toMatch(/^report /m);
  const cdp = await page.context().browser()!.newBrowserCDPSession();
  const { processInfo } = await cdp.send("SystemInfo.getProcessInfo");
  const renderers = processInfo.filter((p) => p.type === "renderer").map((p) => p.id);
  try {
    for (const pid of renderers) process.kill(pid, "SIGSTOP");
    await new Promise((r) => setTimeout(r, FREEZE_MS));
  } finally {
    for (const pid of renderers) process.kill(pid, "SIGCONT");
  }
  expect(c.out, "the coordinator dropped the frozen tab past the grace").toMatch(new RegExp(`rank 1 was silent for [\\d.]+ s \\(reconnectGraceSecs ${REJOIN_GRACE_SECS}\\)`));
  // The page says it was dropped and asks back, then that it rejoined (demo/join.ts).
  await expect.poll(async () => (await joinState(page)).rejoins, { timeout: 120_000, message: "the tab rejoined" }).toBe(1);
  await expect(page.locator("#join-status")).toHaveText(/Rejoined the run after being dropped\.$/);

  const r = JSON.parse((await c.wait(/^report (.*)$/m, "its report"))[1]) as Report;
  console.log(`report: ${JSON.stringify(r)}`);
  expect(r.error, `the run's error (coordinator output:\n${c.out})`).toBeUndefined();
  expect(r.lost.length, `one loss: ${r.lost.join("; ")}`).toBe(1);
  expect(r.joined, "rank 1 back at the boundary before epoch 1").toEqual(["1@1"]);
  expect(r.epochsOnce, "every sample exactly once in each epoch").toEqual([r.samples, r.samples]);
  expect(r.ranksByEpoch[1], "the tab trained in the last epoch").toContain(1);
  await expect.poll(async () => (await joinState(page)).state, { timeout: 120_000 }).toBe("stopped");
  expect((await joinState(page)).reason).toMatch(/coordinator ended the run/);
});
