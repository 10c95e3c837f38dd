/**
 * One reduce cycle on the coordinator (CPU backend), step for step the
 * mirror of the rank side (rank/frames.ts): each rank's `snapshot` packs a frame, here we
 * average them (γ-weighted, f32 accumulation of bf16 or f32 frames), take the outer
 * optimizer's step, pack the consensus for the wire, and each rank's `adopt` writes it
 * back (overwrite or EASGD blend) and answers with its divergence. The coordinator
 * decides when a cycle runs and what it means for the schedule; this module only moves
 * and combines frames.
 */
import { packBf16 } from "../../../tensor/mod.ts";
import { frameToFlat } from "../../protocol/frame_codec.ts";
import type { Adoption, Frame, LayoutTable, SyncAck, WireDtype } from "../../protocol/messages.ts";
import { average } from "./averaging.ts";
import type { RunObserver } from "../report/observer.ts";
import type { OuterStepper } from "../../protocol/outer.ts";
import type { RankClient } from "../transport/rank_client.ts";
import type { FrameRelay, SummedFrame } from "../../protocol/relay.ts";

/** What a cycle needs to know: who takes part, how to weigh and ship, and where the schedule stands. */
export interface ReduceInput {
  round: number;
  /** Ship f32 frames both ways (the final consensus is exact even on a bf16 wire; see {@link wireDtype}). */
  exact: boolean;
  /** A cycle with no progress for this long rejects with "reduce <round> made no progress". */
  stallMs: number;
  /** Every rank of the run, dead ones included (indexed by rank). */
  ranks: readonly RankClient[];
  layout: LayoutTable;
  gamma: number;
  /** The run ships bf16 on this averaging plane (`.bf16Wire(true)`; see {@link wireDtype}). */
  bf16Wire: boolean;
  easgdAlpha?: number;
  outer?: OuterStepper;
  /** The consensus version the adoption installs. */
  version: number;
  /** Global step before this cycle's steps. */
  globalStep: number;
  observer: RunObserver;
  /** Told the new consensus as soon as it is averaged (before the adoptions: a stall after it still saves it). */
  averaged(consensus: { params: Float32Array; buffers: Float32Array }): void;
}

/** What a cycle did. `consensus` is null when no rank had a step to give (zero mass). */
export interface ReduceOutcome {
  /** Steps per rank folded into the consensus (n_r; 0 for ranks without a frame). */
  steps: number[];
  acks: SyncAck[];
  consensus: { params: Float32Array; buffers: Float32Array } | null;
  bytesUp: number;
  bytesDown: number;
  averageMs: number;
}

/**
 * The wire dtype of a round, decided here once and carried by every request of the round
 * (the ranks' `snapshot`, the relays' `sum`, the consensus each rank adopts), which the NATS
 * transport and the relays check frames against: bf16 on a bf16 wire, f32 otherwise and
 * for an exact round (the final consensus).
 * @param bf16Wire The run's `.bf16Wire(...)`.
 * @param exact The round ships f32 both ways.
 * @returns `"bf16"` or `"f32"`.
 * @example
 * ```ts
 * import { wireDtype } from "./reduce_cycle.ts";
 * if (wireDtype(true, true) !== "f32" || wireDtype(true, false) !== "bf16") throw new Error("wire rule");
 * ```
 */
export function wireDtype(bf16Wire: boolean, exact: boolean): WireDtype {
  return bf16Wire && !exact ? "bf16" : "f32";
}

/** Run one cycle. Rejects only when it stalls; a rank lost mid-cycle drops out of it (its call rejects). */
export async function reduceCycle(inp: ReduceInput): Promise<ReduceOutcome> {
  const dtype = wireDtype(inp.bf16Wire, inp.exact);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`reduce ${inp.round} made no progress for ${(inp.stallMs / 1000).toFixed(0)} s`)), inp.stallMs);
  });
  stalled.catch(() => {});
  // Survivors only: a rank lost mid-reduce drops out of this round (its call rejects).
  const settled = async <T>(calls: Promise<T>[]): Promise<T[]> => {
    const out = await Promise.race([Promise.allSettled(calls), stalled]);
    return out.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  };
  try {
    const { frames, sums } = await gather(inp, dtype, settled);
    const steps = new Array(inp.ranks.length).fill(0);
    for (const f of frames) steps[f.rank] = f.batches;
    let bytesUp = 0;
    for (const f of [...frames, ...sums]) bytesUp += f.params.byteLength + f.buffers.byteLength;
    const ta = performance.now();
    const direct = frames.filter((f) => f.via === undefined);
    const avg = average(direct, steps, inp.gamma, inp.layout, sums);
    if (!avg) return { steps, acks: [], consensus: null, bytesUp, bytesDown: 0, averageMs: 0 };
    const params = inp.outer ? inp.outer.apply(avg.params)! : avg.params;
    if (inp.observer.wantsFrames && inp.observer.frames) {
      const per = new Array<Float32Array | null>(inp.ranks.length).fill(null);
      for (const f of direct) per[f.rank] = frameToFlat(f, inp.layout).params;
      inp.observer.frames(inp.round, per, params);
    }
    inp.averaged({ params, buffers: avg.buffers });
    const averageMs = performance.now() - ta;
    const adoption = {
      round: inp.round,
      version: inp.version,
      easgdAlpha: inp.easgdAlpha,
      resetInner: inp.outer?.optimizer.resetsInner ?? false,
      globalStep: inp.globalStep + steps.reduce((a, b) => a + b, 0),
      withBuffers: avg.movers > 0,
    };
    // Packed once: a worker gets a copy (structured clone), a remote rank the one cast
    // (transport_nats.ts). bytesDown counts what each rank receives.
    const consensus = pack(inp.round, params, avg.buffers, dtype);
    const takers = inp.ranks.filter((c) => c.alive && frames.some((f) => f.rank === c.rank));
    const bytesDown = takers.length * (consensus.params.byteLength + consensus.buffers.byteLength);
    const acks = await settled(takers.map((c) => adopt(c, { ...adoption, consensus })));
    return { steps, acks, consensus: { params, buffers: avg.buffers }, bytesUp, bytesDown, averageMs };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The round's frames: each alive rank's (between its batches; rank side `packFrame`), and
 * each relay's sum over the ranks whose answers say their values went to it (`via`). `frames`
 * holds every rank whose work is in the round, relayed ones included (their answers carry the
 * step counts); `sums` the relays' values.
 */
async function gather(
  inp: ReduceInput,
  dtype: WireDtype,
  settled: <T>(calls: Promise<T>[]) => Promise<T[]>,
): Promise<{ frames: Frame[]; sums: SummedFrame[] }> {
  const answers = await snapshot(inp, dtype, settled);
  const byRelay = new Map<FrameRelay, Frame[]>();
  for (const f of answers) {
    const relay = f.via === undefined ? undefined : inp.ranks[f.rank].relay;
    if (relay) byRelay.set(relay, [...byRelay.get(relay) ?? [], f]);
  }
  if (!byRelay.size) return { frames: answers, sums: [] };
  const relayed = await settled([...byRelay].map(([relay, fs]) => relay.sum(inp.round, fs, inp.gamma, inp.layout, dtype)));
  // NOTE: a member in a relay's sum counts even if it is lost right after: its values are
  // in the sum, so its mass must be in the divisor.
  const frames = answers.filter((f) => f.via === undefined && inp.ranks[f.rank].alive);
  const sums: SummedFrame[] = [];
  for (const r of relayed) {
    if (!r) continue;
    frames.push(...r.frames);
    sums.push(r.sum);
  }
  return { frames, sums };
}

/** Each alive rank's frame in the round's `dtype`, between its batches (rank side: `packFrame`). */
async function snapshot(
  inp: ReduceInput,
  dtype: WireDtype,
  settled: <T>(calls: Promise<T>[]) => Promise<T[]>,
): Promise<Frame[]> {
  const alive = inp.ranks.filter((c) => c.alive);
  const frames = await settled(alive.map((c) => c.call("snapshot", (api) => api.snapshot(inp.round, dtype))));
  return frames.filter((f) => inp.ranks[f.rank].alive);
}

/** The consensus as a frame for one rank: its own copy (the transport may transfer it). */
function pack(round: number, params: Float32Array, buffers: Float32Array, dtype: WireDtype): Frame {
  return {
    rank: -1,
    round,
    batches: 0,
    dtype,
    params: dtype === "bf16" ? packBf16(params) : new Float32Array(params),
    buffers: new Float32Array(buffers),
  };
}

/** One rank adopts the consensus (rank side: `adoptConsensus`) and acknowledges with its divergence. */
function adopt(c: RankClient, a: Adoption): Promise<SyncAck> {
  return c.call("adopt", (api) => api.adopt(a));
}
