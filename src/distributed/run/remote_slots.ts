/**
 * The coordinator's side of `.remoteRanks(...)`: connect to NATS as the run's coordinator,
 * open one link per remote slot (before its token is handed out), wait for each rank's
 * hello and check it against the run (protocol/remote_hello.ts). A rank refused at join is
 * told why (a bye marked refused, with the reason: its `joinRun` fails) and the run does not
 * start: the error names the rank and the item that differs. A rank whose hello does not
 * verify (a wrong key) is told by a notice signed with its password (nats/refusal.ts).
 */
import type { GraceWindows } from "../coordinator/control/grace.ts";
import { NatsTransport } from "../coordinator/transport/transport_nats.ts";
import {
  connectLink,
  coordinatorInbox,
  decodeValue,
  deriveRankKey,
  encodeJoinToken,
  fromRankSubject,
  importLinkKey,
  type NatsCoordinator,
  openCoordinator,
  type RankLink,
  relayCredentials,
  WireReceiver,
} from "../nats/mod.ts";
import { checkRemoteHello, type JoinExpectation, type RemoteHello } from "../protocol/remote_hello.ts";
import type { RemoteRanksSpec } from "./builder_state.ts";
import { joinTokenFor, REJOIN_BYE } from "./join.ts";
import type { RelayHello } from "./relay.ts";
import type { CallSite } from "./reentry.ts";

/** The open remote slots of a run. */
export interface RemoteSlots {
  /** One transport per awaited remote rank, ranks `first`..`first + slots - 1`. */
  transports: NatsTransport[];
  /** The spare slots' transports (elastic membership), ranks after those. */
  spares: NatsTransport[];
  /** The relays' links and the ranks each sums; `joined` waits for their hellos too. */
  relays: { link: RankLink; ranks: number[] }[];
  /** Wait for every awaited slot's hello and check it; resolves with the hellos, rejects naming the rank. */
  joined(want: JoinExpectation): Promise<RemoteHello[]>;
  /**
   * A spare slot's hello, once a rank joins it, checked like the others; resolves with it.
   * A refused rank is told why (its link says bye) and this rejects naming it; the run goes on.
   */
  spareJoined(t: NatsTransport, want: JoinExpectation): Promise<RemoteHello>;
  /**
   * Reopen the slot of remote rank `rank`, dropped from the run: its link is closed with
   * `REJOIN_BYE` (the rank says hello again with the same token) and a fresh one opened, on
   * a connection of its own (a NATS coordinator opens a rank's link once), once the rank's
   * new session said its first hello. Resolves with the slot's new transport, to be joined as
   * a spare slot's; with none when the slots close first (the run ended).
   * @throws {RangeError} When `rank` is not a remote slot of the run, or the slots are closed.
   */
  reopen(rank: number): Promise<NatsTransport | undefined>;
  /** Close the links and the coordinator's NATS connection. Idempotent. */
  close(): Promise<void>;
}

/** The credentials' relay slots (`assignRelay`). */
function relaysOf(spec: RemoteRanksSpec) {
  return spec.credentials.ranks.filter((r) => r.relayFor);
}

/** Check `.remoteRanks(...)` against the world (before anything starts). */
export function checkRemote(spec: RemoteRanksSpec, localRanks: number): void {
  const remote = spec.maxSlots ?? spec.slots;
  const world = localRanks + remote;
  if (!spec.credentials || spec.credentials.ranks.length < world) {
    throw new RangeError(
      `Trainer.run: remoteRanks credentials must have a slot per rank (${localRanks} local + ${remote} remote = ${world}), ` +
        `got ${spec.credentials?.ranks.length}; make them with createRunCredentials(${world})`,
    );
  }
  for (const r of relaysOf(spec)) {
    if (r.rank < world) {
      throw new RangeError(`Trainer.run: remoteRanks relay slot ${r.rank} is a rank's slot (ranks are 0..${world - 1}); relays take the slots after`);
    }
    for (const k of r.relayFor!) {
      if (k < localRanks || k >= localRanks + spec.slots) {
        throw new RangeError(
          `Trainer.run: remoteRanks relay slot ${r.rank} sums rank ${k}, which is not an awaited remote rank ` +
            `(${localRanks}..${localRanks + spec.slots - 1}): local ranks and spare slots send their frames to the coordinator`,
        );
      }
    }
  }
  if (spec.joinTimeoutSecs !== undefined && !(spec.joinTimeoutSecs > 0)) {
    throw new RangeError(`Trainer.run: remoteRanks joinTimeoutSecs must be > 0, got ${spec.joinTimeoutSecs}`);
  }
}

/**
 * Open the remote slots `first`..`first + (spec.maxSlots ?? spec.slots) - 1` and hand out
 * their tokens (the spare slots' too: a rank may join them while the run goes).
 * @param site The builder's call site (its line:col go in the tokens).
 * @param args The coordinator's program arguments (they go in the tokens).
 * @param grace The run's reconnect windows (`graceWindows(cfg)`): the coordinator's link
 *   grace, each slot's hold, and the rank's `beaconLossMs` in its token. Default: the
 *   links' own defaults and the run's heartbeat timeout.
 */
export async function openRemoteSlots(
  spec: RemoteRanksSpec,
  first: number,
  site: CallSite,
  args: Record<string, unknown>,
  grace?: GraceWindows,
): Promise<RemoteSlots> {
  const creds = spec.credentials;
  const nc = await connectLink(spec.url, creds.coordinator.user, creds.coordinator.pass, "coordinator", coordinatorInbox(creds.run));
  let coordinator: NatsCoordinator;
  try {
    coordinator = await openCoordinator({
      connection: nc,
      run: creds.run,
      runKey: creds.runKey,
      passwords: creds.ranks.map((r) => r.pass),
      graceMs: grace?.linkGraceMs,
    });
  } catch (e) {
    await nc.close().catch(() => {});
    throw e;
  }
  const transports: NatsTransport[] = [];
  const relays: { link: RankLink; ranks: number[] }[] = [];
  const total = spec.maxSlots ?? spec.slots;
  const hold = grace && { silentMs: grace.remoteHoldMs, compileMs: grace.remoteCompileMs, knob: `reconnectGraceSecs ${grace.remoteHoldMs / 1000}` };
  let closed = false;
  /** The coordinators of reopened slots (one connection each). */
  const reopened: NatsCoordinator[] = [];
  const close = async () => {
    if (closed) return;
    closed = true;
    for (const stop of [...waiting]) stop();
    await Promise.all(transports.map((t) => t.close().catch(() => {})));
    await Promise.all(relays.map((r) => r.link.close().catch(() => {})));
    await Promise.all([coordinator, ...reopened].map((c) => c.close().catch(() => {})));
  };
  /** Reopened slots still waiting for their rank's fresh hello: closing ends the wait. */
  const waiting = new Set<() => void>();
  const reopen = async (rank: number) => {
    const i = transports.findIndex((t) => t.rank === rank);
    if (i < 0 || closed) throw new RangeError(`reopen: rank ${rank} is not an open remote slot of the run (${first}..${first + total - 1})`);
    const conn = await connectLink(spec.url, creds.coordinator.user, creds.coordinator.pass, "coordinator", coordinatorInbox(creds.run));
    const own = await openCoordinator({ connection: conn, run: creds.run, runKey: creds.runKey, passwords: creds.ranks.map((r) => r.pass), graceMs: grace?.linkGraceMs })
      .catch(async (e) => {
        await conn.close().catch(() => {});
        throw e;
      });
    reopened.push(own);
    // Listen before the bye goes out: the rank's new session starts after it.
    const fresh = freshHello(conn, rank);
    await transports[i].close(REJOIN_BYE).catch(() => {});
    if (!(await fresh)) return undefined;
    return transports[i] = await NatsTransport.open(own, rank, hold, coordinator);
  };
  /**
   * Resolves true once rank `rank`'s new session says its first hello (sequence 1), false
   * when the slots close first. A link opened at once would take the first chunk it hears as
   * the start of the rank's sequence (`WireReceiver`'s lenient start): the old session's last
   * chunks (a stopped rank sends them once it runs again, before it reads the bye), after
   * which every chunk of the new session looks already seen. A strict receiver here hears only
   * a session from its start; the link then takes the rank's next hello (resent every 500 ms).
   */
  const freshHello = async (conn: typeof nc, rank: number) => {
    const gate = new WireReceiver(fromRankSubject(creds.run, rank), creds.run, `r${rank}`, await importLinkKey(await deriveRankKey(creds.runKey, rank)), rank);
    let chain = Promise.resolve();
    return await new Promise<boolean>((resolve) => {
      const done = (ok: boolean) => {
        waiting.delete(stop);
        if (!conn.isClosed()) sub.unsubscribe();
        resolve(ok);
      };
      const stop = () => done(false);
      waiting.add(stop);
      const sub = conn.subscribe(fromRankSubject(creds.run, rank), {
        callback: (_err, msg) => {
          const chunk = msg.data.slice();
          chain = chain.then(async () => {
            const r = await gate.accept(chunk);
            if (r.kind === "message" && (decodeValue(r.bytes) as { k?: string } | null)?.k === "hello") done(true);
          }).catch(() => {});
        },
      });
    });
  };
  try {
    for (let rank = first; rank < first + total; rank++) {
      transports.push(await NatsTransport.open(coordinator, rank, hold));
      spec.onJoinToken?.(rank, joinTokenFor(spec.joinUrl ?? spec.url, creds.ranks[rank], site, args, grace?.beaconLossMs));
    }
    for (const r of relaysOf(spec)) {
      relays.push({ link: await coordinator.link(r.rank, { who: `relay (slot ${r.rank})` }), ranks: r.relayFor! });
      spec.onRelayToken?.(r.rank, encodeJoinToken(spec.joinUrl ?? spec.url, relayCredentials(creds, r.rank)), r.relayFor!);
    }
  } catch (e) {
    await close();
    throw e;
  }
  const timeoutMs = (spec.joinTimeoutSecs ?? 600) * 1000;
  const awaited = transports.slice(0, spec.slots);
  /** A slot's hello checked against the run: refused (told why, rejects naming the rank) or passed. */
  const check = async (t: NatsTransport, want: JoinExpectation) => {
    const hello = await t.link.ready;
    const why = checkRemoteHello(t.rank, hello, want);
    if (why) {
      await t.link.refuse(why);
      throw new Error(why);
    }
    spec.onJoined?.(t.rank, hello as RemoteHello);
    return hello as RemoteHello;
  };

  return {
    transports: awaited,
    spares: transports.slice(spec.slots),
    relays,
    close,
    reopen,
    spareJoined: check,
    async joined(want) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waiting = new Set([...awaited.map((t) => `rank ${t.rank}`), ...relays.map((r) => `relay slot ${r.link.rank}`)]);
      const late = new Promise<never>((_, reject) =>
        timer = setTimeout(() => {
          reject(new Error(`remote ${[...waiting].join(", ")} did not join within ${timeoutMs / 1000} s (remoteRanks joinTimeoutSecs)`));
        }, timeoutMs)
      );
      try {
        const relaysIn = Promise.all(relays.map(async (r) => {
          const hello = await r.link.ready as Partial<RelayHello> | null;
          waiting.delete(`relay slot ${r.link.rank}`);
          if (hello?.relay !== r.link.rank || JSON.stringify(hello.members) !== JSON.stringify(r.ranks)) {
            const why = `relay slot ${r.link.rank}: refused at join: its hello ${JSON.stringify(hello)} is not this slot's relay for ranks ${r.ranks.join(", ")}`;
            await r.link.refuse(why);
            throw new Error(why);
          }
        }));
        const [hellos] = await Promise.race([
          late,
          Promise.all([
            Promise.all(awaited.map(async (t) => {
              await t.link.ready;
              waiting.delete(`rank ${t.rank}`);
              return check(t, want);
            })),
            relaysIn,
          ]),
        ]);
        return hellos;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
