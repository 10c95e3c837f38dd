/**
 * The join page's module (`page.js` beside the page, built by src/walk_in_build.ts):
 * a tab that opened the coordinator's https link becomes a remote rank. It reads the join
 * token the server put in the page (never in the URL: no server log, history entry or
 * Referer holds it), fetches the bundle (rank runtime + the run's program, the same bundle
 * a Deno walk-in runs) and the data packs, checks each one's sha256 against the token's,
 * claims the slot (the server then refuses any other open of the link, one line), and only
 * then imports the bundle from those bytes. The page shows the run, the rank, its steps and samples,
 * what the job may do here, and a Leave button; tests read `globalThis.__walkIn`.
 *
 * Leave closes the rank's NATS WebSocket and lets no new one open: the rank stops at its
 * beacon loss, the coordinator counts it lost and gives its samples to the others.
 */
import type { WalkInGlobal, WalkInPageHooks } from "./walk_in_data.ts";
import { claimSlot, fetchChecked, walkInOf, WalkInRefusal } from "./walk_in_check.ts";

/** What the page shows (and tests read from `globalThis.__walkIn`). */
export interface WalkInTabState {
  state: "loading" | "joining" | "joined" | "training" | "stopped" | "refused" | "left" | "error";
  rank: number;
  run: string;
  steps: number;
  samples: number;
  /** Why it stopped or was refused: one line. */
  reason: string;
  /** Bytes fetched (bundle and packs) and ms from the navigation's start to the first step. */
  bytes: number;
  firstStepMs: number;
  log: string[];
}

const doc = document;
const $ = (id: string) => doc.getElementById(id) as HTMLElement;
const s: WalkInTabState = {
  state: "loading",
  rank: -1,
  run: "",
  steps: 0,
  samples: 0,
  reason: "",
  bytes: 0,
  firstStepMs: -1,
  log: [],
};
(globalThis as { __walkIn?: WalkInTabState }).__walkIn = s;

function show(): void {
  const who = `Rank ${s.rank}`;
  const text: Record<WalkInTabState["state"], string> = {
    loading: "Checking the program and its data against the join link…",
    joining: `${who}: loading the program, compiling its GPU pipelines…`,
    joined: `${who} of run ${s.run}: joined; waiting for work.`,
    training: `${who} of run ${s.run}: training, ${s.steps} steps (${s.samples} samples).`,
    stopped: `${who} left the run after ${s.steps} steps (${s.samples} samples): ${s.reason}`,
    refused: `Refused: ${s.reason}`,
    left:
      `${who}: you left the run after ${s.steps} steps (${s.samples} samples); the coordinator gives the rest to the others.`,
    error: `${who} could not serve the run: ${s.reason}`,
  };
  $("status").textContent = text[s.state];
  $("steps").textContent = `${s.steps} steps, ${s.samples} samples`;
  if (s.rank >= 0) $("rank").textContent = String(s.rank);
  if (s.run) $("run").textContent = s.run;
  const over = s.state === "stopped" || s.state === "refused" || s.state === "left" || s.state === "error";
  ($("leave") as HTMLButtonElement).disabled = over;
  if (s.state === "refused" || s.state === "error") {
    $("error").textContent = s.reason;
    $("error").hidden = false;
  }
}

/** Every WebSocket this page opens, so Leave can close them and refuse new ones. */
const sockets = new Set<WebSocket>();
let leaving = false;
const Native = globalThis.WebSocket;
globalThis.WebSocket = class extends Native {
  constructor(url: string | URL, protocols?: string | string[]) {
    if (leaving) throw new Error("this tab left the run");
    super(url, protocols);
    sockets.add(this);
    this.addEventListener("close", () => sockets.delete(this));
  }
} as typeof WebSocket;

$("leave").addEventListener("click", () => {
  leaving = true;
  for (const ws of sockets) ws.close(1000, "left the run");
  s.state = "left";
  show();
});

const hooks: WalkInPageHooks = {
  joining(rank, run) {
    Object.assign(s, { state: "joining", rank, run });
    show();
  },
  log(line) {
    s.log.push(line);
    if (/: joined run /.test(line) && s.state === "joining") s.state = "joined";
    show();
  },
  event(e) {
    if (e.kind !== "batch" || !e.batch || s.state === "left") return;
    if (s.firstStepMs < 0) s.firstStepMs = Math.round(performance.now());
    s.state = "training";
    s.steps++;
    s.samples += e.batch.samples;
  },
  done(reason, error) {
    s.reason = reason;
    if (s.state !== "left") s.state = !error ? "stopped" : /refused/.test(reason) ? "refused" : "error";
    show();
  },
};
setInterval(() => s.state === "training" && show(), 250);

try {
  const token = $("walk-in-token").textContent?.trim();
  const t = walkInOf(token, "open the link the coordinator printed, whole");
  Object.assign(s, { rank: t.rank, run: t.run });
  $("origin").textContent = location.host;
  show();
  const names = Object.keys(t.fields.packs);
  const [bundle, ...packs] = await Promise.all([
    fetchChecked(import.meta.url, "bundle", "bundle.js", t.fields.bundle),
    ...names.map((n) => fetchChecked(import.meta.url, `${n} pack`, `${n}.pack`, t.fields.packs[n])),
  ]);
  // Claimed once checked: a tampered file does not use up the slot.
  await claimSlot(import.meta.url, t.fields.ticket);
  s.bytes = bundle.length + packs.reduce((a, p) => a + p.length, 0);
  const w: WalkInGlobal = {
    token: token!,
    packs: Object.fromEntries(names.map((n, i) => [n, packs[i]])),
    started: 0,
    bytes: s.bytes,
    page: hooks,
  };
  (globalThis as { [k: symbol]: unknown })[Symbol.for("flodl-webgpu.walkIn")] = w;
  await import(/* @vite-ignore */ URL.createObjectURL(new Blob([bundle], { type: "text/javascript" })));
} catch (e) {
  s.reason = (e as Error).message;
  s.state = e instanceof WalkInRefusal ? "refused" : "error";
  show();
}
