/**
 * The rank calls by name, each with what the code around the seam must know of it, declared
 * once: the table is checked against `RankApi` (messages.ts), so a new method of `RankApi`
 * fails to compile until it has its row here. Every list of call names is derived from it:
 * the transport's calls (transport.ts), the calls a worker forwards to its runtime and the
 * frames it transfers (rank/rank_forward.ts), the frames and first compiles the NATS
 * transport watches (coordinator/transport/transport_nats.ts), the handler of a joined rank
 * (run/join.ts).
 */
import type { RankApi } from "./messages.ts";

/** What the code around the seam knows of one rank call. */
export interface CallProps {
  /**
   * Answers with a `Frame`: a worker transfers its buffers instead of cloning them, and the
   * NATS transport checks it (`checkFrame`) before it may be averaged.
   */
  readonly frame: boolean;
  /**
   * Its first run may compile GPU pipelines, which blocks the rank's thread: until it has run
   * once, a remote rank's heartbeats count as "compiling" (the stall ceiling applies, not the
   * heartbeat timeout).
   */
  readonly compiles: boolean;
  /**
   * Forwarded as it is to the rank runtime. False: the rank's host serves it itself (`init`
   * creates the runtime and starts the heartbeat, `stop` ends both).
   */
  readonly forwarded: boolean;
}

/**
 * Every rank call and its properties. `collective` never compiles here: nccl-* ranks are
 * local workers, whose "compiling" notices leave before their thread blocks.
 * @example
 * ```ts
 * import { RANK_CALL_TABLE } from "./rank_calls.ts";
 * if (!RANK_CALL_TABLE.snapshot.frame || RANK_CALL_TABLE.init.forwarded) throw new Error("table drifted");
 * ```
 */
export const RANK_CALL_TABLE = {
  init: { frame: false, compiles: true, forwarded: false },
  initialState: { frame: true, compiles: true, forwarded: true },
  load: { frame: false, compiles: true, forwarded: true },
  train: { frame: false, compiles: true, forwarded: true },
  snapshot: { frame: true, compiles: true, forwarded: true },
  adopt: { frame: false, compiles: true, forwarded: true },
  collective: { frame: false, compiles: false, forwarded: true },
  evaluate: { frame: false, compiles: true, forwarded: true },
  checkpoint: { frame: false, compiles: false, forwarded: true },
  finalState: { frame: true, compiles: true, forwarded: true },
  optimizerState: { frame: false, compiles: false, forwarded: true },
  memory: { frame: false, compiles: false, forwarded: true },
  stop: { frame: false, compiles: false, forwarded: false },
} as const satisfies { readonly [K in keyof RankApi]: CallProps };

type Table = typeof RANK_CALL_TABLE;

/** The calls whose property `P` is true, as a type: `CallsWith<"frame">` is "initialState" | "snapshot" | "finalState". */
export type CallsWith<P extends keyof CallProps> = {
  [K in keyof Table]: Table[K][P] extends true ? K : never;
}[keyof Table];

/** The calls a rank's host forwards as they are to its runtime (all but `init` and `stop`). */
export type ForwardedCall = CallsWith<"forwarded">;

/** Every call name, in the table's order. */
export const RANK_CALLS = Object.keys(RANK_CALL_TABLE) as (keyof RankApi)[];

/**
 * The calls whose property `prop` is true.
 * @param prop A property of {@link CallProps}.
 * @returns Their names, in the table's order.
 * @example
 * ```ts
 * import { callsWith } from "./rank_calls.ts";
 * if (callsWith("frame").join() !== "initialState,snapshot,finalState") throw new Error("frame calls drifted");
 * ```
 */
export function callsWith<P extends keyof CallProps>(prop: P): CallsWith<P>[] {
  return RANK_CALLS.filter((name) => RANK_CALL_TABLE[name][prop]) as CallsWith<P>[];
}

/** Every call a rank's host forwards to its runtime (see {@link ForwardedCall}). */
export const FORWARDED_CALLS: readonly ForwardedCall[] = callsWith("forwarded");
