/**
 * One nccl-* reduce cycle on the coordinator (NCCL realization), the
 * sibling of reduce_cycle.ts: the coordinator decides the masses (n^γ; buffers: movers) and
 * asks every alive rank for `collective`; the ranks sum and divide among themselves through
 * the group's SharedArrayBuffer slab (protocol/slab.ts, rank/collective.ts) and answer with
 * counts and their divergence. No parameter travels through this thread: it copies the
 * consensus out of the shared result region (for bundles and `join()`) after the ranks
 * finished with it.
 *
 * A member lost during the collective (its call rejects: worker error, silence, a lost
 * device) aborts the group: every survivor returns "aborted" with nothing changed, the
 * group is rebuilt over the alive ranks (new numbering) and the reduce retried
 * with their masses only.
 */
import type { CollectiveAck } from "../../protocol/messages.ts";
import { abortSlab, createSlab, type Slab, slabViews } from "../../protocol/slab.ts";
import { paramMass } from "./consensus.ts";
import { describeOuter } from "../../protocol/outer.ts";
import type { RankClient } from "../transport/rank_client.ts";
import type { ReduceInput, ReduceOutcome } from "./reduce_cycle.ts";

/** The ranks sharing one slab, numbered 0..W-1 in rank order; rebuilt when the alive set changes. */
export class NcclGroup {
  #slab?: Slab;
  #members: number[] = [];
  #generation = 0;

  /** The slab for `ranks` (rank ids, ascending) and the barrier generation of the next reduce. */
  join(ranks: readonly number[], params: number, buffers: number): { slab: Slab; generation: number } {
    if (!this.#slab || ranks.join() !== this.#members.join()) {
      this.#slab = createSlab(ranks.length, params, buffers);
      this.#members = [...ranks];
      this.#generation = 0;
    }
    const generation = this.#generation;
    this.#generation += 2;
    return { slab: this.#slab, generation };
  }

  /** Abort the group's reduce in progress and forget it: the next reduce builds a new one. */
  abort(): void {
    if (this.#slab) abortSlab(this.#slab);
    this.#slab = undefined;
    this.#members = [];
  }
}

/** What an nccl cycle needs beyond a CPU cycle's input: the window counts and the group. */
export interface NcclInput extends ReduceInput {
  /** n_r per rank (the coordinator's count of each rank's steps this window). */
  steps: readonly number[];
  group: NcclGroup;
  /**
   * Outer momentum restored by a resume, for the ranks' replicas: sent with their first
   * collective (they build the replica then), so every copy starts from the saved state.
   */
  outerSeed?: Float32Array;
}

/** Run one collective reduce. Rejects only when it stalls ("reduce <round> made no progress"). */
export async function reduceNccl(inp: NcclInput): Promise<ReduceOutcome> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      inp.group.abort(); // ranks waiting at a barrier return instead of waiting on
      reject(new Error(`reduce ${inp.round} made no progress for ${(inp.stallMs / 1000).toFixed(0)} s`));
    }, inp.stallMs);
  });
  stalled.catch(() => {});
  try {
    // Each retry follows a lost member; a group of one always completes.
    for (let attempt = 0; attempt <= inp.ranks.length; attempt++) {
      const out = await attemptOnce(inp, stalled);
      if (out) return out;
    }
    throw new Error(`reduce ${inp.round}: the collective was aborted ${inp.ranks.length + 1} times`);
  } finally {
    clearTimeout(timer);
  }
}

/** One try over the ranks alive now; null when the group was aborted (retry over the survivors). */
async function attemptOnce(inp: NcclInput, stalled: Promise<never>): Promise<ReduceOutcome | null> {
  const members = inp.ranks.filter((c) => c.alive);
  const steps = new Array<number>(inp.ranks.length).fill(0);
  for (const c of members) steps[c.rank] = inp.steps[c.rank];
  const masses = members.map((c) => paramMass(steps[c.rank], inp.gamma));
  const movers = members.map((c) => (steps[c.rank] > 0 ? 1 : 0));
  const none = { steps, acks: [], consensus: null, bytesUp: 0, bytesDown: 0, averageMs: 0 };
  if (!(masses.reduce((a, b) => a + b, 0) > 0)) return none; // zero mass: every rank keeps its state
  const { paramCount: P, bufferCount: Bc } = inp.layout;
  const { slab, generation } = inp.group.join(members.map((c) => c.rank), P, Bc);
  const globalStep = inp.globalStep + steps.reduce((a, b) => a + b, 0);
  const resetInner = inp.outer?.optimizer.resetsInner ?? false;
  // A built-in outer optimizer is replicated: every rank steps its own, this
  // thread its copy (for bundles and join()). Another class cannot reach the ranks: this
  // thread steps it and sends the result (outerStep below).
  const outerSpec = inp.outer ? describeOuter(inp.outer.optimizer) : undefined;
  const shipped = inp.outer !== undefined && outerSpec === undefined;
  const calls = members.map((c, slot) =>
    c.call("collective", (api) =>
      api.collective({
        round: inp.round,
        slab,
        slot,
        generation,
        masses,
        movers,
        steps: steps[c.rank],
        version: inp.version,
        globalStep,
        // With a shipped outer step the ranks adopt it afterwards (below), not the plain average.
        resetInner: resetInner && !shipped,
        waitMs: inp.stallMs,
        ...(outerSpec ? { outer: inp.outerSeed ? { ...outerSpec, state: inp.outerSeed } : outerSpec } : {}),
      })
    ).catch((e: unknown) => {
      inp.group.abort(); // a member is gone: release the others from the barrier
      throw e;
    })
  );
  const results = await Promise.race([Promise.allSettled(calls), stalled]);
  const acks = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  const done = acks.filter((a) => a.status === "done");
  if (done.length === 0 || done.length < acks.length) {
    if (done.length > 0) {
      // slab.ts makes this impossible (a barrier is passed by all or none); say so if it happens.
      throw new Error(`reduce ${inp.round}: ranks ${done.map((a) => a.rank)} adopted a consensus ranks ${acks.filter((a) => a.status !== "done").map((a) => a.rank)} abandoned`);
    }
    inp.group.abort();
    const lost = members.filter((c) => !c.alive).map((c) => c.rank);
    console.warn(
      `flodl-webgpu: reduce ${inp.round}: the collective was aborted (${lost.length ? `rank ${lost.join(", ")} lost` : "a barrier timed out"}); ` +
        `retrying over ranks ${inp.ranks.filter((c) => c.alive).map((c) => c.rank).join(", ")}`,
    );
    return null;
  }
  checkCounts(inp.round, done, steps);
  const view = slabViews(slab);
  const ta = performance.now();
  let params: Float32Array = view.result.slice(0, P);
  const buffers: Float32Array = view.result.slice(P);
  if (inp.observer.wantsFrames && inp.observer.frames) {
    const per = new Array<Float32Array | null>(inp.ranks.length).fill(null);
    members.forEach((c, slot) => {
      if (masses[slot] > 0) per[c.rank] = view.slot(slot).slice(0, P).map((x) => Math.fround(x / masses[slot]));
    });
    inp.observer.frames(inp.round, per, params);
  }
  let bytesDown = 0;
  if (shipped) params = await outerStep(inp, members, params, buffers, globalStep, (n) => (bytesDown += n));
  else if (inp.outer) params = inp.outer.apply(params)!; // the same step every rank took on its replica
  inp.averaged({ params, buffers });
  return {
    steps,
    acks: done.flatMap((a) => (a.ack ? [a.ack] : [])),
    consensus: { params, buffers },
    bytesUp: 0,
    bytesDown,
    averageMs: performance.now() - ta,
  };
}

/**
 * An outer optimizer the ranks cannot rebuild (not OuterAvg, SlowMo or DiLoCo) steps on the
 * coordinator's copy of the consensus and the ranks adopt its result (f32): the one case
 * where parameters travel from this thread.
 */
async function outerStep(
  inp: NcclInput,
  members: readonly RankClient[],
  consensus: Float32Array,
  buffers: Float32Array,
  globalStep: number,
  sent: (bytes: number) => void,
): Promise<Float32Array> {
  const params = inp.outer!.apply(consensus)!;
  const adoption = { round: inp.round, version: inp.version, resetInner: inp.outer!.optimizer.resetsInner, globalStep, withBuffers: false };
  await Promise.allSettled(members.filter((c) => c.alive).map((c) => {
    const frame = { rank: -1, round: inp.round, batches: 0, dtype: "f32" as const, params: new Float32Array(params), buffers: new Float32Array(buffers) };
    sent(frame.params.byteLength);
    return c.call("adopt", (api) => api.adopt({ ...adoption, consensus: frame }));
  }));
  return params;
}

let warned = false;

/** The masses came from the coordinator's counts; a rank that counted otherwise is a bug worth one warning. */
function checkCounts(round: number, acks: readonly CollectiveAck[], steps: readonly number[]): void {
  const off = acks.filter((a) => a.batches !== steps[a.rank]);
  if (off.length && !warned) {
    warned = true;
    console.warn(
      `flodl-webgpu: reduce ${round}: rank step counts differ from the coordinator's (` +
        off.map((a) => `rank ${a.rank}: ${a.batches} vs ${steps[a.rank]}`).join(", ") + "); the consensus used the coordinator's",
    );
  }
}
