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
