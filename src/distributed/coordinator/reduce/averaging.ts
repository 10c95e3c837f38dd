/**
 * The CPU averaging plane: rank frames (bf16 or f32) folded into an
 * f32 accumulator with mass n^γ and divided once; buffers a plain mean over the ranks
 * that moved. Zero total mass means no consensus.
 *
 * A relay's sum (protocol/relay.ts: Σ m_k θ_k and Σ b_k over the ranks of its host, never
 * divided) folds into the same accumulator with 1/Σm: the masses of its ranks are in
 * `steps` like any rank's, so Σm and the movers count every rank once, wherever its frame
 * was summed, and the root divides once.
 */
import { accumulateBf16 } from "../../../tensor/mod.ts";
import { accumulate, consensusWeights, paramMass } from "./consensus.ts";
import type { Frame, LayoutTable } from "../../protocol/messages.ts";
import type { SummedFrame } from "../../protocol/relay.ts";

/** A consensus, or null for a zero-mass round. */
export interface Averaged {
  params: Float32Array;
  buffers: Float32Array;
  /** Ranks that moved (their buffers were averaged). */
  movers: number;
}

/**
 * Average the frames of one round; `steps[r]` is rank r's n_r (0 for ranks without a frame).
 * `sums`: relays' sums, whose ranks' steps are in `steps` (their frames are not in `frames`).
 */
export function average(
  frames: readonly Frame[],
  steps: readonly number[],
  gamma: number,
  layout: LayoutTable,
  sums: readonly SummedFrame[] = [],
): Averaged | null {
  const weights = consensusWeights(steps, gamma);
  if (!weights) return null;
  const params = new Float32Array(layout.paramCount);
  for (const f of frames) {
    const w = weights[f.rank];
    if (w === 0) continue;
    if (f.dtype === "bf16") accumulateBf16(params, f.params as Uint32Array, w);
    else accumulate(params, f.params as Float32Array, w);
  }
  if (sums.length) {
    const inv = 1 / steps.reduce((a, n) => a + paramMass(n, gamma), 0);
    for (const s of sums) {
      if (s.dtype === "bf16") accumulateBf16(params, s.params as Uint32Array, inv);
      else accumulate(params, s.params as Float32Array, inv);
    }
  }
  const movers = frames.filter((f) => steps[f.rank] > 0).length +
    sums.reduce((a, s) => a + s.ranks.filter((r) => steps[r] > 0).length, 0);
  const buffers = new Float32Array(layout.bufferCount);
  for (const f of frames) if (steps[f.rank] > 0) accumulate(buffers, f.buffers, 1 / movers);
  if (movers > 0) for (const s of sums) accumulate(buffers, s.buffers, 1 / movers);
  return { params, buffers, movers };
}
