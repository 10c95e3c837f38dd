/**
 * Re-entry's builder lookup for a remote rank whose entry is a transformed copy of the
 * coordinator's module (a browser tab through Vite: joinRun's `anyLine`): the single builder
 * the entry creates is taken whatever its line:col; without `anyLine`, or with two builders
 * in the entry, the rank fails naming the coordinator's call site. The registry is global:
 * each test uses its own module URL.
 */
import { awaitBuilder, type RankRole, register } from "../../../src/distributed/run/reentry.ts";
import { assertEquals, assertRejects } from "../../util/assert.ts";

function role(entry: string, anyLine: boolean): RankRole {
  // The token's line:col: the coordinator's source positions (Deno), not the served copy's.
  return { rank: 1, world: 0, entry, site: { url: entry, line: 75, col: 32 }, timeoutMs: 2000, session: "t", anyLine };
}

Deno.test("awaitBuilder anyLine: the entry's single builder is the rank's whatever its line:col", async () => {
  const entry = "http://127.0.0.1:5173/examples/program_a.ts";
  register({ url: `${entry}?t=123`, line: 61, col: 24 }, "served copy's builder"); // Vite strips blank lines
  register({ url: "http://127.0.0.1:5173/src/other.ts", line: 75, col: 32 }, "another module's builder");
  assertEquals(await awaitBuilder<string>(role(entry, true), Promise.resolve()), "served copy's builder");
});

Deno.test("awaitBuilder without anyLine, or with two builders in the entry: refused naming the call site", async () => {
  const entry = "http://127.0.0.1:5173/examples/program_b.ts";
  register({ url: entry, line: 61, col: 24 }, "one");
  await assertRejects(() => awaitBuilder(role(entry, false), Promise.resolve()), Error, `${entry}:75:32 was not reached`, "61:24");
  register({ url: entry, line: 90, col: 3 }, "two");
  await assertRejects(() => awaitBuilder(role(entry, true), Promise.resolve()), Error, `${entry}:75:32 was not reached`, "90:3");
});
