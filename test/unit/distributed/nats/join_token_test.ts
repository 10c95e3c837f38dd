/**
 * Join and relay tokens (issue 22, item 4): a token round-trips; every way a copied token
 * breaks (empty, cut short, not base64url, not JSON, not an object, a field missing or of
 * the wrong type, a relay's members) is one TypeError line naming the token by its first
 * characters and length (never its password) and what is expected; and through the CLIs
 * (`examples/train.ts --join`, `scripts/relay.ts`) it is one line on stderr, exit 2, no stack.
 */
import { assert, assertEquals, errorOf } from "../../../util/assert.ts";
import { assignRelay, createRunCredentials, relayCredentials } from "../../../../src/distributed/nats/credentials.ts";
import type { RelayCredentials } from "../../../../src/distributed/nats/credentials.ts";
import { decodeJoinToken, decodeRelayToken, encodeJoinToken } from "../../../../src/distributed/nats/join_token.ts";

/** base64url of any JSON text, as a token is made. */
const tokenOf = (json: string) =>
  btoa(json).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");

Deno.test("decodeJoinToken: a rank's token round-trips, URL-safe", async () => {
  const c = await createRunCredentials(2);
  const token = encodeJoinToken("ws://127.0.0.1:4222", c.ranks[1]);
  assert(/^[A-Za-z0-9_-]+$/.test(token), `URL-safe: ${token}`);
  assertEquals(decodeJoinToken(token), { url: "ws://127.0.0.1:4222", ...c.ranks[1] }, "decoded");
});

Deno.test("decodeJoinToken: each broken token is one TypeError naming the token and what is expected, never its password", async () => {
  const c = await createRunCredentials(2);
  const rank = { url: "ws://127.0.0.1:4222", ...c.ranks[1] };
  const good = encodeJoinToken(rank.url, c.ranks[1]);
  const field = (patch: Record<string, unknown>) => tokenOf(JSON.stringify({ ...rank, ...patch }));
  const cases: [string, string, string][] = [
    ["empty", "", "the join token is empty; expected the string the coordinator printed"],
    ["a cut of 4n+1", good.slice(0, 4 * 20 + 1), "is cut short (not whole base64)"],
    ["cut short", good.slice(0, 4 * 20), "does not decode to JSON ("],
    ["not base64url", good.slice(0, 10) + "%" + good.slice(11), `is not base64url: "%" at character 11`],
    ["not JSON", tokenOf("hello there"), "does not decode to JSON ("],
    ["JSON, not an object", tokenOf("[1,2]"), "decodes to an array, not an object"],
    ["no url", field({ url: undefined }), `"url" must be a ws:// or wss:// URL, got none`],
    ["url of another scheme", field({ url: "nats://x:4222" }), `"url" must be a ws:// or wss:// URL, got "nats://x:4222"`],
    ["bad run id", field({ run: "Run.1" }), `"run" must be 4-64 of [a-z0-9], got "Run.1"`],
    ["rank a string", field({ rank: "1" }), `"rank" must be an integer >= 0, got string`],
    ["rank negative", field({ rank: -1 }), `"rank" must be an integer >= 0, got -1`],
    ["pass a number", field({ pass: 42 }), `"pass" must be a non-empty string, got number`],
    ["key short", field({ key: "abcd" }), `"key" must be base64 of 32 bytes, got 4 characters`],
  ];
  for (const [what, token, want] of cases) {
    const got = errorOf(() => decodeJoinToken(token));
    assert(got.startsWith("TypeError: decodeJoinToken: ") && got.includes(want), `${what}: ${got}`);
    assert(!got.includes("\n"), `${what}: one line: ${got}`);
    assert(!got.includes(c.ranks[1].pass) && !got.includes(c.ranks[1].key), `${what}: no secret in ${got}`);
    if (token) assert(got.includes(`join token "${token.slice(0, 12)}`) && got.includes(`(${token.length} characters)`), `${what}: names the token: ${got}`);
  }
});

Deno.test("decodeRelayToken: a rank's token or bad members are one TypeError naming the relay token", async () => {
  const c = await createRunCredentials(3);
  assignRelay(c, 2, [1]);
  const relay = relayCredentials(c, 2);
  const url = "ws://127.0.0.1:4222";
  assertEquals(decodeRelayToken(encodeJoinToken(url, relay)), { url, ...relay }, "round trip");
  const cases: [string, string, string][] = [
    ["a rank's token", encodeJoinToken(url, c.ranks[1]), `has no "members" (a rank's join token, not a relay's?)`],
    ["members empty", encodeJoinToken(url, { ...relay, members: [] } as RelayCredentials), `"members" must be a non-empty array of { rank: integer >= 0, key: base64 of 32 bytes }, got an empty array`],
    ["a member without key", encodeJoinToken(url, { ...relay, members: [{ rank: 1 }] } as unknown as RelayCredentials), "got an array whose entry 0 is not"],
    ["cut short", encodeJoinToken(url, relay).slice(0, 40), "does not decode to JSON"],
  ];
  for (const [what, token, want] of cases) {
    const got = errorOf(() => decodeRelayToken(token));
    assert(got.startsWith(`TypeError: decodeRelayToken: relay token "${token.slice(0, 12)}`) && got.includes(want), `${what}: ${got}`);
  }
});

/** Run a CLI with a bad token: its exit code and stderr. */
async function cli(script: string, args: string[]): Promise<{ code: number; stderr: string }> {
  const root = new URL("../../../../", import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-check", script, ...args],
    cwd: root,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr).trim() };
}

Deno.test("examples/train.ts --join and scripts/relay.ts: a cut-short or garbled token is one line on stderr, exit 2, no stack", async () => {
  const c = await createRunCredentials(2);
  const good = encodeJoinToken("ws://127.0.0.1:4222", c.ranks[1]);
  const cases = [
    ["cut short", good.slice(0, good.length - 7), "does not decode to JSON"],
    ["garbled (base64url, not JSON)", "bm90IGEgdG9rZW4gYXQgYWxs", "does not decode to JSON"],
    ["garbled (other characters)", "not a token at all!", "token"],
  ];
  for (const [what, bad, want] of cases) {
    for (const [script, args, prefix] of [
      ["examples/train.ts", ["--join", bad], "npm start"],
      ["scripts/relay.ts", [bad], "scripts/relay.ts: decodeRelayToken: relay token"],
    ] as const) {
      const { code, stderr } = await cli(script, [...args]);
      assertEquals(code, 2, `${script} ${what}: exit code (stderr: ${stderr})`);
      assert(!stderr.includes("\n") && stderr.startsWith(prefix) && stderr.includes(want), `${script} ${what}: one line:\n${stderr}`);
      assert(!/^\s*at .*:\d+:\d+/m.test(stderr) && !/Uncaught|error: /.test(stderr), `${script} ${what}: no stack frame:\n${stderr}`);
    }
  }
});
