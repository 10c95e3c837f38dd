/**
 * Relays against a real nats-server on loopback: the coordinator's reduce
 * cycle (reduce_cycle.ts) with one direct rank and two fake remote ranks behind a relay
 * (run/relay.ts, served in this process over its own connection). The consensus is checked
 * against a float64 reference of Σ m_k θ_k / Σ m_k over what every rank sent; the relay's
 * refusals (a NaN frame, a forged one) drop the rank naming it; a relay that goes away
 * loses its ranks and the next reduce runs on the rest. Waits are on events, never times.
 */
import { startNatsServer } from "../../../scripts/nats_server.ts";
import { paramMass } from "../../../src/distributed/coordinator/reduce/consensus.ts";
import { reduceCycle } from "../../../src/distributed/coordinator/reduce/reduce_cycle.ts";
import { RankClient } from "../../../src/distributed/coordinator/transport/rank_client.ts";
import { checkSum, RelayClient } from "../../../src/distributed/coordinator/reduce/relay_client.ts";
import { NatsTransport } from "../../../src/distributed/coordinator/transport/transport_nats.ts";
import {
  assignRelay,
  connectLink,
  coordinatorInbox,
  createRunCredentials,
  encodeValue,
  importLinkKey,
  openCoordinator,
  relayCredentials,
  relaySubject,
  serveRank,
  serverAuthorization,
  type RunCredentials,
  WireSender,
} from "../../../src/distributed/nats/mod.ts";
import type { Adoption, Frame, LayoutTable, RankApi, RankSetup, SyncAck, WireDtype } from "../../../src/distributed/protocol/messages.ts";
import { serveRelay } from "../../../src/distributed/run/relay.ts";
import { packBf16, unpackBf16 } from "../../../src/tensor/mod.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { until } from "../../util/nats_server.ts";
import { mulberry32 } from "../../util/random.ts";

const P = 1001, B = 3, RELAY = 3;
const LAYOUT: LayoutTable = {
  params: [{ name: "w", shape: [P], offset: 0, numel: P }],
  buffers: [{ name: "s", shape: [B], offset: 0, numel: B }],
  paramCount: P,
  bufferCount: B,
};

/** Rank k's parameters: near a shared point, as after training (odd size: a bf16 pad word). */
function paramsOf(rank: number, round: number): Float32Array<ArrayBuffer> {
  const rng = mulberry32(rank * 7919 + round);
  return Float32Array.from({ length: P }, (_, i) => Math.sin(i * 0.01) + 0.05 * (rng() - 0.5));
}
const buffersOf = (rank: number) => Float32Array.from({ length: B }, (_, i) => rank + i);
/** Steps per rank this round (n_k): uneven, as under ElChe. */
const STEPS = [3, 5, 2];

function frameOf(rank: number, round: number, dtype: "bf16" | "f32", params = paramsOf(rank, round)): Frame {
  return {
    rank,
    round,
    batches: STEPS[rank],
    dtype,
    params: dtype === "bf16" ? packBf16(params) : params,
    buffers: buffersOf(rank),
  };
}

/** What rank k sent, as the coordinator reads it (bf16 decoded), in float64. */
function sent(f: Frame): Float64Array {
  return Float64Array.from(f.dtype === "bf16" ? unpackBf16(f.params as Uint32Array, P) : f.params as Float32Array);
}

const ack = (rank: number): SyncAck => ({ rank, divergence: 0, postNorm: 1 });

/** What the fake remote ranks send: their frame per round (a test may replace it). */
type Sender = (rank: number, round: number, dtype: WireDtype) => Frame;

async function world(
  opts: { send?: Sender; waitMs?: number; keyOf?: (rank: number, creds: RunCredentials) => string; answer?: (f: Frame) => Frame } = {},
) {
  const creds = await createRunCredentials(4);
  assignRelay(creds, RELAY, [1, 2]);
  const server = await startNatsServer({ authorization: serverAuthorization(creds) });
  const url = server.wsUrl;
  const coord = await openCoordinator({
    connection: await connectLink(url, creds.coordinator.user, creds.coordinator.pass, "coordinator", coordinatorInbox(creds.run)),
    run: creds.run,
    runKey: creds.runKey,
    beaconMs: 100,
  });
  const send: Sender = opts.send ?? ((k, round, dtype) => frameOf(k, round, dtype));
  const adopted: Adoption[] = [];
  // Rank 0: in process, its frame straight to the coordinator.
  const direct: Partial<RankApi> = {
    snapshot: (round, dtype) => Promise.resolve(frameOf(0, round, dtype)),
    adopt: (a) => (adopted.push(a), Promise.resolve(ack(0))),
  };
  const clients = [new RankClient(0, direct as RankApi)];
  const ranks: { close(reason?: string): Promise<void> }[] = [];
  for (const k of [1, 2]) {
    const t = await NatsTransport.open(coord, k);
    const nc = await connectLink(url, creds.ranks[k].user, creds.ranks[k].pass, `rank ${k}`);
    const toRelay = new WireSender((s, d) => nc.publish(s, d), relaySubject(creds.run, k), creds.run, `r${k}`, await importLinkKey(opts.keyOf?.(k, creds) ?? creds.ranks[k].key), nc.info!.max_payload);
    // A fake remote rank as run/join.ts serves one behind a relay: values to the relay, the count here.
    ranks.push(
      await serveRank({
        connection: nc,
        creds: creds.ranks[k],
        beaconLossMs: 10_000,
        handler: {
          init: (s: RankSetup) => ({ rank: s.rank, adapter: "fake", layout: LAYOUT }),
          snapshot: async (round: number, dtype: WireDtype) => {
            const f = send(k, round, dtype);
            await toRelay.send(encodeValue(f));
            const answer = { ...f, via: RELAY, params: f.dtype === "bf16" ? new Uint32Array(0) : new Float32Array(0), buffers: new Float32Array(0) };
            return opts.answer?.(answer) ?? answer;
          },
          adopt: () => ack(k),
        },
      }),
    );
    await t.link.ready;
    await t.request("init", { rank: k, relay: RELAY } as RankSetup);
    clients.push(new RankClient(k, t));
  }
  const relayLink = await coord.link(RELAY, { who: `relay (slot ${RELAY})` });
  const relayNc = await connectLink(url, creds.ranks[RELAY].user, creds.ranks[RELAY].pass, "relay");
  const relayLog: string[] = [];
  const relayDone = serveRelay(relayNc, relayCredentials(creds, RELAY), { log: (l) => relayLog.push(l) });
  await relayLink.ready;
  const relay = new RelayClient(relayLink, clients.slice(1), { waitMs: opts.waitMs ?? 10_000, probeMs: 100 });
  const lost: string[] = [];
  for (const c of clients) c.onDown = (e) => lost.push(e.message);
  let round = 0;
  return {
    clients,
    ranks,
    relay,
    relayLink,
    relayNc,
    relayLog,
    lost,
    adopted,
    reduce: (exact = false, gamma = 1) =>
      reduceCycle({
        round: ++round,
        exact,
        stallMs: 60_000,
        ranks: clients,
        layout: LAYOUT,
        gamma,
        bf16Wire: true,
        version: round,
        globalStep: 0,
        observer: {},
        averaged: () => {},
      }),
    async stop() {
      await relay.close();
      await Promise.all(clients.map((c) => c.transport.close()));
      await coord.close();
      await Promise.all(ranks.map((r) => r.close()));
      await relayDone.catch(() => {});
      await server.stop();
    },
  };
}

/** Σ m_k θ_k / Σ m_k over `frames` in float64; and each element's bound for the relay's bf16 sum. */
function reference(frames: Frame[], gamma: number) {
  const mass = frames.map((f) => paramMass(f.batches, gamma));
  const total = mass.reduce((a, b) => a + b, 0);
  const want = new Float64Array(P), relayed = new Float64Array(P);
  frames.forEach((f, i) => {
    const x = sent(f);
    for (let j = 0; j < P; j++) {
      want[j] += mass[i] * x[j] / total;
      if (f.rank !== 0) relayed[j] += mass[i] * x[j] / total;
    }
  });
  return { want, relayed };
}

for (const [label, exact, gamma] of [["bf16 round, γ = 1", false, 1], ["exact f32 round, γ = 0.5", true, 0.5]] as const) {
  Deno.test(`relay: ${label}: one direct rank + two behind a relay average to Σ m_k θ_k / Σ m_k; the relay's sum is one frame`, async () => {
    const w = await world();
    try {
      const before = { relay: w.relayLink.bytes.received, ranks: w.clients.slice(1).map((c) => (c.transport as NatsTransport).link.bytes.received) };
      const out = await w.reduce(exact, gamma);
      assertEquals(out.steps, STEPS, "every rank's steps count, relayed or not");
      const dtype = exact ? "f32" : "bf16";
      const { want, relayed } = reference([0, 1, 2].map((k) => frameOf(k, 1, dtype)), gamma);
      // NOTE: the relay ships its sum in the round's dtype: on a bf16 round the relayed share
      // is rounded to bf16 once (relative 2^-9, as any rank's bf16 frame); f32 otherwise.
      const rel = exact ? 2 ** -22 : 2 ** -8;
      let worst = 0;
      for (let j = 0; j < P; j++) {
        const err = Math.abs(out.consensus!.params[j] - want[j]);
        const tol = rel * Math.abs(relayed[j]) + 4e-7 * Math.abs(want[j]) + 1e-7;
        worst = Math.max(worst, err / tol);
      }
      assert(worst <= 1, `consensus off the float64 reference by ${worst.toFixed(2)}× the bound`);
      // Buffers: the plain mean over the three movers.
      for (let i = 0; i < B; i++) assert(Math.abs(out.consensus!.buffers[i] - (1 + i)) < 1e-6, `buffer ${i}: ${out.consensus!.buffers[i]}`);
      // Inbound: the relay sent one frame's values; the relayed ranks only their counts.
      const frameBytes = (exact ? 4 * P : 4 * Math.ceil(P / 2)) + 4 * B;
      const fromRelay = w.relayLink.bytes.received - before.relay;
      assert(fromRelay >= frameBytes && fromRelay < frameBytes + 2048, `relay sent ${fromRelay} bytes for a ${frameBytes}-byte frame`);
      w.clients.slice(1).forEach((c, i) => {
        const got = (c.transport as NatsTransport).link.bytes.received - before.ranks[i];
        assert(got < 2048, `rank ${c.rank} sent ${got} bytes to the coordinator (its values go to the relay)`);
      });
      assertEquals(out.bytesUp, (exact ? 4 * P : 4 * Math.ceil(P / 2)) * 2 + 4 * B * 2, "bytesUp: rank 0's frame and the relay's sum");
      assertEquals(out.acks.map((a) => a.rank).sort(), [0, 1, 2], "every rank adopts");
      assertEquals(w.lost, []);
    } finally {
      await w.stop();
    }
  });
}

Deno.test("relay: a NaN frame behind the relay is refused there, naming the rank; the consensus holds the others only", async () => {
  const w = await world({
    send: (k, round) => frameOf(k, round, "bf16", k === 2 ? new Float32Array(P).fill(NaN) : paramsOf(k, round)),
  });
  try {
    const out = await w.reduce();
    await until("rank 2 lost", () => (w.lost.length ? true : undefined));
    assert(/rank 2/.test(w.lost[0]) && /NaN or Inf/.test(w.lost[0]) && /relay \(slot 3\)/.test(w.lost[0]), w.lost[0]);
    assertEquals(out.steps, [STEPS[0], STEPS[1], 0]);
    const { want, relayed } = reference([0, 1].map((k) => frameOf(k, 1, "bf16")), 1);
    for (let j = 0; j < P; j++) {
      const tol = 2 ** -8 * Math.abs(relayed[j]) + 4e-7 * Math.abs(want[j]) + 1e-7;
      assert(Math.abs(out.consensus!.params[j] - want[j]) <= tol, `param ${j}: ${out.consensus!.params[j]} vs ${want[j]}`);
    }
    assert(w.relay.alive, "the relay goes on");
    assert(w.clients[1].alive && !w.clients[2].alive);
  } finally {
    await w.stop();
  }
});

Deno.test("relay: a frame signed with another rank's key is refused at the relay (HMAC), and the rank dropped as missing", async () => {
  // Rank 2 signs its frames with rank 1's key: the relay checks them with rank 2's.
  const w = await world({ waitMs: 500, keyOf: (k, creds) => creds.ranks[k === 2 ? 1 : k].key });
  try {
    const out = await w.reduce();
    await until("rank 2 lost", () => (w.lost.length ? true : undefined));
    assert(/rank 2: its frame of round 1 did not reach relay \(slot 3\)/.test(w.lost[0]), w.lost[0]);
    assert(w.relayLog.some((l) => /rank 2/.test(l) && /HMAC does not match/.test(l)), w.relayLog.join("\n"));
    assertEquals(out.steps, [STEPS[0], STEPS[1], 0]);
    assert(w.clients[1].alive && !w.clients[2].alive && w.relay.alive);
  } finally {
    await w.stop();
  }
});

Deno.test("relay: the relay going away loses its ranks, naming it; the next reduce runs on the direct rank", async () => {
  const w = await world();
  try {
    await w.reduce();
    await w.relayNc.close(); // the relay's process is gone: no bye, its connection leaves the server
    await until("both relayed ranks lost", () => (w.lost.length >= 2 ? true : undefined));
    for (const [i, k] of [[0, 1], [1, 2]]) {
      assert(w.lost[i].includes(`rank ${k}: its relay (slot 3) was lost`), w.lost[i]);
    }
    assert(!w.relay.alive);
    const out = await w.reduce();
    assertEquals(out.steps, [STEPS[0], 0, 0]);
    const want = sent(frameOf(0, 2, "bf16"));
    for (let j = 0; j < P; j++) assert(Math.abs(out.consensus!.params[j] - want[j]) <= 1e-6 * Math.abs(want[j]), `param ${j}`);
  } finally {
    await w.stop();
  }
});

Deno.test("relay: a rank that tells the coordinator other steps than its frame holds is refused at the relay, naming both counts", async () => {
  // Rank 1 claims twice its steps: its mass would weigh its values twice.
  const w = await world({ answer: (f) => (f.rank === 1 ? { ...f, batches: 2 * f.batches } : f) });
  try {
    const out = await w.reduce();
    await until("rank 1 lost", () => (w.lost.length ? true : undefined));
    assert(w.lost[0].includes(`rank 1: frame of round 1 says ${STEPS[1]} steps, it told the coordinator ${2 * STEPS[1]}`), w.lost[0]);
    assertEquals(out.steps, [STEPS[0], 0, STEPS[2]]);
    assert(w.relay.alive && w.clients[2].alive);
  } finally {
    await w.stop();
  }
});

Deno.test("relay: a rank behind the relay that goes away is lost like any rank; the relay sums the other, Σm without it", async () => {
  const w = await world();
  try {
    await w.reduce();
    await w.ranks[1].close("the process exits"); // rank 2 leaves (its bye takes its link down)
    await until("rank 2 lost", () => (w.lost.length ? true : undefined));
    assert(/rank 2/.test(w.lost[0]) && /left the run/.test(w.lost[0]), w.lost[0]);
    const out = await w.reduce();
    assertEquals(out.steps, [STEPS[0], STEPS[1], 0]);
    const { want, relayed } = reference([0, 1].map((k) => frameOf(k, 2, "bf16")), 1);
    for (let j = 0; j < P; j++) {
      const tol = 2 ** -8 * Math.abs(relayed[j]) + 4e-7 * Math.abs(want[j]) + 1e-7;
      assert(Math.abs(out.consensus!.params[j] - want[j]) <= tol, `param ${j}: ${out.consensus!.params[j]} vs ${want[j]}`);
    }
    assert(w.relay.alive && w.clients[1].alive, "the relay and its other rank go on");
  } finally {
    await w.stop();
  }
});

Deno.test("checkSum: a relay's answer must name exactly the ranks asked, in the round's dtype and sizes, finite", () => {
  const ask = {
    round: 4,
    dtype: "f32" as const,
    paramCount: 2,
    bufferCount: 1,
    waitMs: 1,
    members: [{ rank: 1, batches: 1, mass: 1, moved: true }, { rank: 2, batches: 2, mass: 2, moved: true }],
  };
  const good = { relay: 3, round: 4, dtype: "f32", ranks: [1], refused: [{ rank: 2, why: "x" }], params: new Float32Array(2), buffers: new Float32Array(1) };
  checkSum(good, ask, 3);
  for (
    const [bad, fragment] of [
      [{ ...good, ranks: [1, 2] }, "asked [1,2]"],
      [{ ...good, ranks: [1, 5], refused: [] }, "asked"],
      [{ ...good, relay: 4 }, "says relay 4"],
      [{ ...good, round: 3 }, "from the past"],
      [{ ...good, params: new Float32Array([0, NaN]) }, "NaN or Inf"],
      [{ ...good, params: new Float32Array(3) }, "expected 2"],
      [null, "not a sum"],
    ] as const
  ) {
    let err: Error | undefined;
    try {
      checkSum(bad, ask, 3);
    } catch (e) {
      err = e as Error;
    }
    assert(err && err.message.includes("relay (slot 3)") && err.message.includes(fragment), `${JSON.stringify(fragment)}: ${err?.message}`);
  }
});

Deno.test("relay subjects: only the relay of rank k may read rank k's frames (the server refuses another rank's subscription)", async () => {
  const creds = await createRunCredentials(4);
  assignRelay(creds, RELAY, [1, 2]);
  const server = await startNatsServer({ authorization: serverAuthorization(creds) });
  const conn = (k: number) => connectLink(server.wsUrl, creds.ranks[k].user, creds.ranks[k].pass, `rank ${k}`);
  const [r1, r2, relay] = [await conn(1), await conn(2), await conn(RELAY)];
  try {
    const errors: string[] = [];
    (async () => {
      for await (const s of r2.status()) if (s.type === "error") errors.push(String(s.error?.message));
    })();
    const spied: number[] = [], relayed: number[] = [];
    // NOTE: nats.js calls a refused subscription's callback once with the error and no message.
    r2.subscribe(relaySubject(creds.run, 1), { callback: (err, msg) => void (!err && msg && spied.push(msg.data.length)) });
    relay.subscribe(relaySubject(creds.run, 1), { callback: () => void relayed.push(1) });
    await Promise.all([r2.flush(), relay.flush()]);
    r1.publish(relaySubject(creds.run, 1), new Uint8Array([1]));
    await r1.flush();
    await until("the relay's delivery and rank 2's refusal", () => (relayed.length && errors.length ? true : undefined));
    assert(/Permissions Violation/i.test(errors[0]) && errors[0].includes(relaySubject(creds.run, 1)), errors[0]);
    assertEquals(spied, [], "rank 2 read nothing");
  } finally {
    await Promise.all([r1, r2, relay].map((c) => c.close().catch(() => {})));
    await server.stop();
  }
});

Deno.test("assignRelay: a member outside the run, the relay itself, or a rank with a relay already is refused naming it", async () => {
  const creds = await createRunCredentials(5);
  const refused = (slot: number, members: number[], fragment: string) => {
    let err: Error | undefined;
    try {
      assignRelay(creds, slot, members);
    } catch (e) {
      err = e as Error;
    }
    assert(err instanceof RangeError && err.message.includes(fragment), `${JSON.stringify([slot, members])}: ${err?.message}`);
  };
  refused(4, [5], "member rank 5 is not another slot");
  refused(4, [4], "member rank 4 is not another slot");
  refused(7, [1], "relay slot must be one of the run's 5 slots, got 7");
  refused(4, [], "needs at least one member");
  assignRelay(creds, 4, [1, 2]);
  refused(3, [2], "rank 2 already has a relay (slot 4)");
  assertEquals(relayCredentials(creds, 4).members.map((m) => [m.rank, m.key]), [[1, creds.ranks[1].key], [2, creds.ranks[2].key]]);
});
