/** WireSender/WireReceiver without a server: chunking, reassembly, and every refusal naming the rank. */
import { assert, assertEquals } from "../../../util/assert.ts";
import { mulberry32 } from "../../../util/random.ts";
import { deriveRankKey, toBase64 } from "../../../../src/distributed/nats/credentials.ts";
import {
  CHUNK_OVERHEAD,
  importLinkKey,
  type Received,
  WireReceiver,
  WireSender,
} from "../../../../src/distributed/nats/wire.ts";

const RUN = "testrun1", SUBJECT = "flodl.testrun1.r3.out";

async function setup(maxPayload: number) {
  const runKey = toBase64(crypto.getRandomValues(new Uint8Array(32)));
  const key = await importLinkKey(await deriveRankKey(runKey, 3));
  const sent: Uint8Array<ArrayBuffer>[] = [];
  const sender = new WireSender(
    (s, d) => {
      assertEquals(s, SUBJECT, "subject published on");
      sent.push(d);
    },
    SUBJECT,
    RUN,
    "r3",
    key,
    maxPayload,
  );
  const receiver = new WireReceiver(SUBJECT, RUN, "r3", key, 3);
  return { sent, sender, receiver, runKey };
}

function randomBytes(n: number, seed: number): Uint8Array<ArrayBuffer> {
  const rng = mulberry32(seed);
  return new Uint8Array(n).map(() => Math.floor(rng() * 256));
}

async function feed(receiver: WireReceiver, chunks: Uint8Array<ArrayBuffer>[]): Promise<Received[]> {
  const out: Received[] = [];
  for (const c of chunks) out.push(await receiver.accept(c));
  return out;
}

Deno.test("WireSender/WireReceiver: a message splits into chunks no larger than max_payload and reassembles exactly", async () => {
  const maxPayload = 4096;
  const { sent, sender, receiver } = await setup(maxPayload);
  const a = randomBytes(3 * (maxPayload - CHUNK_OVERHEAD) + 17, 1), b = randomBytes(0, 2);
  await Promise.all([sender.send(a), sender.send(b)]);
  assertEquals(sent.length, 5, "chunks: 4 for the first message, 1 for the empty one");
  for (const c of sent) {
    assert(c.byteLength <= maxPayload, `chunk of ${c.byteLength} bytes > max_payload ${maxPayload}`);
  }
  const got = await feed(receiver, sent);
  assertEquals(got.map((r) => r.kind), ["partial", "partial", "partial", "message", "message"], "receiver's verdicts");
  const [ma, mb] = got.filter((r) => r.kind === "message").map((r) => (r as { bytes: Uint8Array }).bytes);
  assert(ma.length === a.length && ma.every((x, i) => x === a[i]), "first message's bytes");
  assertEquals(mb.length, 0, "empty message's length");
});

Deno.test("WireReceiver: replay, tamper, wrong run, wrong sender, another rank's key: refused naming rank 3", async () => {
  const { sent, sender, receiver, runKey } = await setup(2048);
  await sender.send(randomBytes(3000, 3)); // two chunks
  const first = await receiver.accept(sent[0]);
  assertEquals(first.kind, "partial", "first chunk");
  const tampered = sent[1].slice();
  tampered[200] ^= 0x10;
  const forged: Uint8Array<ArrayBuffer>[] = [];
  const otherRun: Uint8Array<ArrayBuffer>[] = [], otherSender: Uint8Array<ArrayBuffer>[] = [];
  await new WireSender(
    (_s, d) => void forged.push(d),
    SUBJECT,
    RUN,
    "r3",
    await importLinkKey(await deriveRankKey(runKey, 4)),
    2048,
  ).send(
    new Uint8Array(5),
  );
  const key3 = await importLinkKey(await deriveRankKey(runKey, 3));
  await new WireSender((_s, d) => void otherRun.push(d), SUBJECT, "otherrun", "r3", key3, 2048).send(new Uint8Array(5));
  await new WireSender((_s, d) => void otherSender.push(d), SUBJECT, RUN, "r2", key3, 2048).send(new Uint8Array(5));
  const cases: [Uint8Array<ArrayBuffer>, string][] = [
    [sent[0], "replayed: seq 1, last accepted 1"],
    [tampered, "HMAC does not match (forged or tampered; seq 2)"],
    [forged[0], "HMAC does not match"],
    [otherRun[0], `run id "otherrun", expected "${RUN}"`],
    [otherSender[0], `sender "r2", expected "r3"`],
    [new Uint8Array(10), "10 bytes, too short for a chunk"],
  ];
  for (const [chunk, why] of cases) {
    const r = await receiver.accept(chunk);
    assert(r.kind === "refused", `want refused (${why}), got ${r.kind}`);
    assert(
      r.error.rank === 3 && r.error.message.startsWith(`rank 3: refused a message from rank 3 on ${SUBJECT}: `),
      r.error.message,
    );
    assert(r.error.message.includes(why), `want "${why}" in: ${r.error.message}`);
  }
  // The genuine second chunk still completes the message: refusals leave no trace.
  assertEquals((await receiver.accept(sent[1])).kind, "message", "genuine chunk after the refusals");
});

Deno.test("WireReceiver: a gap in the sequence takes the link down naming the rank (the message could never complete)", async () => {
  const { sent, sender, receiver } = await setup(2048);
  await sender.send(randomBytes(4000, 4)); // three chunks
  await receiver.accept(sent[0]);
  const r = await receiver.accept(sent[2]);
  assert(r.kind === "lost" && r.error.fault === "down", `got ${r.kind}`);
  assertEquals(
    r.error.message,
    `rank 3: chunks lost on ${SUBJECT}: seq 3 after 1; a message cannot complete`,
    "message",
  );
});

Deno.test("WireSender: a max_payload too small to chunk is refused with its value", async () => {
  const key = await importLinkKey(toBase64(new Uint8Array(32)));
  let got = "";
  try {
    new WireSender(() => {}, SUBJECT, RUN, "r3", key, 1000);
  } catch (e) {
    got = `${(e as Error).name}: ${(e as Error).message}`;
  }
  assertEquals(
    got,
    `RangeError: NATS link: server max_payload must exceed ${2 * CHUNK_OVERHEAD} bytes, got 1000`,
    "error",
  );
});

Deno.test("WireReceiver: a chunk moved to another subject is refused (the subject is signed)", async () => {
  const { sent, sender, runKey } = await setup(2048);
  await sender.send(new Uint8Array(9));
  const key = await importLinkKey(await deriveRankKey(runKey, 3));
  const r = await new WireReceiver("flodl.testrun1.r3.other", RUN, "r3", key, 3).accept(sent[0]);
  assert(r.kind === "refused" && r.error.message.endsWith(`signed for subject "${SUBJECT}"`), `got ${r.kind}`);
});

/**
 * Two resumable directions over a channel that loses what `drop` says: each side's receiver
 * acknowledges through its own sender's chunks, a gap asks for a resend.
 */
async function resumablePair(maxPayload: number) {
  const runKey = toBase64(crypto.getRandomValues(new Uint8Array(32)));
  const key = await importLinkKey(await deriveRankKey(runKey, 3));
  const up = "flodl.testrun1.r3.out", down = "flodl.testrun1.to.r3";
  const side = (from: string, peer: string, subject: string, inbound: string) => {
    const receiver = new WireReceiver(inbound, RUN, peer, key, 3, false, true);
    const wire: Uint8Array<ArrayBuffer>[] = [];
    const sender = new WireSender((_s, d) => void wire.push(d), subject, RUN, from, key, maxPayload, { received: () => receiver.last });
    return { receiver, sender, wire };
  };
  return { rank: side("r3", "c", up, down), coord: side("c", "r3", down, up) };
}

Deno.test("resumable wire: chunks lost mid-message are asked for, sent again, and the message completes once", async () => {
  const { rank, coord } = await resumablePair(2048);
  const a = randomBytes(6000, 5); // four chunks
  await rank.sender.send(a);
  const [c1, , , c4] = rank.wire.splice(0);
  // c2 and c3 are lost (a connection that dropped): c4 shows the gap.
  assertEquals((await coord.receiver.accept(c1)).kind, "partial");
  const gap = await coord.receiver.accept(c4);
  assert(gap.kind === "gap" && gap.have === 1, `got ${JSON.stringify(gap)}`);
  await coord.sender.askResume(gap.have);
  const ask = await rank.receiver.accept(coord.wire.splice(0)[0]);
  assert(ask.kind === "resume" && ask.have === 1, `got ${JSON.stringify(ask)}`);
  await rank.sender.resend(ask.have);
  const again = rank.wire.splice(0);
  assertEquals(again.length, 3, "chunks 2, 3 and 4 sent again");
  const got = await feed(coord.receiver, [c1, ...again, c4]);
  assertEquals(got.map((r) => r.kind), ["duplicate", "partial", "partial", "message", "duplicate"], "verdicts");
  const m = got[3] as { bytes: Uint8Array };
  assert(m.bytes.length === a.length && m.bytes.every((x, i) => x === a[i]), "the message, bit-exact");
});

Deno.test("resumable wire: each chunk acknowledges the other direction, and acknowledged chunks are no longer kept", async () => {
  const { rank, coord } = await resumablePair(2048);
  await rank.sender.send(randomBytes(3000, 6)); // two chunks
  assert(rank.sender.keptBytes > 3000, `kept ${rank.sender.keptBytes} bytes until acknowledged`);
  for (const c of rank.wire.splice(0)) await coord.receiver.accept(c);
  await coord.sender.send(new Uint8Array(8)); // its chunk says: up to seq 2
  await rank.receiver.accept(coord.wire[0]);
  assertEquals(rank.receiver.ack, 2, "the coordinator acknowledged both chunks");
  rank.sender.acknowledged(rank.receiver.ack);
  assertEquals(rank.sender.keptBytes, 0, "nothing kept once acknowledged");
  await rank.sender.resend(0);
  assertEquals(rank.wire.length, 0, "nothing to send again");
});

Deno.test("resumable wire: a sender whose peer has been away too long refuses to keep more, naming the subject", async () => {
  const runKey = toBase64(crypto.getRandomValues(new Uint8Array(32)));
  const key = await importLinkKey(await deriveRankKey(runKey, 3));
  const sender = new WireSender(() => {}, SUBJECT, RUN, "r3", key, 2048, { received: () => 0, maxKeptBytes: 10_000 });
  await sender.send(new Uint8Array(6000));
  let got = "";
  await sender.send(new Uint8Array(6000)).catch((e) => (got = (e as Error).message));
  assert(got.startsWith(`NATS link: ${SUBJECT}: `) && got.endsWith("more than the 10000 kept to resume"), got);
});
