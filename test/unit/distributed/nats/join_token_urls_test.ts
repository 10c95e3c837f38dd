/**
 * Join and relay tokens of a NATS cluster (issue 27 item 2): a token lists every node
 * (`urls`, `url` its first) and round-trips; a one-server token is as before (`url`
 * alone); each bad `urls` is one TypeError line naming the token and the field (never the
 * password); the walk-in command allows every node's host:port.
 */
import { assert, assertEquals, errorOf } from "../../../util/assert.ts";
import { assignRelay, createRunCredentials, relayCredentials } from "../../../../src/distributed/nats/credentials.ts";
import { decodeJoinToken, decodeRelayToken, encodeJoinToken, serversOf } from "../../../../src/distributed/nats/join_token.ts";
import { ArrayDataSet, packBytes, serveWalkIn } from "../../../../src/index.ts";

const URLS = ["ws://10.0.0.1:4223", "ws://10.0.0.2:4224", "wss://nats.example:443"];

/** base64url of a JSON object, as a token is made. */
const tokenOf = (v: unknown) => btoa(JSON.stringify(v)).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");

Deno.test("encodeJoinToken: every node's URL round-trips (url = the first); one URL is a one-server token", async () => {
  const c = await createRunCredentials(2);
  const t = decodeJoinToken(encodeJoinToken(URLS, c.ranks[1]));
  assertEquals(t, { url: URLS[0], urls: URLS, ...c.ranks[1] }, "cluster token");
  assertEquals(serversOf(t), URLS, "connect to every node");
  for (const one of [URLS[1], [URLS[1]]]) {
    const s = decodeJoinToken(encodeJoinToken(one, c.ranks[1]));
    assertEquals(s, { url: URLS[1], ...c.ranks[1] }, `one server (${JSON.stringify(one)}): no urls`);
    assertEquals(serversOf(s), [URLS[1]], "one server");
  }
  assignRelay(c, 1, [0]);
  const relay = relayCredentials(c, 1);
  assertEquals(decodeRelayToken(encodeJoinToken(URLS, relay)), { url: URLS[0], urls: URLS, ...relay }, "relay token");
});

Deno.test("decodeJoinToken/decodeRelayToken: each bad urls is one TypeError naming the token and the field, never the password", async () => {
  const c = await createRunCredentials(2);
  const rank = { url: URLS[0], ...c.ranks[1] };
  const want = `"urls" must be an array of 2-16 distinct ws:// or wss:// URLs whose first is "url", got`;
  const cases: [string, unknown, string][] = [
    ["a string", URLS.join(","), "string"],
    ["null", null, "null"],
    ["an object", { 0: URLS[0] }, "object"],
    ["one entry", [URLS[0]], "1 entries"],
    ["empty", [], "0 entries"],
    ["17 entries", Array.from({ length: 17 }, (_, i) => `ws://h${i}:1`), "17 entries"],
    ["an http URL", [URLS[0], "http://10.0.0.2:4224"], `entry 1 "http://10.0.0.2:4224"`],
    ["a number", [URLS[0], 4224], "entry 1 number"],
    ["a URL with a space", [URLS[0], "ws://a b:1"], `entry 1 "ws://a b:1"`],
    ["a node twice", [URLS[0], URLS[1], URLS[1]], `entry 2 "${URLS[1]}" twice`],
    ["first is not url", [URLS[1], URLS[0]], `first "${URLS[1]}", "url" "${URLS[0]}"`],
  ];
  for (const [what, urls, got] of cases) {
    const token = tokenOf({ ...rank, urls });
    const e = errorOf(() => decodeJoinToken(token));
    assertEquals(e, `TypeError: decodeJoinToken: join token "${token.slice(0, 12)}…" (${token.length} characters): ${want} ${got}`, what);
    assert(!e.includes(c.ranks[1].pass), `${what}: no password`);
  }
  assignRelay(c, 1, [0]);
  const relay = tokenOf({ url: URLS[0], urls: [URLS[0]], ...relayCredentials(c, 1) });
  const e = errorOf(() => decodeRelayToken(relay));
  assert(e.startsWith(`TypeError: decodeRelayToken: relay token "${relay.slice(0, 12)}…"`) && e.endsWith(`${want} 1 entries`), e);
});

Deno.test("serveWalkIn: the walk-in command allows every node's host:port and its token keeps every URL", async () => {
  const c = await createRunCredentials(2);
  const server = await serveWalkIn({
    loader: new TextEncoder().encode("export {};"),
    bundle: new TextEncoder().encode("console.log('bundle');"),
    packs: { train: await packBytes(new ArrayDataSet([{ data: new Float32Array(4), shape: [1, 4] }])) },
  }, { hostname: "127.0.0.1" });
  try {
    const join = encodeJoinToken(URLS, c.ranks[1]);
    const cmd = server.command(join);
    const allow = /--allow-net=(\S+)/.exec(cmd)?.[1];
    assertEquals(allow, [server.hostPort, "10.0.0.1:4223", "10.0.0.2:4224", "nats.example:443"].join(","), cmd);
    const t = decodeJoinToken(server.token(join)) as ReturnType<typeof decodeJoinToken> & { walkIn?: unknown };
    assertEquals(t.urls, URLS, "the walk-in token lists every node");
    assert(t.walkIn !== undefined, "with the walk-in digests");
    assert(/--allow-net=\S+,10\.0\.0\.2:4224 /.test(server.command(encodeJoinToken(URLS[1], c.ranks[1]))), "one server: its host:port");
  } finally {
    await server.close();
  }
});
