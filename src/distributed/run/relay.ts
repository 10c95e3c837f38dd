/**
 * A relay: one process per host (or site) that sums the reduce frames of
 * the ranks there before they reach the coordinator, so the coordinator's inbound bytes
 * per reduce grow with relays, not ranks. It never divides: the coordinator folds the sum
 * like a frame and divides once (coordinator/reduce/relay_client.ts, averaging.ts).
 *
 * Each member rank publishes its frame on its relay subject (nats/subjects.ts), chunked and
 * signed with the rank's own key; the relay holds its members' keys (its token), so the
 * link's checks (run id, sender, subject, HMAC, sequence: forged, tampered or replayed
 * chunks are refused naming the rank) apply here as at the coordinator, and so do the
 * frame checks (rank, round, dtype, sizes, NaN/Inf: `checkFrame`). A refused or missing
 * frame is left out of the sum and reported with why; the coordinator drops that rank.
 *
 * Towards the coordinator the relay is a slot of the run like a rank's (the same signed
 * link, beacons, bye): it serves one call, `sum` (protocol/relay.ts). A relay that goes
 * away loses its ranks (the coordinator's relay client drops them); a relay stops when the
 * coordinator says bye or goes silent. It needs no GPU and no program: only the token.
 */
import { accumulateBf16, packBf16 } from "../../tensor/mod.ts";
import { accumulate } from "../coordinator/reduce/consensus.ts";
import {
  checkFrame,
  connectLink,
  decodeRelayToken,
  serversOf,
  decodeValue,
  importLinkKey,
  type NatsConnection,
  type RelayCredentials,
  relaySubject,
  serveRank,
  WireReceiver,
} from "../nats/mod.ts";
import type { Frame } from "../protocol/messages.ts";
import type { RelayAsk, SummedFrame } from "../protocol/relay.ts";

/** What a relay says when it joins (its link's hello): the coordinator checks it against the slot. */
export interface RelayHello {
  relay: number;
  host: string;
  members: number[];
}

/** Options of {@link joinRelay}. */
export interface RelayOptions {
  /** Progress lines (joined, refused frames, stopped). Default: none. */
  log?: (line: string) => void;
  /** How the coordinator names this machine (default: Deno's host name). */
  host?: string;
  /** Stop when the coordinator's beacons stay away this long, ms (default 30 000). */
  beaconLossMs?: number;
}

/** A running relay. */
export interface RunningRelay {
  /** The relay's slot in the run. */
  readonly slot: number;
  /** The run id. */
  readonly run: string;
  /** The ranks whose reduce frames the relay sums. */
  readonly members: number[];
  /** Resolves with why the relay stopped (the run ended, the coordinator vanished); rejects if it never served. */
  readonly done: Promise<string>;
}

/**
 * Run a relay with the token the coordinator printed for it (`deno run -A scripts/relay.ts <token>`).
 * @throws {TypeError} When `token` is not a relay's token.
 * @example
 * ```ts ignore
 * const relay = joinRelay(token, { log: console.log });
 * console.log(await relay.done);
 * ```
 */
export function joinRelay(token: string, opts: RelayOptions = {}): RunningRelay {
  const t = decodeRelayToken(token);
  const deno = (globalThis as { Deno?: { hostname?: () => string } }).Deno;
  let host = opts.host ?? "";
  try {
    host ||= deno?.hostname?.() ?? "";
  } catch { /* no --allow-sys */ }
  const done = (async () => {
    const connection = await connectLink(serversOf(t), t.user, t.pass, `relay (slot ${t.rank})`);
    return await serveRelay(connection, t, { ...opts, host });
  })();
  return { slot: t.rank, run: t.run, members: t.members.map((m) => m.rank), done };
}

/** One member's frames as they arrive: by round, or why none can come any more. */
interface Inbox {
  frames: Map<number, Frame>;
  /** Set when the member's stream broke (chunks lost): no later frame can be read. */
  broken?: string;
  /** Wakes `sum` waiting for this member. */
  arrived?: () => void;
}

/**
 * Serve as relay on an open connection (as the relay slot's user) until the link goes down.
 * @returns Why it stopped.
 */
export async function serveRelay(connection: NatsConnection, t: RelayCredentials, opts: RelayOptions = {}): Promise<string> {
  const log = opts.log ?? (() => {});
  const who = `relay (slot ${t.rank})`;
  const inboxes = new Map<number, Inbox>();
  for (const m of t.members) {
    const inbox: Inbox = { frames: new Map() };
    inboxes.set(m.rank, inbox);
    const receiver = new WireReceiver(relaySubject(t.run, m.rank), t.run, `r${m.rank}`, await importLinkKey(m.key), m.rank);
    let chain: Promise<void> = Promise.resolve();
    connection.subscribe(relaySubject(t.run, m.rank), {
      callback: (_err, msg) => {
        const chunk = msg.data.slice();
        chain = chain.then(async () => {
          if (inbox.broken) return;
          const r = await receiver.accept(chunk);
          if (r.kind === "refused") log(`${who}: ${r.error.message}`);
          else if (r.kind === "lost") inbox.broken = r.error.message;
          else if (r.kind === "message") {
            const f = decodeValue(r.bytes) as Frame;
            inbox.frames.set(Number(f?.round), f);
          }
          if (r.kind !== "partial") inbox.arrived?.();
        }).catch((e) => {
          inbox.broken = `rank ${m.rank}: unreadable frame at ${who}: ${e}`;
          inbox.arrived?.();
        });
      },
    });
  }

  /** Member `rank`'s frame of `round`, or why there is none, within `ms`. */
  const frameOf = async (rank: number, round: number, ms: number): Promise<Frame | string> => {
    const inbox = inboxes.get(rank);
    if (!inbox) return `rank ${rank} is not a member of ${who} (members ${t.members.map((m) => m.rank).join(", ")})`;
    const end = Date.now() + ms;
    for (;;) {
      const f = inbox.frames.get(round);
      if (f) return f;
      if (inbox.broken) return inbox.broken;
      const left = end - Date.now();
      if (left <= 0) return `rank ${rank}: its frame of round ${round} did not reach ${who} within ${ms} ms`;
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, left);
        inbox.arrived = () => {
          clearTimeout(timer);
          wake();
        };
      });
    }
  };

  const sum = async (ask: RelayAsk): Promise<SummedFrame> => {
    const params = new Float32Array(ask.paramCount);
    const buffers = new Float32Array(ask.bufferCount);
    const ranks: number[] = [];
    const refused: { rank: number; why: string }[] = [];
    const got = await Promise.all(ask.members.map((m) => frameOf(m.rank, ask.round, ask.waitMs)));
    ask.members.forEach((m, i) => {
      const f = got[i];
      if (typeof f === "string") return void refused.push({ rank: m.rank, why: f });
      try {
        checkFrame(f, { rank: m.rank, dtype: ask.dtype, round: ask.round, paramCount: ask.paramCount, bufferCount: ask.bufferCount });
        if (f.batches !== m.batches) {
          throw new RangeError(`rank ${m.rank}: frame of round ${ask.round} says ${f.batches} steps, it told the coordinator ${m.batches}`);
        }
      } catch (e) {
        return void refused.push({ rank: m.rank, why: `${(e as Error).message} (checked at ${who})` });
      }
      // Σ m_k θ_k in f32, as the coordinator folds a frame (averaging.ts); never divided.
      if (m.mass > 0) {
        if (f.dtype === "bf16") accumulateBf16(params, f.params as Uint32Array, m.mass);
        else accumulate(params, f.params as Float32Array, m.mass);
      }
      if (m.moved) accumulate(buffers, f.buffers, 1);
      ranks.push(m.rank);
    });
    for (const inbox of inboxes.values()) for (const r of inbox.frames.keys()) if (r <= ask.round) inbox.frames.delete(r);
    for (const r of refused) log(`${who}: refused ${r.why}`);
    return {
      relay: t.rank,
      round: ask.round,
      dtype: ask.dtype,
      ranks,
      params: ask.dtype === "bf16" ? packBf16(params) : params,
      buffers,
      refused,
    };
  };

  const hello: RelayHello = { relay: t.rank, host: opts.host ?? "", members: t.members.map((m) => m.rank) };
  const server = await serveRank({
    connection,
    creds: t,
    handler: { sum },
    hello,
    beaconLossMs: opts.beaconLossMs ?? 30_000,
    who,
    onRefused: (e) => log(e.message),
  });
  if (!(await server.joined)) throw new Error((await server.down).message);
  log(`${who}: joined run ${t.run} for ranks ${hello.members.join(", ")} (${hello.host || "this host"}); summing their frames`);
  const down = await server.down;
  if (down.fault === "rejected") throw new Error(down.message);
  log(`${who}: stopped: ${down.message}`);
  return down.message;
}
