/**
 * The transport seam (protocol/transport.ts): the coordinator's client reaches a rank only
 * by calls by name with plain arguments, hears it through events, and a transport's own
 * failure (`down`) fails every call in flight with the rank named.
 */
import { RankClient } from "../../../src/distributed/coordinator/transport/rank_client.ts";
import { LocalTransport } from "../../../src/distributed/coordinator/transport/transport_local.ts";
import { RankLostError } from "../../../src/distributed/protocol/errors.ts";
import type { BatchEvent, CoordinatorSink, RankApi, RankSetup } from "../../../src/distributed/protocol/messages.ts";
import { RANK_CALLS } from "../../../src/distributed/protocol/rank_calls.ts";
import {
  type RankCallName,
  type RankListener,
  type RankTransport,
  viewOf,
} from "../../../src/distributed/protocol/transport.ts";
import { assert, assertEquals, assertRejects } from "../../util/assert.ts";

/** A transport that records what crosses it and answers nothing until told. */
class RecordingTransport implements RankTransport {
  readonly messages = true;
  readonly sent: [RankCallName, unknown[]][] = [];
  listener?: RankListener;
  listen(l: RankListener): void {
    this.listener = l;
  }
  request(name: RankCallName, ...args: unknown[]): Promise<never> {
    this.sent.push([name, args]);
    return new Promise<never>(() => {});
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

const BATCH: BatchEvent = { rank: 2, epoch: 0, ms: 5, computeMs: 4, loss: 0.5, lr: 0.1, samples: 32 };

Deno.test("a RankView sends each call by name with its plain arguments; init carries the setup only", () => {
  const t = new RecordingTransport();
  const view = viewOf(t);
  const setup = { rank: 2, world: 3 } as RankSetup;
  void view.init(setup);
  void view.snapshot(7, "f32");
  void view.stop();
  assertEquals(t.sent.map(([n, a]) => [n, a.length]), [["init", 1], ["snapshot", 2], ["stop", 0]]);
  assert(t.sent[0][1][0] === setup && t.sent[1][1][0] === 7 && t.sent[1][1][1] === "f32", JSON.stringify(t.sent));
  assert(t.sent.every(([, a]) => a.every((x) => typeof x !== "function")), "a function crossed the seam");
  assertEquals(new Set(RANK_CALLS).size, RANK_CALLS.length);
  assert(RANK_CALLS.includes("adopt") && RANK_CALLS.includes("train"), `calls: ${RANK_CALLS}`);
});

Deno.test("a transport's down(reason) fails the client: the call in flight rejects naming the rank, onDown is not fatal", async () => {
  const t = new RecordingTransport();
  const client = new RankClient(2, t);
  let seen: [RankLostError, boolean] | undefined;
  client.onDown = (e, fatal) => (seen = [e, fatal]);
  const pending = client.call("snapshot", (api) => api.snapshot(1, "f32"));
  t.listener!.down("rank 2: its worker died: boom");
  await assertRejects(() => pending, RankLostError, "rank 2: its worker died: boom");
  assert(seen !== undefined && seen[0].rank === 2 && seen[1] === false, `onDown saw ${seen}`);
  assertEquals(client.alive, false);
});

Deno.test("events from the transport are liveness: a batch reaches onBatch, compiling holds until the next event", () => {
  const t = new RecordingTransport();
  const client = new RankClient(2, t);
  const batches: BatchEvent[] = [];
  client.onBatch = (e) => batches.push(e);
  const before = client.lastSeen;
  t.listener!.event({ kind: "compiling" });
  assertEquals(client.compiling, true, "compiling after the compiling event");
  t.listener!.event({ kind: "batch", batch: BATCH });
  assertEquals([client.compiling, batches.length, batches[0]?.loss], [false, 1, 0.5]);
  assert(client.lastSeen >= before, "lastSeen moved");
});

Deno.test("LocalTransport hands an in-process rank a sink whose calls arrive as the client's events", async () => {
  let sink!: CoordinatorSink;
  const rank = {
    init: (_s: RankSetup, s: CoordinatorSink) => {
      sink = s;
      return Promise.resolve({ rank: 0, adapter: "fake", layout: { params: [], buffers: [], paramCount: 0, bufferCount: 0 } });
    },
  } as unknown as RankApi;
  const client = new RankClient(0, new LocalTransport(rank));
  const batches: BatchEvent[] = [];
  client.onBatch = (e) => batches.push(e);
  const hello = await client.call("init", (api) => api.init({ rank: 0 } as RankSetup));
  assertEquals(hello.adapter, "fake");
  sink.compiling(0);
  assertEquals(client.compiling, true);
  sink.batch({ ...BATCH, rank: 0 });
  assertEquals([client.compiling, batches.length], [false, 1]);
});
