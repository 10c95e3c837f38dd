/**
 * The NATS link against a real nats-server on loopback, over WebSocket (`wsconnect`, the
 * browsers' path): round trip bit-exact through chunks, credentials and permissions,
 * forged and tampered messages refused naming the rank, replayed ones dropped, the beacon, and a
 * server restart mid-call survived (and one past the grace not). Waits are on events (generous, never asserted as times).
 */
import { assert, assertEquals } from "../../../util/assert.ts";
import { startRunServer, until } from "../../../util/nats_server.ts";
import type { RunServer } from "../../../util/nats_server.ts";
import {
  connectLink,
  fromRankSubject,
  openCoordinator,
  RankLinkError,
  remote,
  serveRank,
  toRankSubject,
} from "../../../../src/distributed/nats/mod.ts";
import type {
  NatsConnection,
  RankHandler,
  RankLink,
  RankLinkListeners,
  RankServeOptions,
} from "../../../../src/distributed/nats/mod.ts";
import { importLinkKey, sealChunk } from "../../../../src/distributed/nats/wire.ts";
import { mulberry32 } from "../../../util/random.ts";

const CHUNKED = 256 * 1024;

/** A coordinator and one served rank on a server of the run. */
async function pair(
  rs: RunServer,
  rank: number,
  handler: RankHandler,
  opts: { listeners?: RankLinkListeners; rank?: Partial<RankServeOptions>; beaconMs?: number } = {},
) {
  const cnc = await rs.connectCoordinator();
  const coord = await openCoordinator({
    connection: cnc,
    run: rs.creds.run,
    runKey: rs.creds.runKey,
    beaconMs: opts.beaconMs ?? 100,
  });
  const link = await coord.link(rank, opts.listeners);
  const rnc = await rs.connectRank(rank);
  const server = await serveRank({
    connection: rnc,
    creds: rs.creds.ranks[rank],
    handler,
    beaconLossMs: 5000,
    ...opts.rank,
  });
  await link.ready;
  return { cnc, coord, link, rnc, server };
}

/** Random f32 bit patterns (NaN payloads, subnormals, ±0 and all). */
function randomBits(n: number, seed: number): Float32Array<ArrayBuffer> {
  const rng = mulberry32(seed);
  const bits = new Uint32Array(n);
  for (let i = 0; i < n; i++) bits[i] = (rng() * 2 ** 32) >>> 0;
  return new Float32Array(bits.buffer);
}

function firstBitDiff(a: ArrayBufferView, b: ArrayBufferView): number {
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength),
    y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  if (x.length !== y.length) return Math.min(x.length, y.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i;
  return -1;
}

Deno.test("NATS link: a 4 MiB Float32Array and a bf16 Uint16Array round-trip bit-exact through 256 KiB chunks", async () => {
  const rs = await startRunServer(2, CHUNKED);
  try {
    const seen: string[] = [];
    const { cnc, coord, link, server } = await pair(rs, 1, {
      // The rank echoes what it got and its own byte checksum: both directions are checked.
      echo(frame: { params: Float32Array; words: Uint16Array }) {
        server.emit({ got: frame.params.length });
        return { ...frame, xor: xorBytes(frame.params) };
      },
    }, { listeners: { onEvent: (e) => seen.push(JSON.stringify(e)) } });
    assertEquals(cnc.info?.max_payload, CHUNKED, "server max_payload");
    const params = randomBits(1 << 20, 7), words = new Uint16Array(randomBits(4099, 8).buffer);
    const back = await link.call("echo", [{ params, words, round: 3, loss: NaN }]) as Record<string, unknown>;
    assertEquals(seen, [JSON.stringify({ got: 1 << 20 })], "events before the result");
    assert(back.params instanceof Float32Array && back.words instanceof Uint16Array, "typed arrays come back typed");
    assertEquals(firstBitDiff(back.params as Float32Array, params), -1, "first differing byte of params");
    assertEquals(firstBitDiff(back.words as Uint16Array, words), -1, "first differing byte of words");
    assertEquals(back.xor, xorBytes(params), "rank's checksum of what it received");
    assert(back.round === 3 && Number.isNaN(back.loss), `scalars: round ${back.round}, loss ${back.loss}`);
    assert(
      link.bytes.sent > 4 * 2 ** 20 && link.bytes.sent < 4.1 * 2 ** 20,
      `bytes sent ${link.bytes.sent}: binary, not base64`,
    );
    await server.close();
    await coord.close();
  } finally {
    await rs.stop();
  }
});

function xorBytes(a: Float32Array): number {
  const w = new Uint32Array(a.buffer, a.byteOffset, a.length);
  let x = 0;
  for (let i = 0; i < w.length; i++) x = (x ^ Math.imul(w[i], i + 1)) >>> 0;
  return x;
}

Deno.test("NATS link: a rank's error comes back with its name, message and stack; an unknown method is named", async () => {
  const rs = await startRunServer(1);
  try {
    const { coord, link, server } = await pair(rs, 0, {
      train() {
        throw new RangeError("train: chunk [3, 9) is beyond the epoch");
      },
    });
    const e = await link.call("train", [{}]).then(() => undefined, (e) => e as Error);
    assert(
      e?.name === "RangeError" && e.message === "train: chunk [3, 9) is beyond the epoch",
      `got ${e?.name}: ${e?.message}`,
    );
    assert(e.stack?.includes("link_test.ts"), `the rank's stack is kept: ${e.stack}`);
    const u = await link.call("toString").then(() => undefined, (e) => e as Error);
    assert(u?.message === `rank 0 has no method "toString"`, `got ${u?.message}`);
    const f = await link.call("train", [{ sink: () => {} }]).then(() => undefined, (e) => e as Error);
    assert(
      f?.name === "TypeError" && f.message.includes("value.args[0].sink is a function"),
      `got ${f?.name}: ${f?.message}`,
    );
    const again = await link.call("train", [{}]).then(() => undefined, (e) => e as Error);
    assert(again?.name === "RangeError", `the link is still up after the caller's TypeError: got ${again?.name}`);
    await server.close();
    await coord.close();
  } finally {
    await rs.stop();
  }
});

Deno.test("NATS link: a wrong password is refused at connect, naming the rank and the user", async () => {
  const rs = await startRunServer(2);
  try {
    const r1 = rs.creds.ranks[1];
    const e = await connectLink(rs.server.wsUrl, r1.user, "not-the-password", "rank 1").then(
      () => undefined,
      (e) => e as Error,
    );
    assert(e, "connect with a wrong password must fail");
    assert(e.message.startsWith(`rank 1: NATS at ${rs.server.wsUrl} refused user "${r1.user}"`), e.message);
    assert(/authorization violation/i.test(e.message), e.message);
  } finally {
    await rs.stop();
  }
});

Deno.test("NATS link: rank 0 publishing on rank 1's subject is refused by the server's permissions", async () => {
  const rs = await startRunServer(2);
  try {
    const refused: RankLinkError[] = [], refusedAt1: RankLinkError[] = [], events: unknown[] = [];
    const { coord, link, server } = await pair(rs, 1, { ping: () => "pong" }, {
      listeners: { onEvent: (e) => events.push(e), onRefused: (e) => refusedAt1.push(e) },
    });
    const rnc0 = await rs.connectRank(0);
    const rank0 = await serveRank({
      connection: rnc0,
      creds: rs.creds.ranks[0],
      handler: {},
      onRefused: (e) => refused.push(e),
    });
    // A well-formed chunk, signed with rank 0's own key, on rank 1's subject.
    const key0 = await importLinkKey(rs.creds.ranks[0].key);
    const subject = fromRankSubject(rs.creds.run, 1);
    rnc0.publish(
      subject,
      await sealChunk(
        key0,
        subject,
        { run: rs.creds.run, from: "r1", seq: 99, part: 0, parts: 1, bytes: 1 },
        new Uint8Array(1),
      ),
    );
    const e = await until("the server's permission error", () => refused[0]);
    assert(e instanceof RankLinkError && e.rank === 0, `names rank 0: ${e.message}`);
    assert(/permissions violation/i.test(e.message) && e.message.includes(subject), e.message);
    assertEquals(await link.call("ping"), "pong", "rank 1's link still answers");
    assertEquals(refusedAt1.length + events.length, 0, "messages that reached rank 1's link");
    await rank0.close();
    await server.close();
    await coord.close();
  } finally {
    await rs.stop();
  }
});

Deno.test("NATS link: forged, tampered and other-run messages are refused naming the rank; replayed ones are dropped", async () => {
  const rs = await startRunServer(2, CHUNKED);
  try {
    const atCoord: RankLinkError[] = [], atRank: RankLinkError[] = [];
    let echoes = 0;
    const { coord, link, server } = await pair(rs, 1, { echo: (x: unknown) => (echoes++, x) }, {
      listeners: { onRefused: (e) => atCoord.push(e) },
      rank: { onRefused: (e) => atRank.push(e) },
    });
    const { run } = rs.creds;
    // A tap as the coordinator's user records the raw chunks of one call each way.
    const tap = await rs.connectCoordinator();
    const up: Uint8Array<ArrayBuffer>[] = [], down: Uint8Array<ArrayBuffer>[] = [];
    tap.subscribe(fromRankSubject(run, 1), { callback: (_e, m) => void up.push(m.data.slice()) });
    tap.subscribe(toRankSubject(run, 1), { callback: (_e, m) => void down.push(m.data.slice()) });
    await tap.flush();
    const sent = randomBits(150_000, 3); // 600 kB: three chunks
    const back = await link.call("echo", [sent]) as Float32Array;
    assertEquals(firstBitDiff(back, sent), -1, "first differing byte of the echo");
    await until("the tap's copy of the reply", () => up.length >= 3 ? true : undefined);

    const evil = await rs.connectRank(1); // rank 1's own credentials: permissions let it through
    const subject = fromRankSubject(run, 1);
    const tampered = up[1].slice();
    tampered[1000] ^= 1;
    const stranger = await importLinkKey(rs.creds.ranks[0].key);
    const meta = { run, from: "r1", seq: 1_000_000, part: 0, parts: 1, bytes: 4 };
    for (const c of up) evil.publish(subject, c); // replayed: a link that resumes takes chunks seen before as sent again
    evil.publish(subject, tampered);
    evil.publish(subject, await sealChunk(stranger, subject, meta, new Uint8Array(4))); // forged: another key
    evil.publish(subject, await sealChunk(stranger, subject, { ...meta, run: "otherrun" }, new Uint8Array(4)));
    await until("three refusals at the coordinator", () => atCoord.length >= 3 ? true : undefined);
    const why = atCoord.map((e) => e.message);
    for (const e of atCoord) {
      assert(e.rank === 1 && e.message.startsWith("rank 1: refused a message from rank 1"), e.message);
    }
    assert(why[0].includes("HMAC does not match"), why[0]);
    assert(why[1].includes("HMAC does not match"), why[1]);
    assert(why[2].includes(`run id "otherrun"`), why[2]);

    // The other way: the coordinator's call replayed to the rank runs nothing again.
    for (const c of down.slice(0, 3)) tap.publish(toRankSubject(run, 1), c);
    await tap.flush();

    // Refused and replayed messages are dropped; the link goes on, and the echo ran once per call.
    const again = await link.call("echo", [sent.subarray(0, 5)]) as Float32Array;
    assertEquals(firstBitDiff(again, sent.subarray(0, 5)), -1, "echo after the refusals");
    assertEquals([echoes, atCoord.length, atRank.length], [2, 3, 0], "echoes run, refusals at the coordinator and the rank");
    await evil.close();
    await tap.close();
    await server.close();
    await coord.close();
  } finally {
    await rs.stop();
  }
});

Deno.test("NATS link: a rank stops when the coordinator's beacon is lost, and on the coordinator's bye", async () => {
  const rs = await startRunServer(2);
  try {
    // The coordinator vanishes: its connection drops with no bye.
    const stopped: string[] = [];
    const a = await pair(rs, 0, { ping: () => "pong" }, {
      rank: { beaconLossMs: 800, onDown: (e) => void stopped.push(e.message) },
    });
    assertEquals(await a.link.call("ping"), "pong", "a call before the coordinator vanishes");
    await a.cnc.close();
    const why = await a.server.down;
    assertEquals(stopped, [why.message], "onDown ran once, with the reason");
    assert(why.rank === 0 && why.message.startsWith("rank 0: no beacon from the coordinator for"), why.message);
    assert(
      (await a.link.down).message.startsWith("rank 0: the coordinator's NATS connection closed"),
      "coordinator side down too",
    );
    await a.coord.close();

    // A clean end: the coordinator says bye.
    const b = await pair(rs, 1, {});
    await b.coord.close();
    const bye = await b.server.down;
    assert(bye.message === "rank 1: the coordinator ended the run (the coordinator closed the run)", bye.message);
  } finally {
    await rs.stop();
  }
});

Deno.test("NATS link: a bye the socket delivered just before the connection dropped ends the rank as a bye, not as a lost link", async () => {
  // By construction: the rank's connection is wrapped so that the moment the bye's chunk is
  // handed to the rank, its status stream reports a disconnect (as when the coordinator's
  // process stops its server right after saying bye); the chunk is still being verified.
  const rs = await startRunServer(1);
  try {
    const cnc = await rs.connectCoordinator();
    const coord = await openCoordinator({ connection: cnc, run: rs.creds.run, runKey: rs.creds.runKey, beaconMs: 60_000 });
    const link = await coord.link(0);
    const rnc = await rs.connectRank(0);
    const statuses: { type: string }[] = [];
    let wake: (() => void) | undefined;
    let armed = false, delivered = 0;
    const push = (s: { type: string }) => {
      statuses.push(s);
      wake?.();
    };
    const wrapped = new Proxy(rnc, {
      get(target, prop) {
        if (prop === "status") {
          return () => ({
            async *[Symbol.asyncIterator]() {
              // Ends when the connection closes, as the client's own stream does.
              target.closed().then(() => wake?.());
              for (;;) {
                while (statuses.length) yield statuses.shift()!;
                if (target.isClosed()) return;
                await new Promise<void>((r) => wake = r);
              }
            },
          });
        }
        if (prop === "subscribe") {
          return (subject: string, o: { callback: (err: unknown, msg: { data: Uint8Array }) => void }) =>
            target.subscribe(subject, {
              ...o,
              callback: (err, msg) => {
                o.callback(err, msg);
                if (msg.data.length > 0 && armed) push({ type: "disconnect" });
                else if (msg.data.length > 0) delivered++;
              },
            });
        }
        const v = Reflect.get(target, prop);
        return typeof v === "function" ? v.bind(target) : v;
      },
    }) as NatsConnection;
    const server = await serveRank({ connection: wrapped, creds: rs.creds.ranks[0], handler: {}, beaconLossMs: 120_000 });
    await link.ready;
    // The coordinator's first beacon (the next comes in a minute): then the bye is next.
    await until("the first beacon", () => delivered > 0 || undefined);
    armed = true;
    await coord.close();
    const why = await server.down;
    assertEquals(why.message, "rank 0: the coordinator ended the run (the coordinator closed the run)", "the rank read the bye first");
  } finally {
    await rs.stop();
  }
});

Deno.test("NATS link: a rank's bye takes its link down and rejects the pending call naming the rank", async () => {
  const rs = await startRunServer(1);
  try {
    let release!: () => void;
    const { coord, link, server } = await pair(rs, 0, { wait: () => new Promise<void>((r) => release = r) });
    const pending = link.call("wait").then(() => undefined, (e) => e as Error);
    await until("the call to arrive", () => release);
    await server.close("stopped by the user");
    const e = await pending;
    assert(e instanceof RankLinkError && e.rank === 0, `got ${e}`);
    assertEquals(e.message, "rank 0 left the run: stopped by the user", "pending call's error");
    const later = await link.call("wait").then(() => undefined, (e) => e as Error);
    assert(later === e, "a call after down rejects with the same reason");
    release();
    await coord.close();
  } finally {
    await rs.stop();
  }
});

Deno.test("NATS link: a server restart mid-call is survived: both sides reconnect and the call is answered once", async () => {
  const rs = await startRunServer(1);
  try {
    let calls = 0;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const { coord, link, server } = await pair(rs, 0, {
      slow: async (x: number) => {
        calls++;
        await released;
        return x * 2;
      },
    });
    const pending = link.call("slow", [21]);
    await until("the call at the rank", () => calls > 0 ? true : undefined);
    await rs.server.kill();
    release(); // the answer is sent while the server is away: kept, and sent again once the link resumes
    await new Promise((r) => setTimeout(r, 500));
    await rs.server.start();
    assertEquals(await pending, 42, "the call's answer after the restart");
    assertEquals(calls, 1, "the rank ran the call once");
    assertEquals(await link.call("slow", [1]), 2, "a call after the restart");
    await server.close();
    await coord.close();
  } finally {
    await rs.stop();
  }
});

Deno.test("NATS link: a connection away longer than its grace takes the link down, naming it", async () => {
  const rs = await startRunServer(1);
  try {
    const cnc = await rs.connectCoordinator();
    const coord = await openCoordinator({ connection: cnc, run: rs.creds.run, runKey: rs.creds.runKey, beaconMs: 100, graceMs: 1000 });
    const link = await coord.link(0);
    const server = await serveRank({ connection: await rs.connectRank(0), creds: rs.creds.ranks[0], handler: { hang: () => new Promise(() => {}) }, beaconLossMs: 2000 });
    await link.ready;
    const pending = link.call("hang").then(() => undefined, (e) => e as Error);
    await rs.server.kill();
    const e = await pending;
    assert(e instanceof RankLinkError && e.rank === 0 && e.fault === "down", `got ${e}`);
    assert(e.message.includes("graceMs 1000"), e.message);
    const r = await server.down;
    assert(r.message.includes("beaconLossMs 2000"), r.message);
    await coord.close();
  } finally {
    await rs.stop();
  }
});

export type { NatsConnection, RankLink };

/** The API two ranks serve in the test below, typed once for `remote`. */
interface EchoApi {
  echo(frame: { rank: number; params: Float32Array }): Promise<{ rank: number; params: Float32Array }>;
}

Deno.test("NATS link: two ranks on one coordinator connection answer interleaved calls, each with its own frame", async () => {
  const rs = await startRunServer(2, CHUNKED);
  try {
    const cnc = await rs.connectCoordinator();
    const coord = await openCoordinator({ connection: cnc, run: rs.creds.run, runKey: rs.creds.runKey });
    const servers = [];
    const links: RankLink[] = [];
    for (const k of [0, 1]) {
      links.push(await coord.link(k));
      const handler = {
        echo: (f: { rank: number; params: Float32Array }) => Promise.resolve({ ...f, rank: k }),
      } satisfies EchoApi;
      servers.push(await serveRank({ connection: await rs.connectRank(k), creds: rs.creds.ranks[k], handler }));
    }
    await Promise.all(links.map((l) => l.ready));
    const frames = [randomBits(300_001, 21), randomBits(299_999, 22)];
    const calls = [0, 1, 0, 1].map((k, i) => remote<EchoApi>(links[k]).echo({ rank: 10 + i, params: frames[k] }));
    const back = await Promise.all(calls);
    for (const [i, b] of back.entries()) {
      const k = i % 2;
      assertEquals(b.rank, k, `call ${i} answered by`);
      assertEquals(firstBitDiff(b.params, frames[k]), -1, `call ${i}: first differing byte`);
    }
    for (const s of servers) await s.close();
    await coord.close();
  } finally {
    await rs.stop();
  }
});

Deno.test("NATS link: present() is true while the rank's thread is busy and false once its connection left the server", async () => {
  const rs = await startRunServer(1);
  try {
    // The rank is in a call that never answers: silent, as a rank compiling pipelines.
    const refused: string[] = [];
    const { coord, link, rnc } = await pair(rs, 0, { hang: () => new Promise(() => {}) }, {
      rank: { onRefused: (e) => refused.push(e.message) },
    });
    void link.call("hang").catch(() => {});
    assertEquals(await link.present(), true, "a served rank is present");
    assertEquals(await link.present(), true, "and stays so (the probe does not upset its link)");
    assertEquals(refused, [], "the rank took no probe for a forged message");
    // The rank's connection goes (a closed tab): the server has no subscriber on its subject.
    await rnc.close();
    assertEquals(await link.present(), false, "a rank whose connection left is not present");
    await coord.close();
  } finally {
    await rs.stop();
  }
});
