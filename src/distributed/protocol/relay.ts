/**
 * What the coordinator and a relay say to each other: a relay
 * sums the reduce frames of the ranks on its host, each times the mass the coordinator
 * gives it, and never divides; the coordinator folds the sum like any frame and divides
 * once by the masses of the ranks the sum holds. Declared once here; the relay process is
 * run/relay.ts, the coordinator's handle coordinator/reduce/relay_client.ts.
 */
import type { Frame, LayoutTable, WireDtype } from "./messages.ts";

/** The coordinator asks relay `relay` for the sum of round `round` over `members`. */
export interface RelayAsk {
  round: number;
  /** The wire dtype of the round: the members' frames and the sum both travel in it. */
  dtype: WireDtype;
  paramCount: number;
  bufferCount: number;
  /**
   * Each member whose snapshot answer said its frame went to this relay: the steps n_k it
   * told the coordinator (its frame must say the same), its params mass m_k (computed by the
   * coordinator) and whether it moved (n_k > 0: its buffers enter the
   * buffers' sum).
   */
  members: { rank: number; batches: number; mass: number; moved: boolean }[];
  /** How long the relay waits for a member's frame to arrive, ms; one that does not is refused. */
  waitMs: number;
}

/** The relay's answer: Σ m_k θ_k and Σ b_k over the members it summed, never divided. */
export interface SummedFrame {
  relay: number;
  round: number;
  dtype: WireDtype;
  /** The members whose frames are in the sums (a subset of those asked, in the order asked). */
  ranks: number[];
  /** Σ m_k θ_k (bf16 words or f32), over `ranks`. */
  params: Uint32Array<ArrayBuffer> | Float32Array<ArrayBuffer>;
  /** Σ b_k over the members of `ranks` that moved, f32. */
  buffers: Float32Array<ArrayBuffer>;
  /** The members asked whose frames were refused or never came, each with why (naming it). */
  refused: { rank: number; why: string }[];
}

/**
 * The coordinator's handle on one relay, as the reduce cycle uses it
 * (coordinator/reduce/relay_client.ts implements it). A rank's client points at its relay.
 */
export interface FrameRelay {
  /** The relay's slot in the run. */
  readonly slot: number;
  /**
   * Ask for the sum of round `round` over the members whose snapshot answers (`frames`,
   * each with `via`) said their values went to this relay. Resolves with the relay's sum
   * and the answers of the members in it; with null when the relay is lost (its members
   * are then lost too). Members whose frames the relay refused are dropped, naming why.
   */
  sum(
    round: number,
    frames: readonly Frame[],
    gamma: number,
    layout: LayoutTable,
    dtype: WireDtype,
  ): Promise<{ sum: SummedFrame; frames: Frame[] } | null>;
}
