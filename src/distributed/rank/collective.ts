/**
 * The rank's half of an nccl-* reduce (the web mapping of NCCL): read the
 * parameters back (f32), write them pre-scaled by this rank's mass into its slot of the
 * group's slab, meet the others at a barrier, reduce this rank's 1/W slice of the result,
 * meet again, and hand back the whole consensus for adoption with this rank's divergence
 * from it (both arrays are on this thread already). The coordinator only paces it
 * and aborts the group when a member dies (protocol/slab.ts says why every survivor then
 * returns "aborted" and none adopts).
 */
import type { Device } from "../../gpu/mod.ts";
import type { Tensor } from "../../tensor/mod.ts";
import type { CollectiveCall } from "../protocol/messages.ts";
import { barrier, type BarrierOutcome, reduceSlice, slabViews, writeSlot } from "../protocol/slab.ts";
import { packFrame } from "./frames.ts";
import type { OuterStepper } from "../protocol/outer.ts";

/**
 * A fault-injection point for tests (test/fixtures/programs/tiny.ts, fault "exit-at-barrier"):
 * a function stored on `globalThis` under this key runs after the rank wrote its slot and
 * before it arrives at the first barrier; the run waits for its promise.
 */
export const BEFORE_BARRIER = Symbol.for("flodl-webgpu.collective.beforeBarrier");

/** The divergence flodl measures (as a SyncAck carries it, without the rank). */
export interface Divergence {
  divergence: number;
  preNorm: number;
  postNorm: number;
}

/** What the collective did: the consensus (f32, parameters and buffers) and this rank's divergence from it, or why there is none. */
export type AllReduced =
  | { status: "done"; consensus: { params: Float32Array<ArrayBuffer>; buffers: Float32Array<ArrayBuffer> }; divergence: Divergence }
  | { status: Exclude<BarrierOutcome, "passed"> };

/** ||pre − post|| / ||post|| (0 when ||post|| <= 1e-10), squared sums in f64, as coordinator/reduce/consensus.ts's `divergence`. */
export function divergenceOf(pre: ArrayLike<number>, post: ArrayLike<number>): Divergence {
  let a = 0, b = 0, d = 0;
  for (let i = 0; i < pre.length; i++) {
    a += pre[i] * pre[i];
    b += post[i] * post[i];
    d += (pre[i] - post[i]) * (pre[i] - post[i]);
  }
  const preNorm = Math.sqrt(a), postNorm = Math.sqrt(b);
  return { divergence: postNorm > 1e-10 ? Math.sqrt(d) / postNorm : 0, preNorm, postNorm };
}

/**
 * Run one collective on this rank's parameters and buffers; nothing on the device changes here.
 * @param outer This rank's replica of the run's outer optimizer: it steps on the
 *   consensus once the group passed both barriers, and the result is what the rank adopts
 *   (and measures its divergence from). Every member steps the same inputs with the same f32
 *   code, so the replicas stay identical; an aborted reduce steps none.
 */
export async function allReduce(
  device: Device,
  params: readonly Tensor[],
  buffers: readonly Tensor[],
  c: CollectiveCall,
  rank: number,
  outer?: OuterStepper,
): Promise<AllReduced> {
  const s = c.slab;
  const v = slabViews(s);
  const mine = await packFrame(device, params, buffers, { rank, round: c.round, batches: c.steps, bf16: false });
  if (mine.params.length !== s.params || mine.buffers.length !== s.buffers) {
    throw new RangeError(
      `rank ${rank}: the collective's slab holds ${s.params} parameters and ${s.buffers} buffer values; this model has ` +
        `${mine.params.length} and ${mine.buffers.length}`,
    );
  }
  writeSlot(v, c.slot, mine.params, mine.buffers, c.masses[c.slot], c.movers[c.slot]);
  const hook = (globalThis as Record<symbol, unknown>)[BEFORE_BARRIER] as ((round: number) => Promise<void>) | undefined;
  if (hook) await hook(c.round);
  // Each reduce of a group takes two barrier generations; the coordinator numbers them.
  const first = await barrier(v.ctrl, s.world, c.generation, c.waitMs);
  if (first !== "passed") return { status: first };
  reduceSlice(s, v, c.slot, c.masses, c.movers);
  const second = await barrier(v.ctrl, s.world, c.generation + 1, c.waitMs);
  if (second !== "passed") return { status: second };
  const averaged = v.result.slice(0, s.params) as unknown as Float32Array<ArrayBuffer>;
  const consensus = {
    params: (outer ? outer.apply(averaged)! : averaged) as Float32Array<ArrayBuffer>,
    buffers: v.result.slice(s.params) as unknown as Float32Array<ArrayBuffer>,
  };
  return { status: "done", consensus, divergence: divergenceOf(mine.params as Float32Array, consensus.params) };
}
