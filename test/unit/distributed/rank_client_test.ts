/**
 * RankClient.call (bench/README.md "Memory"): a call's result must not outlive the call.
 * Racing every call against one promise that settles only when the rank fails kept each
 * race, and so each result (a reduce's frames: ~0.8 MiB of ArrayBuffers per round on the
 * MNIST MLP), reachable for the whole run; a 2-rank trainer grew ~13 KiB per rank-step.
 * A lost rank must still reject the calls in flight and every later call. The coordinator's
 * isolate collects every MESSAGES_PER_COLLECT messages from worker ranks: V8 alone seldom
 * runs a major collection there, and a received message's native memory waits for one.
 */
import { MESSAGES_PER_COLLECT, messageCollections, RankClient } from "../../../src/distributed/coordinator/transport/rank_client.ts";
import { RankLostError } from "../../../src/distributed/protocol/errors.ts";
import type { RankApi } from "../../../src/distributed/protocol/messages.ts";
import { collectGarbage, loadCollector } from "../../../src/gpu/collect.ts";
import { assert, assertEquals, assertRejects } from "../../util/assert.ts";

/** A rank whose only method answers with a fresh 64 KiB buffer, like a frame. */
function frameRank(): RankApi {
  return { snapshot: () => Promise.resolve({ params: new Float32Array(16384) }) } as unknown as RankApi;
}

Deno.test("RankClient.call keeps no result alive once the call returned", async () => {
  assert(await loadCollector(), "no gc in this runtime (node:v8 / node:vm, or --v8-flags=--expose-gc)");
  const client = new RankClient(0, frameRank());
  // In a helper, so that no variable of this frame holds the last result.
  const callOnce = async (i: number) => new WeakRef(await client.call("snapshot", (api) => api.snapshot(i, "f32")));
  const refs: WeakRef<object>[] = [];
  for (let i = 0; i < 16; i++) refs.push(await callOnce(i));
  // WeakRef targets stay alive until the current job ends: collect from a later task.
  await new Promise((r) => setTimeout(r, 0));
  collectGarbage();
  const alive = refs.filter((r) => r.deref() !== undefined).length;
  assertEquals(alive, 0, `results of returned calls still reachable after a major collection (of ${refs.length})`);
});

Deno.test("RankClient.fail rejects the call in flight and every later call with the cause", async () => {
  let answer!: () => void;
  const api = { snapshot: () => new Promise<void>((r) => (answer = r)) } as unknown as RankApi;
  const client = new RankClient(3, api);
  let down: RankLostError | undefined;
  client.onDown = (e) => (down = e);
  const pending = client.call("snapshot", (a) => a.snapshot(1, "f32"));
  const cause = new RankLostError(3, "rank 3 was silent for 9.0 s");
  client.fail(cause, false);
  const got = await pending.then(() => "resolved", (e) => e);
  assert(got === cause, `the call in flight: got ${got}, want the cause`);
  answer();
  assert(down === cause, `onDown saw ${down}, want the cause`);
  assertEquals(client.alive, false);
  await assertRejects(() => client.call("adopt", (a) => a.snapshot(2, "f32")), RankLostError, "rank 3 was silent");
});

Deno.test("RankClient collects every MESSAGES_PER_COLLECT messages from worker ranks, none for in-process ranks", async () => {
  assert(await loadCollector(), "no gc in this runtime (node:v8 / node:vm, or --v8-flags=--expose-gc)");
  // Only the worker's event hooks are used by RankClient; no real worker, no messages.
  const worker = { addEventListener() {} } as unknown as Worker;
  const inWorker = new RankClient(0, {} as RankApi, worker).sink();
  const inProcess = new RankClient(1, {} as RankApi).sink();
  const before = messageCollections();
  // 2N from any starting count: exactly two multiples of N are crossed.
  for (let i = 0; i < 2 * MESSAGES_PER_COLLECT; i++) {
    if (i % 2) inWorker.heartbeat(0);
    else inWorker.batch({ rank: 0, epoch: 0, ms: 1, computeMs: 1, loss: 0, lr: 1e-3, samples: 64 } as never);
    inProcess.heartbeat(1);
  }
  assertEquals(messageCollections() - before, 2, `collections over ${2 * MESSAGES_PER_COLLECT} worker messages`);
});

Deno.test("RankClient.spare: a standby slot takes calls but is no member; its failure ends the slot without a death; admit makes it one", async () => {
  const api = { load: () => Promise.resolve(), snapshot: () => new Promise(() => {}) } as unknown as RankApi;
  const a = RankClient.spare(4, api);
  assertEquals([a.alive, a.standby], [false, true]);
  await a.call("load", (x) => x.load({} as never)); // the join's init/load go through
  assert(a.admit(), "admitted");
  assertEquals([a.alive, a.standby], [true, false]);
  assert(!a.admit(), "a member cannot be admitted again");

  const b = RankClient.spare(5, api);
  let died: RankLostError | undefined, ended: RankLostError | undefined;
  b.onDown = (e) => (died = e);
  b.onStandbyDown = (e) => (ended = e);
  const pending = b.call("snapshot", (x) => x.snapshot(1, "f32"));
  b.fail(new RankLostError(5, "rank 5: its link closed"), false);
  await assertRejects(() => pending, RankLostError, "its link closed");
  assertEquals([died, ended?.message], [undefined, "rank 5: its link closed"], "onStandbyDown, not onDown");
  assert(!b.admit(), "a slot that went down is never admitted");
  await assertRejects(() => b.call("load", (x) => x.load({} as never)), RankLostError, "its link closed");
});

Deno.test("RankClient: a reply after a compile notice ends the compile allowance; silence is judged by the heartbeat again", async () => {
  const api = { snapshot: () => Promise.resolve({}) } as unknown as RankApi;
  const client = new RankClient(1, api);
  client.sink().compiling(1);
  assert(client.compiling, "the notice sets it");
  const t = client.lastSeen;
  assertEquals(client.overdueMs(t + 10_000, 2_000, 300_000), 0, "compiling: 10 s of silence is allowed");
  await client.call("snapshot", (a) => a.snapshot(1, "f32"));
  assert(!client.compiling, "the reply clears it");
  const seen = client.lastSeen;
  assertEquals(client.overdueMs(seen + 10_000, 2_000, 300_000), 10_000, "silent 10 s after its reply: overdue");
});
