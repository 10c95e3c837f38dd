/**
 * The NATS transport (coordinator/transport/transport_nats.ts) against a real nats-server on
 * loopback, with a fake rank served by `serveRank`: calls and events cross, a frame that
 * fails `checkFrame` rejects as a lost rank naming it (never returned for averaging), a
 * rank's own error keeps its name, heartbeats during a first compiling call count as
 * "compiling". And the join check of protocol/remote_hello.ts, item by item.
 */
import { NatsTransport } from "../../../src/distributed/coordinator/transport/transport_nats.ts";
import { openCoordinator, serveRank } from "../../../src/distributed/nats/mod.ts";
import { RankLostError } from "../../../src/distributed/protocol/errors.ts";
import type { Frame, LayoutTable, RankSetup } from "../../../src/distributed/protocol/messages.ts";
import { checkRemoteHello, layoutDigest, programId } from "../../../src/distributed/protocol/remote_hello.ts";
import type { RankEvent } from "../../../src/distributed/protocol/transport.ts";
import { assert, assertEquals, assertRejects } from "../../util/assert.ts";
import { startRunServer, until } from "../../util/nats_server.ts";

const RANK = 1, PARAMS = 7, BUFFERS = 2;
const LAYOUT: LayoutTable = {
  params: [{ name: "w", shape: [7], offset: 0, numel: 7 }],
  buffers: [{ name: "s", shape: [2], offset: 0, numel: 2 }],
  paramCount: PARAMS,
  bufferCount: BUFFERS,
};

/** A fake rank: `frame(round)` decides what its snapshot answers. */
function fakeRank(frame: (round: number) => Frame) {
  const emitted: { emit?: (e: unknown) => void } = {};
  let release: () => void = () => {};
  const handler = {
    init: (setup: RankSetup) => ({ rank: setup.rank, adapter: "fake", layout: LAYOUT }),
    snapshot: (round: number) => frame(round),
    train: () => new Promise<object>((r) => (release = () => r({ done: true }))),
    evaluate: () => {
      throw new TypeError("evalFn failed: no model");
    },
    emit: (e: unknown) => emitted.emit?.(e),
  };
  return { handler, emitted, release: () => release() };
}

function f32Frame(round: number, params = new Float32Array(PARAMS).fill(0.5)): Frame {
  return { rank: RANK, round, batches: 3, dtype: "f32", params, buffers: new Float32Array(BUFFERS) };
}

async function setup(frame: (round: number) => Frame) {
  const rs = await startRunServer(2);
  const coord = await openCoordinator({ connection: await rs.connectCoordinator(), run: rs.creds.run, runKey: rs.creds.runKey, beaconMs: 100 });
  const transport = await NatsTransport.open(coord, RANK);
  const events: RankEvent[] = [];
  const downs: string[] = [];
  transport.listen({ event: (e) => events.push(e), down: (why) => downs.push(why) });
  const rank = fakeRank(frame);
  const server = await serveRank({ connection: await rs.connectRank(RANK), creds: rs.creds.ranks[RANK], handler: rank.handler, beaconLossMs: 5000 });
  rank.emitted.emit = (e) => server.emit(e);
  await transport.link.ready;
  await transport.request("init", { rank: RANK } as RankSetup);
  return {
    transport,
    events,
    downs,
    rank,
    async stop() {
      await transport.close();
      await coord.close();
      await server.close();
      await rs.stop();
    },
  };
}

Deno.test("NatsTransport: a good frame crosses; events arrive; a first train's heartbeats count as compiling until its first batch", async () => {
  const t = await setup((round) => f32Frame(round));
  try {
    const f = await t.transport.request("snapshot", 4, "f32");
    assertEquals([f.round, f.params.length, f.params[0]], [4, PARAMS, 0.5]);
    assertEquals(t.events.map((e) => e.kind), ["compiling", "compiling"], "init and the first snapshot compile");
    t.events.length = 0;
    const train = t.transport.request("train", { epoch: 0 } as never);
    t.rank.emitted.emit!({ kind: "heartbeat" });
    await until("the heartbeat", () => t.events.length >= 2 ? true : undefined);
    // The transport said "compiling" when it sent train, and the heartbeat counts as one.
    assertEquals(t.events.map((e) => e.kind), ["compiling", "compiling"]);
    t.rank.emitted.emit!({ kind: "batch", batch: { rank: RANK } });
    t.rank.emitted.emit!({ kind: "heartbeat" });
    t.rank.emitted.emit!({ kind: "no such kind" });
    await until("batch and heartbeat", () => t.events.length >= 4 ? true : undefined);
    assertEquals(t.events.map((e) => e.kind), ["compiling", "compiling", "batch", "heartbeat"]);
    t.rank.release();
    await train;
    const err = await assertRejects(() => t.transport.request("evaluate", 0), Error, "evalFn failed");
    assertEquals(err.name, "TypeError", "the rank's error keeps its name");
    assertEquals(t.downs, [], "a rank's own error does not take the link down");
  } finally {
    await t.stop();
  }
});

for (
  const [what, frame, fragment, asked] of [
    ["a NaN parameter", (r: number) => f32Frame(r, new Float32Array(PARAMS).fill(NaN)), "NaN or Inf"],
    ["a round from the past", (r: number) => f32Frame(r - 1), "from the past"],
    ["the wrong size", (r: number) => f32Frame(r, new Float32Array(PARAMS + 1)), "expected 7"],
    ["another rank's number", (r: number) => ({ ...f32Frame(r), rank: 0 }), "says rank 0"],
    ["another dtype than the round's", (r: number) => f32Frame(r), 'frame dtype "f32", the run\'s wire is "bf16"', "bf16"],
  ] as const
) {
  Deno.test(`NatsTransport: a frame with ${what} is refused as a lost rank naming it, never returned`, async () => {
    const t = await setup(frame);
    try {
      const err = await assertRejects(() => t.transport.request("snapshot", 5, asked ?? "f32"), RankLostError, "rank 1", fragment, "dropped");
      assertEquals((err as RankLostError).rank, RANK);
      await until("the link down", () => t.downs.length ? true : undefined);
    } finally {
      await t.stop();
    }
  });
}

Deno.test("checkRemoteHello: program, dataset size, layout and wire dtype each refused naming the rank and the item", () => {
  const layout = layoutDigest(LAYOUT);
  const want = { program: programId({ url: "file:///a/b/train.ts?x=1", line: 50, col: 30 }), layout, datasetLen: 100, wire: "bf16" as const };
  assertEquals(want.program, "train.ts:50:30");
  const good = { host: "box", adapter: "gpu", program: "train.ts:50:30", layout, datasetLen: 100, wire: ["bf16", "f32"] as ("bf16" | "f32")[] };
  assertEquals(checkRemoteHello(2, good, want), undefined);
  const other = layoutDigest({ ...LAYOUT, params: [{ name: "w", shape: [1, 7], offset: 0, numel: 7 }] });
  assert(other.hash !== layout.hash && other.paramCount === layout.paramCount, "a reshaped tensor changes the hash only");
  const cases: [object, string][] = [
    [{ program: "train.ts:51:30" }, "program"],
    [{ datasetLen: 99 }, "datasetLen 99"],
    [{ layout: other }, "model layout"],
    [{ wire: ["f32"] }, "wire dtypes"],
  ];
  for (const [change, item] of cases) {
    const why = checkRemoteHello(2, { ...good, ...change }, want) ?? "";
    assert(why.startsWith("rank 2 (host box): refused at join") && why.includes(item), `${item}: ${why}`);
  }
  assert(checkRemoteHello(3, null, want)!.includes("rank 3"), "a null hello names the rank");
});
