/**
 * The worker's forwarding (workers/rank.ts uses forwardRankApi): every call of the
 * protocol reaches the runtime with every argument, frames are handed to `transfer`.
 * The type-level half fails to compile when RankApi gains a call the worker does not
 * forward, or when a forwarded call's parameters differ from the protocol's.
 */
import { forwardRankApi } from "../../../src/distributed/rank/rank_forward.ts";
import type { Frame, RankApi } from "../../../src/distributed/protocol/messages.ts";
import { FORWARDED_CALLS, type ForwardedCall } from "../../../src/distributed/protocol/rank_calls.ts";
import { assert, assertEquals } from "../../util/assert.ts";

type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Forwarded = ReturnType<typeof forwardRankApi>;
/** The forwarded calls whose parameters differ from the protocol's (none, or this fails to compile). */
type Drifted = { [K in ForwardedCall]: Same<Parameters<Forwarded[K]>, Parameters<RankApi[K]>> extends true ? never : K }[ForwardedCall];
const paramsMatch: [Drifted] extends [never] ? true : Drifted = true;
/** The calls of RankApi the worker neither forwards nor serves itself (none, or this fails to compile). */
type Unserved = Exclude<keyof RankApi, ForwardedCall | "init" | "stop">;
const allServed: [Unserved] extends [never] ? true : Unserved = true;

Deno.test("forwardRankApi passes every argument of every call through, and frames through transfer", async () => {
  assert(allServed && paramsMatch, "type-level checks");
  const seen: [string, unknown[]][] = [];
  const frame = (): Frame => ({ rank: 0, round: 1, batches: 2, dtype: "f32", params: new Float32Array(1), buffers: new Float32Array(0) });
  const runtime = new Proxy({}, {
    get: (_, k: string) => (...args: unknown[]) => {
      seen.push([k, args]);
      return Promise.resolve(["initialState", "snapshot", "finalState"].includes(k) ? frame() : k);
    },
  }) as RankApi;
  const transferred: Frame[] = [];
  const api = forwardRankApi(() => runtime, (f) => (transferred.push(f), f));
  const a = { tag: "a" }, b = { tag: "b" }, c = { tag: "c" };
  for (const k of FORWARDED_CALLS) {
    const out = await (api[k] as (...x: unknown[]) => Promise<unknown>)(a, b, c);
    const [name, args] = seen.at(-1)!;
    assertEquals(name, k, "the runtime's call");
    assert(args.length === 3 && args[0] === a && args[1] === b && args[2] === c, `${k}: arguments forwarded as given, got ${JSON.stringify(args)}`);
    if (typeof out === "string") assertEquals(out, k, `${k}: result`);
  }
  assertEquals(transferred.length, 3, "initialState, snapshot and finalState frames transferred");
});

Deno.test("forwardRankApi: snapshot(round, dtype) reaches the runtime with the round's dtype (the final consensus is f32)", async () => {
  let got: unknown[] = [];
  const runtime = { snapshot: (...args: unknown[]) => ((got = args), Promise.resolve({} as Frame)) } as unknown as RankApi;
  await forwardRankApi(() => runtime, (f) => f).snapshot(7, "f32");
  assertEquals(got, [7, "f32"], "snapshot arguments");
});
