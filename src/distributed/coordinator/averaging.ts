/**
 * The CPU averaging plane (spec §4.1–4.2, §4.5): rank frames (bf16 or f32) folded into an
 * f32 accumulator with mass n^γ and divided once; buffers a plain mean over the ranks
 * that moved. Zero total mass means no consensus.
 */
import { accumulateBf16 } from "../../tensor/mod.ts";
import { accumulate, consensusWeights } from "./consensus.ts";
import type { Frame, LayoutTable } from "../protocol/messages.ts";

/** A consensus, or null for a zero-mass round. */
export interface Averaged {
  params: Float32Array;
  buffers: Float32Array;
  /** Ranks that moved (their buffers were averaged). */
  movers: number;
}

/** Average the frames of one round; `steps[r]` is rank r's n_r (0 for ranks without a frame). */
export function average(frames: readonly Frame[], steps: readonly number[], gamma: number, layout: LayoutTable): Averaged | null {
  const weights = consensusWeights(steps, gamma);
  if (!weights) return null;
  const params = new Float32Array(layout.paramCount);
  for (const f of frames) {
    const w = weights[f.rank];
    if (w === 0) continue;
    if (f.dtype === "bf16") accumulateBf16(params, f.params as Uint32Array, w);
    else accumulate(params, f.params as Float32Array, w);
  }
  const movers = frames.filter((f) => steps[f.rank] > 0);
  const buffers = new Float32Array(layout.bufferCount);
  for (const f of movers) accumulate(buffers, f.buffers, 1 / movers.length);
  return { params, buffers, movers: movers.length };
}
