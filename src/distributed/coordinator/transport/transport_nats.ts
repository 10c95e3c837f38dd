/**
 * The NATS transport: a rank in another process or on another machine (run/join.ts on its
 * side), reached through a {@link RankLink} of the NATS link (distributed/nats). Requests
 * are the link's calls by name, the rank's events arrive in order through `onEvent`, and
 * the link going down (connection lost, bye, lost chunks) is the transport's `down`.
 *
 * A worker runs our code; a remote rank is input: every frame it answers with is checked
 * (`checkFrame`: rank, round, dtype, sizes, NaN/Inf) before the coordinator may average
 * it. A bad frame, or an error of the link itself, rejects as a {@link RankLostError}: the
 * client drops the rank (the run goes on without it), never averages what it sent.
 *
 * The consensus of an adoption is cast (nats/cast.ts): published once for every rank, the
 * `adopt` call naming it by digest; a rank that did not get the cast is sent it inline.
 */
import { CAST_MISSED, checkFrame, type NatsCoordinator, type RankLink, RankLinkError } from "../../nats/mod.ts";
import { RankLostError } from "../../protocol/errors.ts";
import type { Adoption, Frame, RankHello, RankSetup, WireDtype } from "../../protocol/messages.ts";
import { RANK_CALL_TABLE } from "../../protocol/rank_calls.ts";
import type { RankHold } from "./rank_client.ts";
import type { RankCallName, RankCalls, RankEvent, RankListener, RankTransport } from "../../protocol/transport.ts";

const EVENT_KINDS: ReadonlySet<string> = new Set(["batch", "heartbeat", "compiling"]);

export class NatsTransport implements RankTransport {
  readonly messages = false;
  #listener?: RankListener;
  #closed = false;
  /** From `init`: the relay the rank's reduce frames go to (its snapshot answers carry no values). */
  #relay?: number;
  /** From `init`: the frame sizes every answer is checked against. */
  #counts?: { paramCount: number; bufferCount: number };
  /** The version of the last adoption sent: the round of the rank's `finalState` frame. */
  #version?: number;
  /**
   * Compiling calls (`RANK_CALL_TABLE`) answered once; first runs in flight; a batch seen
   * (train compiled). A worker says "compiling" before its thread blocks and the message
   * leaves at once; a remote rank's notice is signed (WebCrypto, async) and sent after the
   * block, so it arrives too late. Until such a call has run once (`train`: until its first
   * batch), the rank's heartbeats count as "compiling" here: the client allows the stall
   * ceiling, not the heartbeat timeout.
   */
  #warm = new Set<string>();
  #warming = new Set<string>();
  #trained = false;

  /**
   * Open rank slot `rank` on the coordinator's NATS side (before its join token goes out,
   * so no hello is missed). Its `link.ready` resolves with the rank's hello. `castFrom`: the
   * coordinator whose casts the adoptions name (default `coordinator`; a reopened slot's link
   * has a connection of its own, the casts stay the run's).
   */
  static async open(coordinator: NatsCoordinator, rank: number, hold?: RankHold, castFrom: NatsCoordinator = coordinator): Promise<NatsTransport> {
    const box: { transport?: NatsTransport; early: unknown[] } = { early: [] };
    const link = await coordinator.link(rank, {
      onEvent: (e) => (box.transport ? box.transport.#event(e) : box.early.push(e)),
      onRefused: (e) => console.warn(`flodl: ${e.message}`),
    });
    const transport = box.transport = new NatsTransport(rank, link, castFrom, hold);
    for (const e of box.early) transport.#event(e);
    return transport;
  }

  /** The rank's connection is still at the server (its silence is a blocked thread, not a gone rank). */
  present(): Promise<boolean> {
    return this.link.present();
  }

  /**
   * @param coordinator Where the consensus is cast from; without it each rank gets it inline.
   * @param hold How long the rank may be silent before it is lost (the run's `reconnectGraceSecs`);
   *   none: the run's heartbeat timeout.
   */
  constructor(readonly rank: number, readonly link: RankLink, readonly coordinator?: NatsCoordinator, readonly hold?: RankHold) {
    link.down.then((e) => {
      if (!this.#closed) this.#listener?.down(e.message);
    });
  }

  #event(e: unknown): void {
    const kind = (e as RankEvent | null)?.kind;
    if (typeof kind !== "string" || !EVENT_KINDS.has(kind)) return;
    if (kind === "batch") this.#trained = true;
    this.#listener?.event(kind === "heartbeat" && this.#compiling() ? { kind: "compiling" } : e as RankEvent);
  }

  /** A first run of a compiling call is in flight (train: until its first batch). */
  #compiling(): boolean {
    for (const name of this.#warming) if (name !== "train" || !this.#trained) return true;
    return false;
  }

  listen(listener: RankListener): void {
    this.#listener = listener;
  }

  async request<K extends RankCallName>(name: K, ...args: RankCalls[K]["args"]): Promise<RankCalls[K]["result"]> {
    let result: unknown;
    const first = RANK_CALL_TABLE[name].compiles && !this.#warm.has(name) && !this.#warming.has(name);
    if (first) {
      this.#warming.add(name);
      this.#listener?.event({ kind: "compiling" });
    }
    try {
      result = await this.#call(name, args);
    } catch (e) {
      // The link's own failure is a lost rank; the rank's error keeps its name and message.
      if (e instanceof RankLinkError) throw new RankLostError(this.rank, e.message, { cause: e });
      throw e;
    } finally {
      if (first) {
        this.#warming.delete(name);
        this.#warm.add(name);
      }
    }
    if (name === "init") {
      this.#relay = (args[0] as RankSetup).relay;
      this.#counts = (result as RankHello).layout;
    } else if (name === "adopt") this.#version = (args[0] as Adoption).version;
    else if (name === "snapshot") {
      // In the dtype the request asked for (the round's wire), behind the rank's relay if any.
      const [round, dtype] = args as RankCalls["snapshot"]["args"];
      this.#checked(result, round, dtype, this.#relay);
    } else if (RANK_CALL_TABLE[name].frame) {
      // The broadcast's and join()'s exact state (initialState, finalState): always f32.
      const frame = result as Frame;
      this.#checked(frame, name === "initialState" ? 0 : this.#version ?? frame?.round, "f32");
    }
    return result as RankCalls[K]["result"];
  }

  /** The call on the link; an adoption's consensus cast, and sent inline when the rank missed the cast. */
  async #call(name: RankCallName, args: readonly unknown[]): Promise<unknown> {
    if (name !== "adopt" || !this.coordinator) return await this.link.call(name, args);
    const a = args[0] as Adoption;
    try {
      return await this.link.call(name, [{ ...a, consensus: await this.coordinator.cast(a.consensus) }]);
    } catch (e) {
      if ((e as Error).name !== CAST_MISSED) throw e;
      return await this.link.call(name, args);
    }
  }

  /** Refuse a bad frame: the rank is dropped (its link closed), the frame never averaged. */
  #checked(frame: unknown, round: number, dtype: WireDtype, via?: number): void {
    if (!this.#counts) throw new RankLostError(this.rank, `rank ${this.rank}: sent a frame before init`);
    try {
      checkFrame(frame, { rank: this.rank, dtype, round, via, ...this.#counts });
    } catch (e) {
      const err = new RankLostError(this.rank, `${(e as Error).message}; the rank is dropped`, { cause: e });
      this.link.close(`its frame was refused: ${(e as Error).message}`).catch(() => {});
      throw err;
    }
  }

  /** Close the link; the rank is told `reason` in its bye (default: the link's). */
  async close(reason?: string): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.link.close(reason);
  }
}
