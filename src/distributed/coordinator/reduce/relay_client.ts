/**
 * The coordinator's handle on one relay (the relay process is run/relay.ts):
 * asks it for the sum of a round over its member ranks, checks what comes back like a
 * frame (round, dtype, sizes, NaN/Inf, and that the ranks it summed are the ones asked),
 * and keeps the relay's members in step with it:
 *
 * - a member whose frame the relay refused (or that never reached it) is lost, naming why,
 *   and its link is closed, as a rank whose frame the coordinator refuses;
 * - the relay lost (its link down, its connection gone from the server, a sum that fails
 *   or does not check) loses every member still alive: their frames cannot reach the
 *   root any more. The run goes on without them within `maxFailure`, or stops.
 *
 * Nothing else about a relayed rank differs: its calls, events and heartbeats go straight
 * to the coordinator, so a rank dying behind a relay is lost as any rank is.
 */
import { checkFrame, type RankLink } from "../../nats/mod.ts";
import { describeError, RankLostError } from "../../protocol/errors.ts";
import type { Frame, LayoutTable, WireDtype } from "../../protocol/messages.ts";
import type { FrameRelay, RelayAsk, SummedFrame } from "../../protocol/relay.ts";
import { paramMass } from "./consensus.ts";
import type { RankClient } from "../transport/rank_client.ts";

/** Options of a {@link RelayClient}. */
export interface RelayClientOptions {
  /** How long the relay waits for a member's frame after the member answered, ms (default 10 000). */
  waitMs?: number;
  /** How often the relay's presence at the server is probed, ms (default 1000; 0: never). */
  probeMs?: number;
  /** The relay was lost (after its members were). */
  onLost?: (why: string) => void;
}

export class RelayClient implements FrameRelay {
  readonly slot: number;
  #alive = true;
  #probe?: ReturnType<typeof setInterval>;
  #waitMs: number;
  #onLost?: (why: string) => void;

  /**
   * @param link The relay slot's link (its hello answered).
   * @param members The clients of the ranks whose frames it sums (each gets `relay = this`).
   */
  constructor(readonly link: RankLink, readonly members: readonly RankClient[], opts: RelayClientOptions = {}) {
    this.slot = link.rank;
    this.#waitMs = opts.waitMs ?? 10_000;
    this.#onLost = opts.onLost;
    for (const m of members) m.relay = this;
    link.down.then((e) => this.lose(e.message));
    const probeMs = opts.probeMs ?? 1000;
    if (probeMs > 0) {
      let probing = false;
      this.#probe = setInterval(() => {
        if (probing || !this.#alive) return;
        probing = true;
        link.present().then((here) => {
          probing = false;
          if (!here) this.lose("its connection left the NATS server");
        });
      }, probeMs);
    }
  }

  get alive(): boolean {
    return this.#alive;
  }

  /** Bytes that came from the relay (its sums, chunk headers and MACs included). */
  get bytesReceived(): number {
    return this.link.bytes.received;
  }

  /** The relay is gone: every member still alive is lost with it, and its link closed. */
  lose(why: string): void {
    if (!this.#alive) return;
    this.#alive = false;
    clearInterval(this.#probe);
    for (const m of this.members) {
      if (!m.alive) continue;
      m.fail(new RankLostError(m.rank, `rank ${m.rank}: its relay (slot ${this.slot}) was lost: ${why}`), false);
      m.transport.close().catch(() => {});
    }
    this.link.close(why).catch(() => {});
    this.#onLost?.(why);
  }

  /** Stop probing and close the link (the run ended). */
  async close(): Promise<void> {
    this.#alive = false;
    clearInterval(this.#probe);
    await this.link.close().catch(() => {});
  }

  async sum(
    round: number,
    frames: readonly Frame[],
    gamma: number,
    layout: LayoutTable,
    dtype: WireDtype,
  ): Promise<{ sum: SummedFrame; frames: Frame[] } | null> {
    if (!this.#alive) return null;
    const ask: RelayAsk = {
      round,
      dtype,
      paramCount: layout.paramCount,
      bufferCount: layout.bufferCount,
      members: frames.map((f) => ({ rank: f.rank, batches: f.batches, mass: paramMass(f.batches, gamma), moved: f.batches > 0 })),
      waitMs: this.#waitMs,
    };
    let sum: SummedFrame;
    try {
      sum = checkSum(await this.link.call("sum", [ask]), ask, this.slot);
    } catch (e) {
      this.lose(`its sum of round ${round} failed: ${describeError(e)}`);
      return null;
    }
    for (const r of sum.refused) {
      const m = this.members.find((c) => c.rank === r.rank);
      if (!m?.alive) continue;
      m.fail(new RankLostError(m.rank, `${r.why}; the rank is dropped`), false);
      m.transport.close().catch(() => {});
    }
    return { sum, frames: frames.filter((f) => sum.ranks.includes(f.rank)) };
  }
}

/**
 * A relay's answer checked against what was asked: the ranks summed plus those refused
 * are exactly the ranks asked (each once), and the sums are a frame of the round's dtype
 * and the layout's sizes with finite values.
 * @throws {RangeError|TypeError} Naming the relay and what differs.
 */
export function checkSum(x: unknown, ask: RelayAsk, slot: number): SummedFrame {
  const who = `relay (slot ${slot})`;
  if (x === null || typeof x !== "object") throw new TypeError(`${who}: answered ${x === null ? "null" : typeof x}, not a sum`);
  const s = x as Partial<SummedFrame>;
  if (s.relay !== slot) throw new RangeError(`${who}: its sum says relay ${s.relay}`);
  if (!Array.isArray(s.ranks) || !Array.isArray(s.refused)) throw new TypeError(`${who}: its sum lists no ranks`);
  const asked = ask.members.map((m) => m.rank);
  const named = [...s.ranks, ...s.refused.map((r) => r?.rank)];
  if (named.length !== asked.length || new Set(named).size !== named.length || !named.every((r) => asked.includes(r as number))) {
    throw new RangeError(`${who}: summed ranks ${JSON.stringify(s.ranks)} and refused ${JSON.stringify(s.refused.map((r) => r?.rank))}, asked ${JSON.stringify(asked)}`);
  }
  for (const r of s.refused) if (typeof r.why !== "string") throw new TypeError(`${who}: refused rank ${r.rank} without a reason`);
  checkFrame({ ...s, rank: slot }, { rank: slot, who, dtype: ask.dtype, round: ask.round, paramCount: ask.paramCount, bufferCount: ask.bufferCount });
  return s as SummedFrame;
}
