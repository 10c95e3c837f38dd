/**
 * The table of rank calls (protocol/rank_calls.ts): it names every `RankApi` call exactly once
 * (the `satisfies` clause fails to compile otherwise; the type-level check below says the same
 * from this side), and the lists derived from it hold the calls each user of them expects.
 */
import type { RankApi } from "../../../src/distributed/protocol/messages.ts";
import {
  callsWith,
  FORWARDED_CALLS,
  RANK_CALL_TABLE,
  RANK_CALLS,
} from "../../../src/distributed/protocol/rank_calls.ts";
import { assert, assertEquals } from "../../util/assert.ts";

type Missing = Exclude<keyof RankApi, keyof typeof RANK_CALL_TABLE>;
type Extra = Exclude<keyof typeof RANK_CALL_TABLE, keyof RankApi>;
const sameNames: [Missing | Extra] extends [never] ? true : Missing | Extra = true;

Deno.test("RANK_CALL_TABLE: every RankApi call once; frames, forwarding and compiles derived from it", () => {
  assert(sameNames, "type-level check");
  assertEquals(new Set(RANK_CALLS).size, RANK_CALLS.length, "each call once");
  assertEquals(RANK_CALLS.length, 13, `calls: ${RANK_CALLS}`);
  assertEquals(callsWith("frame"), ["initialState", "snapshot", "finalState"], "calls answering with a frame");
  assertEquals(
    [...FORWARDED_CALLS],
    RANK_CALLS.filter((k) => k !== "init" && k !== "stop"),
    "init and stop are the host's own",
  );
  assertEquals(
    callsWith("compiles"),
    ["init", "initialState", "load", "train", "snapshot", "adopt", "evaluate", "finalState"],
    "calls whose first run may compile pipelines",
  );
});
