/**
 * How the coordinator calls what it does not control: user callbacks on this thread
 * (a failure is a warning, training continues) and rank calls that must answer within
 * the stall ceiling (eval, checkpointFn, optimizer state).
 */
import { describeError } from "../../protocol/errors.ts";
import type { RankView } from "../../protocol/transport.ts";
import type { RankClient } from "./rank_client.ts";

/** Run a user callback; a throw becomes a warning naming it (training continues). */
export async function quietly(name: string, fn: () => unknown): Promise<void> {
  try {
    await fn();
  } catch (e) {
    console.warn(`${name} failed: ${describeError(e)} (training continues)`);
  }
}

/**
 * A rank call that must return within `ms`: past it `onStall(err)` is told (the run stops
 * with `reduce_stall`, naming the rank and the call) and the call rejects, instead of
 * waiting forever on a rank that beats but never answers.
 */
export async function boundedCall<T>(
  client: RankClient,
  what: string,
  fn: (api: RankView) => Promise<T>,
  ms: number,
  onStall: (err: Error) => void,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new Error(`rank ${client.rank}'s ${what} did not return within ${Math.round(ms / 100) / 10} s`);
      onStall(err);
      reject(err);
    }, ms);
  });
  try {
    return await Promise.race([client.call(what, fn), stalled]);
  } finally {
    clearTimeout(timer);
  }
}
