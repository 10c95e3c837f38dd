/**
 * The rank's side of the NATS link: serves a handler object's methods to the coordinator,
 * emits events, and watches the coordinator's beacon. The rank stops (its `onDown` runs,
 * then the connection closes) when the coordinator says bye, its beacons stay away for
 * `beaconLossMs` (a lost connection reconnects and the link resumes within that time), or
 * the connection closes: a rank never trains on for a coordinator that is gone. A rank the coordinator turns away at join (its hello does not verify:
 * a refusal notice signed with the slot's password, refusal.ts; or a bye marked refused:
 * its hello failed the run's checks) stops with fault `rejected`, naming why.
 */
import { CAST_MISSED, CAST_WAIT_MS, Cast, CastInbox } from "./cast.ts";
import { decodeValue, encodeValue } from "./codec.ts";
import type { NatsConnection } from "./connect.ts";
import { maxPayloadOf } from "./connect.ts";
import type { RankCredentials } from "./credentials.ts";
import { RankLinkError } from "./errors.ts";
import { type FromRank, type ToRank, toWireError } from "./messages.ts";
import { isRefusal, openRefusal } from "./refusal.ts";
import { castSubject, checkRunId, fromRankSubject, toRankSubject } from "./subjects.ts";
import { importLinkKey, WireReceiver, WireSender } from "./wire.ts";

/** Methods the coordinator may call by name; each gets the call's arguments. */
export type RankHandler = Record<string, (...args: any[]) => unknown>;

/** How a rank serves. */
export interface RankServeOptions {
  /** An open connection as this rank's user; the rank owns it from here on. */
  connection: NatsConnection;
  /**
   * This rank's run id, slot and key (its join token), and its NATS password: a refusal
   * at join is signed with it (refusal.ts); without it such a refusal is not heard.
   */
  creds: Pick<RankCredentials, "run" | "rank" | "key" | "cast"> & { pass?: string };
  /** The methods served (the rank runtime's API). */
  handler: RankHandler;
  /** Sent with the hello (host, adapter, program): the coordinator's `ready` resolves with it. */
  hello?: unknown;
  /** Stop when nothing arrives from the coordinator for this long, ms (default 10 000; > 2 beacons). */
  beaconLossMs?: number;
  /** Resend the hello this often until the coordinator answers, ms (default 500). */
  helloMs?: number;
  /** Runs once when the link goes down, before the connection closes: stop training, release the device. */
  onDown?: (reason: RankLinkError) => void | Promise<void>;
  /** A message refused (forged, replayed, tampered) or a permission error of the server, dropped. */
  onRefused?: (error: RankLinkError) => void;
  /** How this side is named in messages (default `rank <k>`; a relay's slot: `relay (slot <k>)`). */
  who?: string;
  /** How long a call waits for the cast it names (cast.ts), ms (default `CAST_WAIT_MS`). */
  castWaitMs?: number;
}

/** A serving rank. */
export interface RankServer {
  /** Send an event to the coordinator (ordered with results; dropped once down). */
  emit(event: unknown): void;
  /**
   * Resolves (never rejects) true once the coordinator answered the hello (it accepted the
   * rank), false when the link went down first (refused at join, no answer, connection lost).
   */
  readonly joined: Promise<boolean>;
  /** Resolves (never rejects) with why the link went down, after `onDown` ran and the connection closed. */
  readonly down: Promise<RankLinkError>;
  /** Say bye and stop (as if the coordinator were gone, with this reason). */
  close(reason?: string): Promise<void>;
}

/** Names a handler may not be called by: Object's own (toString, constructor, __proto__...). */
const FORBIDDEN = new Set(Object.getOwnPropertyNames(Object.prototype));


/** `v` with each {@link Cast} in it (arrays and plain objects) replaced by the value it names. */
async function swapCasts(v: unknown, inbox: CastInbox | undefined, who: string, waitMs: number): Promise<unknown> {
  if (v instanceof Cast) {
    if (!inbox) throw Object.assign(new Error(`${who}: a call names cast ${v.id}, but its token has no cast key`), { name: CAST_MISSED });
    return decodeValue(await inbox.take(v, waitMs));
  }
  if (Array.isArray(v)) return await Promise.all(v.map((x) => swapCasts(x, inbox, who, waitMs)));
  if (v === null || typeof v !== "object" || ArrayBuffer.isView(v) || v instanceof ArrayBuffer) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = await swapCasts(x, inbox, who, waitMs);
  return out;
}

/** How long a rank that goes down waits for its connection to drain and close, ms. */
const DRAIN_MS = 5000;

/** `p`, or nothing after `ms`. */
async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([p, new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}
/**
 * Serve `handler` on this rank's subjects until the link goes down.
 * @throws {RangeError} On a bad run id or a server max_payload too small to chunk.
 * @example
 * ```ts ignore
 * const t = decodeJoinToken(token);
 * const nc = await connectLink(t.url, t.user, t.pass, `rank ${t.rank}`);
 * const server = await serveRank({ connection: nc, creds: t, handler: runtime, onDown: () => runtime.stop() });
 * console.log((await server.down).message);
 * ```
 */
export async function serveRank(opts: RankServeOptions): Promise<RankServer> {
  const { connection: nc, handler } = opts;
  const { run, rank } = opts.creds;
  checkRunId(run);
  const lossMs = opts.beaconLossMs ?? 10_000;
  const helloMs = opts.helloMs ?? 500;
  const who = opts.who ?? `rank ${rank}`;
  if (!(lossMs > 0)) throw new RangeError(`serveRank: beaconLossMs must be > 0, got ${lossMs}`);
  if (!(helloMs > 0)) throw new RangeError(`serveRank: helloMs must be > 0, got ${helloMs}`);
  const castWaitMs = opts.castWaitMs ?? CAST_WAIT_MS;
  if (!(castWaitMs > 0)) throw new RangeError(`serveRank: castWaitMs must be > 0, got ${castWaitMs}`);
  const key = await importLinkKey(opts.creds.key);
  const receiver = new WireReceiver(toRankSubject(run, rank), run, "c", key, rank, false, true);
  const sender = new WireSender(
    (s, d) => nc.publish(s, d),
    fromRankSubject(run, rank),
    run,
    `r${rank}`,
    key,
    maxPayloadOf(nc, who),
    { received: () => receiver.last },
  );
  /** When this side last asked to resume, and from where: once per gap, again after a second. */
  let asked = { have: -1, at: 0 };
  const askResume = (have: number) => {
    const now = Date.now();
    if (asked.have === have && now - asked.at < 1000) return;
    asked = { have, at: now };
    sender.askResume(have).catch(() => {});
  };
  const inbox = opts.creds.cast === undefined ? undefined : new CastInbox(run, await importLinkKey(opts.creds.cast), rank, (r) => opts.onRefused?.(r.error));

  let isDown: RankLinkError | undefined;
  // Declared up front: the connection may close (and goDown run) before they start.
  let hello: ReturnType<typeof setInterval> | undefined;
  let watchdog: ReturnType<typeof setInterval> | undefined;
  let status: Promise<void> = Promise.resolve();
  let heard = false;
  let lastHeard = Date.now();
  let resolveDown!: (e: RankLinkError) => void;
  const down = new Promise<RankLinkError>((r) => resolveDown = r);
  let resolveJoined!: (yes: boolean) => void;
  const joined = new Promise<boolean>((r) => resolveJoined = r);
  const send = (m: FromRank) => sender.send(encodeValue(m));

  const goDown = async (error: RankLinkError) => {
    if (isDown) return;
    isDown = error;
    resolveJoined(false); // no-op once joined
    clearInterval(hello);
    clearInterval(watchdog);
    inbox?.close();
    try {
      await opts.onDown?.(error);
    } catch { /* the rank stops anyway */ }
    // NOTE: a drain needs the server. One that went away meanwhile (a coordinator stops its
    // server right after its bye) can leave a browser's WebSocket client pending for good,
    // and a rank that never says it stopped is a hang: wait DRAIN_MS at most, then close.
    if (!nc.isClosed()) await within(nc.drain().catch(() => {}), DRAIN_MS);
    if (!nc.isClosed()) await within(nc.close().catch(() => {}), DRAIN_MS);
    await within(status, DRAIN_MS);
    resolveDown(error);
  };

  // Handlers are invoked in the calls' order, each once its casts are swapped in (a call
  // waiting for its cast holds back the calls after it, never their answers).
  let invoking: Promise<unknown> = Promise.resolve();
  const answer = async (id: number, name: string, args: unknown[]) => {
    try {
      const fn = handler[name];
      if (FORBIDDEN.has(name) || typeof fn !== "function") throw new TypeError(`${who} has no method "${name}"`);
      const invoked = invoking.then(async () => ({ result: fn.apply(handler, await swapCasts(args, inbox, who, castWaitMs) as unknown[]) }));
      invoking = invoked.catch(() => {});
      const value = await (await invoked).result;
      if (!isDown) await send({ k: "result", id, value });
    } catch (e) {
      if (!isDown) await send({ k: "error", id, error: toWireError(e) }).catch(() => {});
    }
  };

  const dispatch = (m: ToRank) => {
    heard = true;
    lastHeard = Date.now();
    if (m.k === "bye" && m.refused) {
      goDown(new RankLinkError(rank, "rejected", `${who}: the coordinator refused it at join: ${m.reason}`));
      return;
    }
    resolveJoined(true);
    if (m.k === "call") answer(m.id, m.name, m.args);
    else if (m.k === "bye") {
      goDown(new RankLinkError(rank, "down", `${who}: the coordinator ended the run (${m.reason})`));
    }
  };
  /** A refusal notice (refusal.ts): heard before join only, and only if the slot's password signed it. */
  const refusal = async (bytes: Uint8Array) => {
    const pass = opts.creds.pass;
    const reason = heard || pass === undefined ? undefined : await openRefusal(pass, run, rank, bytes);
    if (reason !== undefined) goDown(new RankLinkError(rank, "rejected", `${who}: the coordinator refused it at join: ${reason}`));
    else opts.onRefused?.(new RankLinkError(rank, "refused", `${who}: dropped a refusal notice that does not verify with its password or came after join`));
  };

  let chain: Promise<void> = Promise.resolve();
  nc.subscribe(toRankSubject(run, rank), {
    callback: (_err, msg) => {
      // An empty message is the coordinator's presence probe (coordinator_link.ts): the
      // server's delivery is its answer; the rank sends nothing back.
      if (msg.data.length === 0) return;
      const chunk = msg.data.slice();
      chain = chain.then(async () => {
        if (isDown) return;
        if (isRefusal(chunk)) return await refusal(chunk);
        const r = await receiver.accept(chunk);
        sender.acknowledged(receiver.ack);
        if (r.kind === "refused") opts.onRefused?.(r.error);
        else if (r.kind === "lost") goDown(r.error);
        else if (r.kind === "gap") askResume(r.have);
        else if (r.kind === "resume") await sender.resend(r.have);
        else if (r.kind === "message") dispatch(decodeValue(r.bytes) as ToRank);
      }).catch((e) =>
        goDown(
          new RankLinkError(rank, "down", `${who}: unreadable message from the coordinator: ${e}`, { cause: e }),
        )
      );
    },
  });
  if (inbox) nc.subscribe(castSubject(run), { callback: (_err, msg) => inbox.receive(msg.data.slice()) });
  // NOTE: what the socket delivered before it went away is read first: a coordinator that
  // says bye and stops its server at once must end the rank as a bye, not as a lost link
  // (the bye's chunk is still in `chain`, being verified, when the disconnect arrives).
  const lost = (error: RankLinkError) => within(chain, DRAIN_MS).then(() => goDown(error));
  status = (async () => {
    for await (const s of nc.status()) {
      if (s.type === "error") {
        opts.onRefused?.(
          new RankLinkError(rank, "refused", `${who}: the NATS server refused: ${s.error?.message}`, {
            cause: s.error,
          }),
        );
      } else if (s.type === "reconnect" && !isDown) {
        // Back within beaconLossMs (the watchdog's deadline for any silence): send what the
        // coordinator may have missed, and ask for what this side did.
        sender.resend().catch(() => {});
        askResume(receiver.last);
      }
    }
  })();
  nc.closed().then((err) => {
    lost(
      new RankLinkError(rank, "down", `${who}: its NATS connection closed${err ? `: ${err.message}` : ""}`, {
        cause: err,
      }),
    );
  });
  await nc.flush(); // subscribed at the server before the first hello

  const sayHello = () => {
    if (!heard && !isDown) send({ k: "hello", info: opts.hello ?? null }).catch(() => {});
  };
  if (!isDown) hello = setInterval(sayHello, helloMs);
  sayHello();
  // NOTE: a rank's thread may block for seconds (pipeline compiles): a tick that comes much
  // later than scheduled skips the check once, so beacons queued meanwhile are read first.
  const tick = Math.max(10, Math.min(250, lossMs / 4));
  let lastTick = Date.now();
  if (!isDown) {
    watchdog = setInterval(() => {
      const now = Date.now(), late = now - lastTick > 2 * tick;
      lastTick = now;
      if (!late && now - lastHeard > lossMs) {
        const what = heard ? "no beacon from the coordinator" : "no answer to its hello";
        goDown(
          new RankLinkError(
            rank,
            "down",
            `${who}: ${what} for ${now - lastHeard} ms (beaconLossMs ${lossMs}); stopping`,
          ),
        );
      }
    }, tick);
  }

  return {
    emit(event) {
      if (!isDown) send({ k: "event", event }).catch(() => {});
    },
    joined,
    down,
    async close(reason = "the rank stopped") {
      if (isDown) return;
      if (!nc.isClosed()) await send({ k: "bye", reason }).catch(() => {});
      await goDown(new RankLinkError(rank, "down", `${who}: ${reason}`));
    },
  };
}
