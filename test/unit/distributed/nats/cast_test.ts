/**
 * Casts (nats/cast.ts) over a real nats-server on loopback: one value published once reaches
 * every rank bit-exact through chunks while each rank's own link carries only its name; a
 * cast whose bytes do not hash to what the call names, or one a rank never received, fails
 * the call as `CastMissed`, and the NATS transport then sends the consensus inline. Calls are
 * handed to the rank in their order while one waits for its cast.
 */
import { NatsTransport } from "../../../../src/distributed/coordinator/transport/transport_nats.ts";
import { CAST_MISSED, Cast, decodeValue, encodeValue, openCoordinator, type RankServer, serveRank } from "../../../../src/distributed/nats/mod.ts";
import type { Adoption, Frame } from "../../../../src/distributed/protocol/messages.ts";
import { assert, assertEquals, assertRejects } from "../../../util/assert.ts";
import { startRunServer } from "../../../util/nats_server.ts";
import { mulberry32 } from "../../../util/random.ts";

/** Max payload of the test server: the value below needs many chunks. */
const PAYLOAD = 64 * 1024;
const N = 100_000;

function randomParams(seed: number): Float32Array<ArrayBuffer> {
  const rng = mulberry32(seed);
  return Float32Array.from({ length: N }, () => rng() * 2 - 1);
}

function sameBits(a: Float32Array, b: Float32Array): boolean {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length), y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** A coordinator and `ranks` served ranks whose `adopt` records what it was given, in call order. */
async function world(ranks: number, opts: { castKey?: boolean; castWaitMs?: number } = {}) {
  const rs = await startRunServer(ranks, PAYLOAD);
  const coord = await openCoordinator({ connection: await rs.connectCoordinator(), run: rs.creds.run, runKey: rs.creds.runKey, beaconMs: 100 });
  const got: { name: string; value: unknown }[][] = [];
  const servers: RankServer[] = [];
  const transports: NatsTransport[] = [];
  for (let k = 0; k < ranks; k++) {
    const log: { name: string; value: unknown }[] = [];
    got.push(log);
    transports.push(await NatsTransport.open(coord, k));
    const creds = opts.castKey === false ? { ...rs.creds.ranks[k], cast: undefined } : rs.creds.ranks[k];
    servers.push(
      await serveRank({
        connection: await rs.connectRank(k),
        creds,
        beaconLossMs: 5000,
        castWaitMs: opts.castWaitMs,
        handler: {
          adopt: (a: Adoption) => {
            log.push({ name: "adopt", value: a });
            return { rank: k, divergence: 0, postNorm: 1 };
          },
          ping: (n: number) => {
            log.push({ name: "ping", value: n });
            return n;
          },
        },
      }),
    );
  }
  for (const t of transports) await t.link.ready;
  return {
    coord,
    got,
    transports,
    async stop() {
      for (const t of transports) await t.close();
      await coord.close();
      for (const s of servers) await s.close();
      await rs.stop();
    },
  };
}

function adoption(params: Float32Array<ArrayBuffer>): Adoption {
  const consensus: Frame = { rank: -1, round: 3, batches: 0, dtype: "f32", params, buffers: new Float32Array([1, 2]) };
  return { round: 3, version: 3, consensus, resetInner: false, globalStep: 9, withBuffers: true };
}

Deno.test("codec: a Cast travels as its name and comes back a Cast", () => {
  const back = decodeValue(encodeValue({ a: [new Cast(7, 123, "ZGlnZXN0")] })) as { a: Cast[] };
  assert(back.a[0] instanceof Cast, "a Cast instance");
  assertEquals([back.a[0].id, back.a[0].bytes, back.a[0].digest], [7, 123, "ZGlnZXN0"]);
});

Deno.test("cast: one consensus, published once, reaches 4 ranks bit-exact; each link carries its name only", async () => {
  const w = await world(4);
  try {
    const a = adoption(randomParams(11));
    const sentBefore = w.transports.map((t) => t.link.bytes.sent);
    const acks = await Promise.all(w.transports.map((t) => t.request("adopt", a)));
    assertEquals(acks.map((x) => x.rank), [0, 1, 2, 3]);
    for (const [k, log] of w.got.entries()) {
      const got = log[0].value as Adoption;
      assert(sameBits(got.consensus.params as Float32Array, a.consensus.params as Float32Array), `rank ${k}: params bit-exact`);
      assertEquals([...got.consensus.buffers, got.version, got.globalStep], [1, 2, 3, 9], `rank ${k}: the rest of the adoption`);
    }
    const frameBytes = encodeValue(a.consensus).byteLength;
    const perLink = w.transports.map((t, k) => t.link.bytes.sent - sentBefore[k]);
    // The cast carries the frame once (chunk headers and MACs on top); each link a call naming it.
    assert(w.coord.castBytes >= frameBytes && w.coord.castBytes < frameBytes * 1.05, `cast bytes ${w.coord.castBytes} for a ${frameBytes}-byte frame`);
    for (const [k, b] of perLink.entries()) assert(b < 4096, `rank ${k}'s link carried ${b} bytes for the adopt call (the frame is ${frameBytes})`);
    // The same object again is the same cast: nothing more published.
    const cast = w.coord.castBytes, link0 = w.transports[0].link.bytes.sent;
    await w.transports[0].request("adopt", a);
    assertEquals(w.coord.castBytes, cast, "a second adoption of the same consensus publishes nothing");
    assert(w.transports[0].link.bytes.sent - link0 < 4096, "and is not sent inline either: the rank still holds the cast");
  } finally {
    await w.stop();
  }
});

Deno.test("cast: a rank without the cast key is sent the consensus inline, and gets the same bits", async () => {
  const w = await world(2, { castKey: false });
  try {
    const a = adoption(randomParams(12));
    await Promise.all(w.transports.map((t) => t.request("adopt", a)));
    for (const log of w.got) assert(sameBits((log[0].value as Adoption).consensus.params as Float32Array, a.consensus.params as Float32Array), "inline params");
    const frameBytes = encodeValue(a.consensus).byteLength;
    for (const t of w.transports) assert(t.link.bytes.sent > frameBytes, "the frame went on the rank's own link");
  } finally {
    await w.stop();
  }
});

Deno.test("cast: bytes that do not hash to the call's digest, or a cast never sent, fail the call as CastMissed", async () => {
  const w = await world(1, { castWaitMs: 300 });
  try {
    const a = adoption(randomParams(13));
    const real = await w.coord.cast(a.consensus);
    const forged = new Cast(real.id, real.bytes, btoa("x".repeat(32)));
    const link = w.transports[0].link;
    const e1 = await assertRejects(() => link.call("adopt", [{ ...a, consensus: forged }]), Error);
    assertEquals(e1.name, CAST_MISSED);
    assert(e1.message.includes("other bytes than the call names"), e1.message);
    const e2 = await assertRejects(() => link.call("adopt", [{ ...a, consensus: new Cast(99, 10, real.digest) }]), Error);
    assertEquals(e2.name, CAST_MISSED);
    assert(e2.message.includes("cast 99 did not arrive within 300 ms"), e2.message);
    assertEquals(w.got[0].length, 0, "the handler never saw either call");
  } finally {
    await w.stop();
  }
});

Deno.test("cast: a call waiting for its cast holds back the calls after it, so the rank sees them in order", async () => {
  const w = await world(1, { castWaitMs: 20_000 });
  try {
    const link = w.transports[0].link;
    // Name a cast before it is published: the adopt waits; the ping sent after it must wait too.
    const a = adoption(randomParams(14));
    const encoded = encodeValue(a.consensus);
    const digest = btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-256", encoded))));
    const adopt = link.call("adopt", [{ ...a, consensus: new Cast(1, encoded.byteLength, digest) }]);
    const ping = link.call("ping", [5]);
    await new Promise((r) => setTimeout(r, 200));
    assertEquals(w.got[0].length, 0, "nothing handed to the rank while the adopt waits");
    const cast = await w.coord.cast(a.consensus);
    assertEquals(cast.id, 1, "the first cast of the run");
    await Promise.all([adopt, ping]);
    assertEquals(w.got[0].map((g) => g.name), ["adopt", "ping"], "in call order");
  } finally {
    await w.stop();
  }
});
