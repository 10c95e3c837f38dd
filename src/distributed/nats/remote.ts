/**
 * A typed view of a rank's API over a link, as comlink's `Remote<T>` is over a worker:
 * `remote<RankApi>(link).snapshot(3)` is `link.call("snapshot", [3])`, typed from the
 * rank's real interface, so the caller's side breaks at compile time when the API drifts.
 */
import type { RankLink } from "./coordinator_link.ts";

/** Each method of `Api` as a call over the link: same arguments, a promise of the result. */
export type Remote<Api> = {
  [K in keyof Api]: Api[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never;
};

/**
 * Wrap a link in a typed proxy of `Api`'s methods.
 * @example
 * ```ts
 * import { remote } from "./remote.ts";
 * const calls: string[] = [];
 * const link = { call: (name: string, args: readonly unknown[] = []) => Promise.resolve(calls.push(`${name}(${args})`)) };
 * await remote<{ snapshot(round: number): Promise<number> }>(link).snapshot(3);
 * if (calls[0] !== "snapshot(3)") throw new Error(calls[0]);
 * ```
 */
export function remote<Api>(link: Pick<RankLink, "call">): Remote<Api> {
  return new Proxy({}, {
    get(_target, name) {
      // NOTE: not thenable: `await remote(link)` must not send a call named "then".
      if (typeof name !== "string" || name === "then") return undefined;
      return (...args: unknown[]) => link.call(name, args);
    },
  }) as Remote<Api>;
}
