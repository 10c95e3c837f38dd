/**
 * What a rank worker exposes: every `RankApi` call forwarded to the rank runtime with all
 * of its arguments, derived from the protocol type so the two cannot drift (a call that
 * forwarded `snapshot(round)` and dropped `exact` made the final consensus bf16-rounded).
 * Frames come back as transferables, never structured-cloned.
 */
import type { Frame, RankApi } from "../protocol/messages.ts";

/** The calls a worker forwards as they are (`init` and `stop` manage the worker itself). */
export type ForwardedCall = Exclude<keyof RankApi, "init" | "stop">;

/** Every forwarded call; the compile-time check below fails when `RankApi` gains one not listed. */
export const FORWARDED_CALLS = [
  "initialState",
  "load",
  "train",
  "snapshot",
  "adopt",
  "collective",
  "evaluate",
  "checkpoint",
  "finalState",
  "optimizerState",
  "memory",
] as const satisfies readonly ForwardedCall[];

type Unlisted = Exclude<ForwardedCall, (typeof FORWARDED_CALLS)[number]>;
/** Compile-time: `true` only when every forwarded call of `RankApi` is listed. */
export const ALL_CALLS_LISTED: [Unlisted] extends [never] ? true : Unlisted = true;

/** Calls that answer with a frame (its buffers are transferred). */
const FRAME_CALLS: ReadonlySet<ForwardedCall> = new Set(["initialState", "snapshot", "finalState"]);

/**
 * Build the forwarding half of a worker's API.
 * @param runtime The rank runtime (throws while it is not initialised).
 * @param transfer Marks a frame's buffers for transfer (comlink's `transfer`), identity in process.
 */
export function forwardRankApi(
  runtime: () => RankApi,
  transfer: (f: Frame) => Frame,
): Pick<RankApi, ForwardedCall> {
  const out: Partial<Record<ForwardedCall, unknown>> = {};
  for (const k of FORWARDED_CALLS) {
    out[k] = async (...args: unknown[]) => {
      const result = await (runtime()[k] as (...a: unknown[]) => Promise<unknown>)(...args);
      return FRAME_CALLS.has(k) ? transfer(result as Frame) : result;
    };
  }
  return out as Pick<RankApi, ForwardedCall>;
}
