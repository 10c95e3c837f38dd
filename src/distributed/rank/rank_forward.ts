/**
 * What a rank worker exposes: every forwarded `RankApi` call (protocol/rank_calls.ts) passed
 * to the rank runtime with all of its arguments, so the two cannot drift (a call that
 * forwarded `snapshot(round)` and dropped its second argument made the final consensus
 * bf16-rounded). Frames come back as transferables, never structured-cloned.
 */
import type { Frame, RankApi } from "../protocol/messages.ts";
import { FORWARDED_CALLS, type ForwardedCall, RANK_CALL_TABLE } from "../protocol/rank_calls.ts";

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
      return RANK_CALL_TABLE[k].frame ? transfer(result as Frame) : result;
    };
  }
  return out as Pick<RankApi, ForwardedCall>;
}
