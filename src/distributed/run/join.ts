/**
 * A remote rank: a process (or tab) on any machine that joins a run with the join token
 * the coordinator printed. It runs the same rank runtime as a worker rank; only the
 * transport differs (the NATS link instead of comlink). Re-entry follows the worker's
 * rules: the rank role is entered before the program's
 * builder is created, the program module's top level runs, and the builder created at the
 * coordinator's line:col is this rank's. Browser-safe: Deno is only asked for a host name
 * and its main module when it is there.
 *
 * The token carries, besides the link's credentials, the builder's line, column and ordinal
 * (its place among its module's `Trainer.builder()` calls: what a bundle keeps), the program
 * module's file name and the coordinator's program arguments (`programArgs()`), so the rank
 * rebuilds what the coordinator's module built. Layout, program, dataset size and wire dtypes go back in the
 * hello and are checked by the coordinator before any work is sent (protocol/remote_hello.ts).
 */
import { Device } from "../../gpu/mod.ts";
import type { Module } from "../../nn/mod.ts";
import {
  connectLink,
  decodeJoinToken,
  encodeJoinToken,
  serversOf,
  encodeValue,
  importLinkKey,
  type RankCredentials,
  relaySubject,
  serveRank,
  WireSender,
} from "../nats/mod.ts";
import type { CoordinatorSink, Frame, RankApi } from "../protocol/messages.ts";
import { layoutDigest, programId, type RemoteHello } from "../protocol/remote_hello.ts";
import { RANK_CALLS } from "../protocol/rank_calls.ts";
import { dispatch, type RankEvent, type RankListener, sinkOf } from "../protocol/transport.ts";
import { forwardRankApi } from "../rank/rank_forward.ts";
import { layoutOf } from "../rank/rank_runtime.ts";
import type { BuilderState } from "./builder_state.ts";
import { awaitBuilder, type CallSite, enterRankRole, type RankRole, registeredFor } from "./reentry.ts";

/** What a join token carries beyond the link's credentials. */
interface JoinExtras {
  /** Where the coordinator's builder was created in its module. */
  line: number;
  col: number;
  /** Its place among its module's `Trainer.builder()` calls (a bundled rank finds it by this). */
  ordinal?: number;
  /** The program module's file name (what a bundled rank's hello names). */
  file?: string;
  /** The coordinator's program arguments. */
  args: Record<string, unknown>;
  /** How long the coordinator holds this rank's slot while it is away (its `reconnectGraceSecs`), ms. */
  beaconLossMs?: number;
}

/** Heartbeat period of a remote rank, ms (as a worker rank's). */
const HEARTBEAT_MS = 1000;

/**
 * The bye reason of a rank dropped from a run that reopened its slot: the rank rejoins with
 * the same token (a spare slot's join, admitted at the next epoch boundary).
 */
export const REJOIN_BYE = "dropped from the run: rejoin with the same token";

/** How long a dropped rank keeps trying to rejoin, ms (see {@link JoinOptions.rejoinWindowMs}). */
export const DEFAULT_REJOIN_WINDOW_MS = 600_000;

/**
 * The join token of rank slot `creds.rank` (coordinator side).
 * @param url The NATS WebSocket URL the rank connects to (`ws://` on loopback, `wss://` elsewhere),
 * or every node's of a cluster (the rank fails over among them).
 * @param site Where the coordinator's builder was created.
 * @param args The coordinator's `programArgs()`.
 * @param beaconLossMs How long the coordinator holds the slot of a rank that is away (from
 *   `reconnectGraceSecs`): the rank waits for beacons as long. Default: the rank's own (30 s).
 */
export function joinTokenFor(
  url: string | readonly string[],
  creds: RankCredentials,
  site: CallSite,
  args: Record<string, unknown>,
  beaconLossMs?: number,
): string {
  const file = site.url.replace(/[?#].*$/, "").split("/").pop() || site.url;
  const extras: JoinExtras = { line: site.line, col: site.col, ordinal: site.ordinal ?? 0, file, args };
  if (beaconLossMs !== undefined) extras.beaconLossMs = beaconLossMs;
  return encodeJoinToken(url, { ...creds, ...extras });
}

/** Options of {@link joinRun}. */
export interface JoinOptions {
  /**
   * The program module (its top level creates the builder). Default: Deno's main module,
   * for a program that calls `joinRun` from its own top level before creating the builder.
   */
  entry?: string | URL;
  /** Seconds to wait for the builder (as `.entry(url, timeoutSecs)`; default 60). */
  timeoutSecs?: number;
  /**
   * Stop when the coordinator's beacons stay away this long, ms. Default: the token's (the
   * coordinator's `reconnectGraceSecs`: the rank holds its state as long as the coordinator
   * holds its slot), else 30 000. A first step compiles pipelines and blocks this thread for
   * seconds on a slow adapter, and the beacons queued meanwhile are verified (async HMAC)
   * only after it.
   */
  beaconLossMs?: number;
  /**
   * A rank dropped from the run (away past the run's grace) does not stop: it says hello
   * again with the same token, and the coordinator takes it back into its slot at the next
   * epoch boundary. It gives up when this long passes without a slot answering, ms
   * (default 600 000), or when the run's server is gone.
   */
  rejoinWindowMs?: number;
  /** Progress lines (joined, refused, stopped). Default: none. */
  log?: (line: string) => void;
  /** How the coordinator names this rank's machine (default: Deno's host name; none in a browser). */
  host?: string;
  /** Every event the rank sends the coordinator (its batches, heartbeats), as it is sent: a page's progress. */
  onEvent?: (e: RankEvent) => void;
  /**
   * The entry is a transformed copy of the coordinator's module (a browser tab importing it
   * through Vite, which strips types and blank lines), so the builder's line:col differ
   * from the token's: take the single builder the entry module creates. The program is
   * then matched by its file name; layout, dataset size and wire are checked as always.
   */
  anyLine?: boolean;
  /**
   * The program is a bundle that calls `joinRun` from its own first module (a walk-in,
   * src/distributed/serve/): `entry` is the bundle's URL, the builder is found by its
   * ordinal in the token (a bundle moves lines), and the hello names the coordinator's
   * program file. What makes the bundle the coordinator's program is its sha256, checked
   * before it ran.
   */
  bundled?: boolean;
}

/** A joining remote rank. */
export interface RemoteRank {
  /** The rank slot the token gave this process. */
  readonly rank: number;
  /** The run id. */
  readonly run: string;
  /** The NATS WebSocket URL the rank connects to (from the token; a cluster's first node). */
  readonly url: string;
  /**
   * Resolves with why the rank stopped once it served (the run ended, the coordinator
   * vanished). Rejects with one line saying why when it never served: the coordinator
   * refused it at join (a token whose key does not verify, a hello that fails the run's
   * checks), its hellos stayed unanswered, or connecting failed.
   */
  readonly done: Promise<string>;
}

/**
 * Join a run as a remote rank. Call it before the program's builder is created (it enters
 * the rank role synchronously: `isRank()` is true from here on, so the program skips its
 * coordinator part); the connection and the serving run in the background.
 * @throws {TypeError} When `token` is not a join token, or there is no entry module.
 * @example
 * ```ts ignore
 * // at the top of the program, before Trainer.builder(...):
 * if (Deno.args[0] === "--join") joinRun(Deno.args[1], { log: console.log }).done.then(() => Deno.exit(0));
 * ```
 */
export function joinRun(token: string, opts: JoinOptions = {}): RemoteRank {
  const t = decodeJoinToken(token) as ReturnType<typeof decodeJoinToken> & Partial<JoinExtras>;
  if (!Number.isInteger(t.line) || !Number.isInteger(t.col)) {
    throw new TypeError(`joinRun: the join token has no builder line/col (made by another version of flodl-webgpu?)`);
  }
  const deno = (globalThis as { Deno?: { mainModule?: string; hostname?: () => string } }).Deno;
  const entry = String(opts.entry ?? deno?.mainModule ?? "");
  if (!entry) throw new TypeError(`joinRun: entry is required outside Deno (the program module's URL), got ${opts.entry}`);
  if (opts.bundled && opts.entry === undefined) throw new TypeError(`joinRun: bundled needs entry (the bundle's URL), got none`);
  const role: RankRole = {
    rank: t.rank,
    world: 0, // told at init
    entry,
    site: { url: entry, line: t.line!, col: t.col!, ordinal: t.ordinal ?? 0 },
    timeoutMs: (opts.timeoutSecs ?? 60) * 1000,
    session: t.run,
    args: t.args ?? {},
    anyLine: opts.anyLine,
    bundled: opts.bundled,
  };
  enterRankRole(role);
  const log = opts.log ?? (() => {});
  // A bundled rank's hello names the coordinator's file (its own URL is the bundle's).
  const program = programId(opts.bundled ? { ...role.site, url: t.file ?? entry } : role.site);
  const self = opts.entry === undefined || opts.bundled === true;
  const done = serve(t, role, program, self, opts, log, opts.host ?? hostname(deno));
  return { rank: t.rank, run: t.run, url: t.url, done };
}

/** The token's `beaconLossMs` when it is a positive number (a token of an older coordinator has none), else 30 000. */
function beaconLossOf(t: Partial<JoinExtras>): number {
  const ms = t.beaconLossMs;
  return typeof ms === "number" && Number.isFinite(ms) && ms > 0 ? ms : 30_000;
}

/** Deno's host name, or "" where it is not there or not allowed (a walk-in has only `--allow-net`). */
function hostname(deno: { hostname?: () => string } | undefined): string {
  try {
    return deno?.hostname?.() ?? "";
  } catch {
    return "";
  }
}

/**
 * Settles once the program that joins from its own top level created its builder, and the
 * builder's chain of knobs ran (the same synchronous run). NOTE: not `import(mainModule)`:
 * Deno settles a dynamic import of the main module while that module is still at a
 * top-level await, before the builder exists. So such a program attaches its rank-side
 * callbacks in the builder's chain (examples/train.ts does).
 */
async function created(role: RankRole): Promise<void> {
  while (!registeredFor(role)) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 0));
}

async function serve(
  t: ReturnType<typeof decodeJoinToken>,
  role: RankRole,
  program: string,
  self: boolean,
  opts: JoinOptions,
  log: (line: string) => void,
  host: string,
): Promise<string> {
  const rank = t.rank;
  const builder = await awaitBuilder<{ state: BuilderState<Module> }>(role, self ? created(role) : import(/* @vite-ignore */ role.entry));
  const state = builder.state;
  const device = await Device.request({ label: `rank${rank}` });
  Device.setDefault(device);
  // The layout for the hello, from a model built once here: the coordinator refuses a
  // mismatch before it sends this rank any work.
  const probe = await state.spec.modelFactory(device);
  const info = device.info;
  const hello: RemoteHello = {
    host,
    adapter: info.description || `${info.vendor} ${info.architecture}`.trim() || "unknown adapter",
    program,
    layout: layoutDigest(layoutOf(probe)),
    datasetLen: state.spec.dataset?.len() ?? 0,
    wire: ["bf16", "f32"],
  };
  for (const p of probe.parameters()) p.data.dispose();
  for (const b of probe.buffers()) b.dispose();

  let runtime = state.createRuntime(device);
  let admitted = false, rejoining = false;
  let beat: ReturnType<typeof setInterval> | undefined;
  let connection: Awaited<ReturnType<typeof connectLink>>;
  /** Behind a relay (the coordinator's init says which): frames go there, signed with this rank's key. */
  let relay: { index: number; sender: WireSender } | undefined;
  // Events go out through the server; none come before it exists (they follow init, a call over it).
  const sink: CoordinatorSink = sinkOf(() => listener);
  const api: RankApi = {
    async init(setup, s) {
      if (setup.rank !== rank) throw new RangeError(`rank ${rank}: the coordinator's init says rank ${setup.rank}`);
      // The coordinator sends init only to a rank whose hello passed the run's checks.
      if (rejoining) log(`rank ${rank}: rejoined run ${t.run} at ${serversOf(t).join(", ")}; waiting for the next epoch boundary`);
      else if (!admitted) log(`rank ${rank}: joined run ${t.run} at ${serversOf(t).join(", ")} (${host || "this host"}, ${hello.adapter}); waiting for work`);
      admitted = true;
      rejoining = false;
      clearInterval(beat);
      beat = setInterval(() => s.heartbeat(rank), HEARTBEAT_MS);
      relay = undefined;
      if (setup.relay !== undefined) {
        const nc = connection;
        const key = await importLinkKey(t.key);
        const sender = new WireSender((sub, d) => nc.publish(sub, d), relaySubject(t.run, rank), t.run, `r${rank}`, key, nc.info!.max_payload);
        relay = { index: setup.relay, sender };
      }
      return runtime.init(setup, s);
    },
    ...forwardRankApi(() => runtime, (f) => f),
    async snapshot(round, dtype) {
      const f = await runtime.snapshot(round, dtype);
      if (!relay) return f;
      // The values go to the relay (sent before this answer leaves); the coordinator gets the count.
      await relay.sender.send(encodeValue(f));
      const empty: Frame = { ...f, via: relay.index, params: new Float32Array(0), buffers: new Float32Array(0) };
      if (f.dtype === "bf16") empty.params = new Uint32Array(0);
      return empty;
    },
    async stop() {
      clearInterval(beat);
      await runtime.stop();
    },
  };
  const handler: Record<string, (...args: unknown[]) => unknown> = {};
  for (const name of RANK_CALLS) handler[name] = (...args) => dispatch(api, sink, name, args as never);

  let server: Awaited<ReturnType<typeof serveRank>>;
  const listener: RankListener = {
    event: (e) => {
      opts.onEvent?.(e);
      server.emit(e);
    },
    down: () => {},
  };
  const beaconLossMs = opts.beaconLossMs ?? beaconLossOf(t as Partial<JoinExtras>);
  const rejoinMs = opts.rejoinWindowMs ?? DEFAULT_REJOIN_WINDOW_MS;
  /**
   * Set while this rank is out of the run and tries to get back: since when, why, and until
   * when it tries. Told by the coordinator (`REJOIN_BYE`: its slot is reopened) it tries for
   * `rejoinMs`; gone down on its own (no beacons: away past the grace, or the coordinator
   * gone) it says hello once more, and stops with the first reason when nobody answers.
   */
  let dropped: { why: string; until: number; told: boolean } | undefined;
  const stop = (why: string) => {
    log(`rank ${rank}: stopped: ${why}`);
    return why;
  };
  for (;;) {
    try {
      connection = await connectLink(serversOf(t), t.user, t.pass, `rank ${rank}`);
    } catch (e) {
      if (!dropped) throw e;
      return stop(`${dropped.why}; its server is gone (${(e as Error).message})`);
    }
    server = await serveRank({
      connection,
      creds: t,
      handler,
      hello,
      beaconLossMs,
      onDown: async () => {
        clearInterval(beat);
        await runtime.stop().catch(() => {});
      },
      onRefused: (e) => log(`flodl: ${e.message}`),
    });
    // "joined" only once the coordinator admitted the rank (its first call, init): a rank
    // refused by the key or by the run's checks of its hello never says it.
    const joined = await server.joined;
    if (!joined && !dropped) throw new Error((await server.down).message);
    if (joined && !admitted && !dropped) log(`rank ${rank}: reached run ${t.run} at ${serversOf(t).join(", ")}; waiting for the coordinator to check its hello`);
    const down = await server.down;
    if (down.fault === "rejected") {
      if (!dropped) throw new Error(down.message);
      return stop(`${dropped.why}; not taken back: ${down.message}`);
    }
    const told = down.message.includes(REJOIN_BYE);
    if (joined && admitted) dropped = undefined; // it was back in (or never out)
    if (!told && (!admitted || /the coordinator ended the run/.test(down.message))) {
      // The run's end, or a down before this session's init: as before rejoins existed.
      if (!dropped) return stop(down.message);
    }
    const now = Date.now();
    if (told) dropped = { why: `rank ${rank}: dropped from the run (${down.message})`, until: now + rejoinMs, told };
    else if (!dropped) dropped = { why: down.message, until: now, told }; // one more hello, then stop
    if (now > dropped.until) return stop(dropped.told ? `${dropped.why}; no slot took it back within ${rejoinMs / 1000} s` : dropped.why);
    log(`rank ${rank}: out of the run (${down.message}); saying hello again with the same token`);
    rejoining = true;
    admitted = false;
    runtime = state.createRuntime(device);
    await new Promise((r) => setTimeout(r, 1000));
  }
}
