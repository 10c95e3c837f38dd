/**
 * "Join a run": this tab becomes a remote rank of a run that a coordinator elsewhere drives
 * (`npm start -- --serve N` prints a join token and a link `/?join=<token>`). The tab
 * connects to the NATS WebSocket URL in the token, re-enters the coordinator's program
 * module (examples/program.ts by default, `?program=/path.ts` for another) with the
 * coordinator's program arguments from the token, and trains with its own GPU on this
 * page's thread. Its data: the same MNIST (or Brown) files, fetched from this page's
 * server, the subset the arguments name (examples/program.ts).
 *
 * Joining puts the page in the rank role for good (isRank() is true): training here again
 * needs a reload. A refusal at join (another program, model layout, dataset size or wire)
 * is shown with the coordinator's own words.
 *
 * A tab the browser freezes (Page Lifecycle `freeze`: a background tab, a phone's screen off)
 * runs no JavaScript until it `resume`s: the page says "frozen" as it goes, and "back after
 * N s frozen" once it runs again. A page stopped without a word (paused in a debugger, a
 * thread blocked) is seen by its own timer: "back after N s without running". Its link
 * resumes where it stopped when it is back within the run's grace (`reconnectGraceSecs`);
 * past it the coordinator has dropped it, and the page says "dropped" while its rank asks
 * for its slot back, then "rejoined" once the coordinator took it back (or "left" why not).
 */
import { joinRun, type RankEvent } from "../src/index.ts";

/** A page whose timer stood still this long (ms) says it was away once it runs again. */
export const AWAY_MS = 10_000;

/** The program module a tab re-enters when the link names none: `npm start`'s. */
export const DEFAULT_PROGRAM = "/examples/program.ts";

/** What the page shows of a joined rank (and tests read from `__demo.join`). */
export interface JoinState {
  state: "idle" | "joining" | "joined" | "training" | "rejoining" | "stopped" | "refused" | "error";
  rank: number;
  run: string;
  url: string;
  /** Training steps (batches) this tab ran, and their samples. */
  steps: number;
  samples: number;
  epoch: number;
  loss: number;
  /** "Compiling" notices the rank sent (before new GPU pipelines: seconds to minutes on a software adapter). */
  compiles: number;
  /** Why the rank stopped (the coordinator's words for a refusal). */
  reason: string;
  /** The rank's log lines (joined, refused, stopped). */
  log: string[];
  /** The browser froze the page (the status says so as it goes; nothing runs until it resumes). */
  frozen: boolean;
  /**
   * Times the page stopped running for {@link AWAY_MS} or more while a rank (frozen by the
   * browser, or stopped without a word), how long the last time lasted (ms), and how.
   */
  aways: number;
  awayMs: number;
  awayHow: "frozen" | "without running";
  /** Times the rank was dropped from the run and taken back into its slot (`rejoined run` in its log). */
  rejoins: number;
}

/** A fresh, idle state. */
export function idleJoin(): JoinState {
  return { state: "idle", rank: -1, run: "", url: "", steps: 0, samples: 0, epoch: 0, loss: NaN, compiles: 0, reason: "", log: [], frozen: false, aways: 0, awayMs: 0, awayHow: "frozen", rejoins: 0 };
}

/**
 * The program module's URL on this page's server.
 * @throws {RangeError} When `path` is not a same-server `.ts` path (the `program` parameter named).
 */
export function programUrl(path: string | null, origin: string): URL {
  const p = path ?? DEFAULT_PROGRAM;
  if (!/^\/[\w./-]+\.ts$/.test(p) || p.includes("..") || p.includes("//")) {
    throw new RangeError(`?program= must be a path of a .ts module on this server (e.g. ${DEFAULT_PROGRAM}), got ${JSON.stringify(p)}`);
  }
  return new URL(p, origin);
}

/** One line of what a state means, for the page's status. */
export function joinText(s: JoinState): string {
  const who = `Rank ${s.rank}`;
  if (s.frozen && (s.state === "joined" || s.state === "training")) {
    return `${who} of run ${s.run}: frozen by the browser after ${s.steps} steps; it goes on where it stopped if it is back within the run's grace.`;
  }
  const back = s.aways > 0 && (s.state === "joined" || s.state === "training")
    ? ` Back after ${(s.awayMs / 1000).toFixed(0)} s ${s.awayHow}${s.aways > 1 ? ` (away ${s.aways} times)` : ""}.`
    : "";
  const rejoined = s.rejoins > 0 && (s.state === "joined" || s.state === "training")
    ? ` Rejoined the run after being dropped${s.rejoins > 1 ? ` (${s.rejoins} times)` : ""}.`
    : "";
  return text(s, who) + back + rejoined;
}

function text(s: JoinState, who: string): string {
  switch (s.state) {
    case "idle":
      return "Not joined. Paste a join token (npm start -- --serve N prints one per slot) or open the printed link.";
    case "joining":
      return `Joining as rank ${s.rank} at ${s.url}: loading the program and its data…`;
    case "joined":
      return s.compiles > 0
        ? `${who} of run ${s.run}: compiling its GPU pipelines (slow on a software adapter)…`
        : `${who} of run ${s.run}: joined at ${s.url}; waiting for work.`;
    case "training":
      return `${who} of run ${s.run}: training, epoch ${s.epoch + 1}, ${s.steps} steps (${s.samples} samples), loss ${s.loss.toFixed(4)}.`;
    case "rejoining":
      return `${who} was dropped from run ${s.run} (${s.reason}); saying hello again with the same token, to be taken back at the next epoch…`;
    case "stopped":
      return `${who} left the run after ${s.steps} steps (${s.samples} samples): ${s.reason}`;
    case "refused":
      return `${who} was refused by the coordinator.`;
    case "error":
      return `${who} could not serve the run.`;
  }
}

/**
 * Join the run of `token`: resolves when the rank stopped (state stopped, refused or error);
 * `update` runs on every change.
 */
export async function joinFromPage(token: string, entry: URL, state: JoinState, update: () => void): Promise<void> {
  const log = (line: string) => {
    state.log.push(line);
    if (/: joined run /.test(line)) state.state = "joined";
    // A rank dropped from the run (away past its grace) tries to get back into its slot (run/join.ts).
    const out = /: out of the run \((.*)\); saying hello again/.exec(line);
    if (out) Object.assign(state, { state: "rejoining", reason: out[1] });
    if (/: rejoined run /.test(line)) Object.assign(state, { state: "joined", rejoins: state.rejoins + 1, reason: "" });
    update();
  };
  const onEvent = (e: RankEvent) => {
    if (e.kind === "compiling") state.compiles++;
    if (e.kind !== "batch") return;
    state.state = "training";
    state.steps++;
    state.samples += e.batch.samples;
    state.epoch = e.batch.epoch;
    state.loss = e.batch.loss;
  };
  let rank;
  try {
    // The coordinator prints where a rank joined from: a tab has no host name to give.
    const host = `browser tab on ${navigator.platform || "an unknown platform"}`;
    rank = joinRun(token.trim(), { entry, anyLine: true, host, log, onEvent });
  } catch (e) {
    state.state = "error";
    state.reason = (e as Error).message;
    update();
    return;
  }
  Object.assign(state, { state: "joining", rank: rank.rank, run: rank.run, url: rank.url });
  update();
  // Steps arrive many per second: the page redraws a few times a second. Its timer standing
  // still says the page did not run (a freeze the browser did not announce, a debugger).
  let tick = Date.now();
  const ticker = setInterval(() => {
    const now = Date.now();
    if (now - tick >= AWAY_MS && !state.frozen) Object.assign(state, { aways: state.aways + 1, awayMs: now - tick, awayHow: "without running" });
    tick = now;
    update();
  }, 250);
  // The browser says when it freezes the page and when it runs again (Page Lifecycle API).
  let frozenAt = 0;
  const onFreeze = () => {
    frozenAt = Date.now();
    state.frozen = true;
    update();
  };
  const onResume = () => {
    if (!state.frozen) return;
    tick = Date.now();
    Object.assign(state, { frozen: false, aways: state.aways + 1, awayMs: tick - frozenAt, awayHow: "frozen" });
    update();
  };
  document.addEventListener("freeze", onFreeze);
  document.addEventListener("resume", onResume);
  try {
    state.reason = await rank.done;
    state.state = "stopped";
  } catch (e) {
    // A rank the coordinator turned away never served: `done` rejects with the coordinator's reason.
    state.reason = (e as Error).message;
    state.state = /refused it at join/.test(state.reason) ? "refused" : "error";
  } finally {
    clearInterval(ticker);
    document.removeEventListener("freeze", onFreeze);
    document.removeEventListener("resume", onResume);
    state.frozen = false;
    update();
  }
}
