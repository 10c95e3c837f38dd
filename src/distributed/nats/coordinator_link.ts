/**
 * The coordinator's side of the NATS link: one connection, one {@link RankLink} per rank
 * slot. A link calls the rank's methods by name (`call`), receives its events in the order
 * the rank sent them (results and events share one stream), and reports the rank down
 * when the connection is lost, the rank says bye, or chunks are lost: every pending call
 * then rejects with a {@link RankLinkError} naming the rank, and later calls reject at once.
 */
import { type Cast, CastSender } from "./cast.ts";
import { decodeValue, encodeValue } from "./codec.ts";
import { RequestError } from "@nats-io/nats-core";
import type { NatsConnection } from "./connect.ts";
import { maxPayloadOf } from "./connect.ts";
import { deriveCastKey, deriveRankKey } from "./credentials.ts";
import { RankLinkError } from "./errors.ts";
import { type FromRank, fromWireError, type ToRank } from "./messages.ts";
import { sealRefusal } from "./refusal.ts";
import { checkRunId, fromRankSubject, toRankSubject } from "./subjects.ts";
import { importLinkKey, WireReceiver, WireSender } from "./wire.ts";

/** How the coordinator side runs. */
export interface CoordinatorLinkOptions {
  /** An open connection as the run's coordinator user; the coordinator owns it from here on. */
  connection: NatsConnection;
  /** Run id and run key (from `createRunCredentials`). */
  run: string;
  runKey: string;
  /** Beacon period in ms (default 1000): ranks stop when beacons stay away for their `beaconLossMs`. */
  beaconMs?: number;
  /**
   * Rank slot k's NATS password at index k (`creds.ranks.map((r) => r.pass)`). A hello that
   * does not verify (the rank's token carries another key) is answered with a refusal
   * signed with the slot's password (refusal.ts), the one secret both sides still share,
   * so the rank stops and says why. Without it the rank is not told (it stops when its
   * hellos stay unanswered for its `beaconLossMs`).
   */
  passwords?: readonly string[];
  /**
   * How long the coordinator's own connection may stay lost before every link is down, ms
   * (default 30 000). Within it the connection reconnects and each link resumes where it
   * stopped (wire.ts): nothing lost, nothing twice.
   */
  graceMs?: number;
}

/** Listeners of one rank link, given when it opens so no early event is missed. */
export interface RankLinkListeners {
  /** Each event the rank emits, in order with the results of its calls. */
  onEvent?: (event: unknown) => void;
  /**
   * A message refused (forged, replayed, tampered, wrong run or sender) and dropped. Before
   * the rank joined, only the first is reported: a rank with a wrong key resends its hello
   * until told, and each would be the same refusal.
   */
  onRefused?: (error: RankLinkError) => void;
  /** How the slot is named in messages (default `rank <k>`; a relay's: `relay (slot <k>)`). */
  who?: string;
}

/** The coordinator's handle on one remote rank. */
export interface RankLink {
  readonly rank: number;
  /** Resolves with the rank's hello info once it joined; rejects if the link goes down first. */
  readonly ready: Promise<unknown>;
  /**
   * Call the rank's method `name` with `args` (structured data, typed arrays as binary).
   * Waits for `ready`. Rejects with the rank's own error (name, message, stack kept), or
   * with a {@link RankLinkError} when the link goes down before the answer.
   */
  call(name: string, args?: readonly unknown[]): Promise<unknown>;
  /** Resolves (never rejects) with why the link went down. */
  readonly down: Promise<RankLinkError>;
  /** Bytes of chunks sent to and received from this rank (payload with headers and MACs). */
  readonly bytes: { sent: number; received: number };
  /** Tell the rank to stop (bye) and take the link down. */
  close(reason?: string): Promise<void>;
  /**
   * Turn the rank away at join (its hello failed the run's checks): a bye marked refused,
   * so the rank's `joinRun` fails with `reason` instead of ending as a finished run.
   */
  refuse(reason: string): Promise<void>;
  /**
   * Whether the rank's connection is still at the server: false when the link is down or
   * nothing subscribes to the rank's subject any more (a closed tab, a killed process: the
   * server dropped its connection), which the server answers at once ("no responders"),
   * however busy the rank is. True otherwise, also while the rank's thread is blocked: the
   * probe is a request the rank never answers, so a live rank lets it time out.
   */
  present(): Promise<boolean>;
}

/** How long a presence probe waits for the server's "no responders", ms. */
const PROBE_MS = 2000;

/** The coordinator's side of a run on NATS. */
export interface NatsCoordinator {
  /**
   * Open the link to rank slot `rank` (subscribes at once: open it before handing out the
   * rank's join token, or the rank's first hellos are missed and it resends them).
   * @throws {RangeError} When the slot is already open.
   */
  link(rank: number, listeners?: RankLinkListeners): Promise<RankLink>;
  /**
   * Publish `value` once to every rank slot (cast.ts) and get the {@link Cast} that a
   * call's arguments name it by; the same object again gives the same cast, published once.
   */
  cast(value: object): Promise<Cast>;
  /** Bytes of chunks published on the cast subject so far. */
  readonly castBytes: number;
  /** Say bye to every rank, stop beacons and close the connection. */
  close(): Promise<void>;
}

function deferred<T>() {
  let resolve!: (v: T) => void, reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

class Link implements RankLink {
  #received = 0;
  readonly #ready = deferred<unknown>();
  readonly #down = deferred<RankLinkError>();
  #isDown?: RankLinkError;
  #joined = false;
  /** A refusal before join was reported (once per slot). */
  #refusedAtJoin = false;
  #next = 1;
  #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  #chain: Promise<void> = Promise.resolve();
  readonly ready = this.#ready.promise;
  readonly down = this.#down.promise;

  constructor(
    readonly rank: number,
    private readonly sender: WireSender,
    private readonly receiver: WireReceiver,
    private readonly listeners: RankLinkListeners,
    private readonly unsubscribe: () => void,
    private readonly probe: () => Promise<unknown>,
    /** Send the rank a refusal notice signed with its password (refusal.ts); undefined without the password. */
    private readonly notify?: (reason: string) => Promise<void>,
  ) {
    this.ready.catch(() => {}); // a link that never joined is reported through `down`
  }

  get bytes(): { sent: number; received: number } {
    return { sent: this.sender.bytesSent, received: this.#received };
  }

  /** How the slot is named in messages. */
  get who(): string {
    return this.listeners.who ?? `rank ${this.rank}`;
  }

  get joined(): boolean {
    return this.#joined && !this.#isDown;
  }

  /** One chunk from the rank, in arrival order. */
  receive(chunk: Uint8Array<ArrayBuffer>): void {
    this.#received += chunk.byteLength;
    this.#chain = this.#chain.then(async () => {
      if (this.#isDown) return;
      const r = await this.receiver.accept(chunk);
      this.sender.acknowledged(this.receiver.ack);
      if (r.kind === "refused" && !this.#joined) await this.#refuseAtJoin(r.why);
      else if (r.kind === "refused") this.listeners.onRefused?.(r.error);
      else if (r.kind === "lost") this.goDown(r.error);
      else if (r.kind === "gap") this.#askResume(r.have);
      else if (r.kind === "resume") await this.sender.resend(r.have);
      else if (r.kind === "message") this.#dispatch(decodeValue(r.bytes) as FromRank);
    }).catch((e) =>
      this.goDown(new RankLinkError(this.rank, "down", `${this.who}: unreadable message: ${e}`, { cause: e }))
    );
  }

  /** When this side last asked to resume, and from where: once per gap, again after a second. */
  #asked = { have: -1, at: 0 };

  /** Chunks are missing after `have`: ask the rank to send its kept chunks again. */
  #askResume(have: number): void {
    const now = Date.now();
    if (this.#asked.have === have && now - this.#asked.at < 1000) return;
    this.#asked = { have, at: now };
    this.sender.askResume(have).catch(() => {});
  }

  /** This side's connection is back: send what the rank may have missed, and ask for what this side did. */
  resume(): void {
    if (this.#isDown) return;
    this.sender.resend().catch(() => {});
    this.#askResume(this.receiver.last);
  }

  /**
   * A chunk from the slot that did not verify before it joined: only slot k's user may
   * publish on its subject (the server's permissions), so this is the process holding
   * slot k's token, with another key. Each such hello is answered with a refusal; the
   * first is reported.
   */
  async #refuseAtJoin(why: string): Promise<void> {
    const hint = why.startsWith("HMAC")
      ? `: the join token's key is not slot ${this.rank}'s key in this run (a token of another run, or altered)`
      : "";
    const reason = `its hello does not verify (${why})${hint}`;
    if (!this.#refusedAtJoin) {
      this.#refusedAtJoin = true;
      const told = this.notify ? "told the rank" : "the rank is not told (no passwords given to openCoordinator)";
      this.listeners.onRefused?.(
        new RankLinkError(this.rank, "refused", `${this.who}: refused at join: ${reason}; ${told}, later refused hellos of this slot are not reported`),
      );
    }
    await this.notify?.(reason).catch(() => {});
  }

  #dispatch(m: FromRank): void {
    switch (m.k) {
      case "hello":
        if (!this.#joined) {
          this.#joined = true;
          this.receiver.pin();
          this.send({ k: "beacon" }).catch(() => {}); // answers the hello: the rank stops resending
          this.#ready.resolve(m.info);
        }
        return;
      case "event":
        this.listeners.onEvent?.(m.event);
        return;
      case "result":
      case "error": {
        const p = this.#pending.get(m.id);
        if (!p) return;
        this.#pending.delete(m.id);
        if (m.k === "result") p.resolve(m.value);
        else p.reject(fromWireError(m.error));
        return;
      }
      case "bye":
        this.goDown(new RankLinkError(this.rank, "down", `${this.who} left the run: ${m.reason}`));
    }
  }

  send(m: ToRank): Promise<void> {
    return this.sender.send(encodeValue(m));
  }

  async call(name: string, args: readonly unknown[] = []): Promise<unknown> {
    if (this.#isDown) throw this.#isDown;
    await this.ready;
    if (this.#isDown) throw this.#isDown;
    const id = this.#next++;
    // Encoded first: a function or class instance among the args is the caller's TypeError, not a dead link.
    const bytes = encodeValue({ k: "call", id, name, args: [...args] } satisfies ToRank);
    const answer = new Promise((resolve, reject) => this.#pending.set(id, { resolve, reject }));
    answer.catch(() => {}); // handled by the caller; marked here in case sending fails first
    try {
      await this.sender.send(bytes);
    } catch (e) {
      this.#pending.delete(id);
      throw this.#isDown ??
        new RankLinkError(this.rank, "down", `${this.who}: could not send call "${name}": ${e}`, { cause: e });
    }
    return answer;
  }

  goDown(error: RankLinkError): void {
    if (this.#isDown) return;
    this.#isDown = error;
    this.unsubscribe();
    for (const p of this.#pending.values()) p.reject(error);
    this.#pending.clear();
    this.#ready.reject(error);
    this.#down.resolve(error);
  }

  async present(): Promise<boolean> {
    if (this.#isDown) return false;
    try {
      await this.probe();
      return true;
    } catch (e) {
      return !(e instanceof RequestError && e.isNoResponders());
    }
  }

  async close(reason = "the coordinator closed the run"): Promise<void> {
    if (this.#isDown) return;
    if (this.#joined) await this.send({ k: "bye", reason }).catch(() => {});
    this.goDown(new RankLinkError(this.rank, "down", `${this.who}: link closed by the coordinator (${reason})`));
  }

  async refuse(reason: string): Promise<void> {
    if (this.#isDown) return;
    if (this.#joined) await this.send({ k: "bye", reason, refused: true }).catch(() => {});
    this.goDown(new RankLinkError(this.rank, "rejected", `${this.who}: refused at join by the coordinator (${reason})`));
  }
}

/**
 * Start the coordinator's side on an open connection.
 * @throws {RangeError} On a bad run id or a server max_payload too small to chunk.
 * @example
 * ```ts ignore
 * const nc = await connectLink(url, creds.coordinator.user, creds.coordinator.pass, "coordinator");
 * const coord = await openCoordinator({ connection: nc, run: creds.run, runKey: creds.runKey });
 * const rank1 = await coord.link(1, { onEvent: (e) => console.log(e) });
 * await rank1.ready;
 * const frame = await rank1.call("snapshot", [round]);
 * ```
 */
export async function openCoordinator(opts: CoordinatorLinkOptions): Promise<NatsCoordinator> {
  const { connection: nc, run, runKey } = opts;
  checkRunId(run);
  const beaconMs = opts.beaconMs ?? 1000;
  if (!(beaconMs > 0)) throw new RangeError(`openCoordinator: beaconMs must be > 0, got ${beaconMs}`);
  await nc.flush(); // connected and the server's info read
  const maxPayload = maxPayloadOf(nc, "coordinator");
  const links = new Map<number, Link>();
  const caster = new CastSender(nc, run, await importLinkKey(await deriveCastKey(runKey)), maxPayload);
  let closing = false;

  const allDown = (why: string, cause?: unknown) => {
    for (const l of links.values()) l.goDown(new RankLinkError(l.rank, "down", `${l.who}: ${why}`, { cause }));
  };
  const graceMs = opts.graceMs ?? 30_000;
  if (!(graceMs >= 0)) throw new RangeError(`openCoordinator: graceMs must be >= 0, got ${graceMs}`);
  const beacon = setInterval(() => {
    for (const l of links.values()) if (l.joined) l.send({ k: "beacon" }).catch(() => {});
  }, beaconMs);
  // A lost connection reconnects (connect.ts) and every link resumes; one away past graceMs
  // is a death.
  let lostAt: ReturnType<typeof setTimeout> | undefined;
  const watch = (async () => {
    for await (const s of nc.status()) {
      if ((s.type === "disconnect" || s.type === "staleConnection") && lostAt === undefined && !closing) {
        lostAt = setTimeout(() => {
          allDown(`the coordinator's NATS connection was lost (${s.type}) for more than graceMs ${graceMs}`);
          nc.close().catch(() => {});
        }, graceMs);
      } else if (s.type === "reconnect") {
        clearTimeout(lostAt);
        lostAt = undefined;
        for (const l of links.values()) l.resume();
      }
    }
  })();
  nc.closed().then((err) => {
    clearInterval(beacon);
    clearTimeout(lostAt);
    allDown(
      closing
        ? "the coordinator closed its NATS connection"
        : `the coordinator's NATS connection closed${err ? `: ${err.message}` : ""}`,
      err,
    );
  });

  return {
    async link(rank, listeners = {}) {
      if (!Number.isInteger(rank) || rank < 0) {
        throw new RangeError(`NatsCoordinator.link: rank must be an integer >= 0, got ${rank}`);
      }
      if (links.has(rank)) throw new RangeError(`NatsCoordinator.link: rank ${rank} is already open`);
      if (nc.isClosed()) {
        throw new RankLinkError(rank, "down", `rank ${rank}: the coordinator's NATS connection is closed`);
      }
      const key = await importLinkKey(await deriveRankKey(runKey, rank));
      const receiver = new WireReceiver(fromRankSubject(run, rank), run, `r${rank}`, key, rank, true, true);
      const sender = new WireSender((s, d) => nc.publish(s, d), toRankSubject(run, rank), run, "c", key, maxPayload, {
        received: () => receiver.last,
      });
      const pass = opts.passwords?.[rank];
      const notify = pass === undefined ? undefined : async (reason: string) => {
        if (!nc.isClosed()) nc.publish(toRankSubject(run, rank), await sealRefusal(pass, run, rank, reason));
      };
      const link = new Link(rank, sender, receiver, listeners, () => {
        if (!nc.isClosed()) sub.unsubscribe();
      }, () => nc.request(toRankSubject(run, rank), new Uint8Array(0), { timeout: PROBE_MS }), notify);
      const sub = nc.subscribe(fromRankSubject(run, rank), { callback: (_err, msg) => link.receive(msg.data.slice()) });
      links.set(rank, link);
      await nc.flush(); // the subscription is live at the server before the token goes out
      return link;
    },
    cast(value) {
      return caster.publish(value, () => encodeValue(value));
    },
    get castBytes() {
      return caster.bytesSent;
    },
    async close() {
      closing = true;
      clearInterval(beacon);
      await Promise.all([...links.values()].map((l) => l.close()));
      if (!nc.isClosed()) await nc.drain().catch(() => nc.close());
      await watch;
    },
  };
}
