/**
 * `.reconnectGraceSecs()` (issue 27): the knob's validation lines, and the one derivation of
 * every reconnect window from it (coordinator/control/grace.ts): the coordinator's link grace,
 * a remote rank's hold (its silence allowed, compiling or not), and the rank's beaconLossMs
 * its join token carries. A remote rank's client judges its silence by the hold, a worker's
 * by the heartbeat timeout.
 */
import { defaultRunConfig } from "../../../src/distributed/coordinator/control/config.ts";
import { DEFAULT_RECONNECT_GRACE_SECS, graceWindows, LINK_GRACE_SLACK_MS } from "../../../src/distributed/coordinator/control/grace.ts";
import { STALL_CEILING_FLOOR_SECS } from "../../../src/distributed/coordinator/control/max_failure.ts";
import { type RankHold, RankClient } from "../../../src/distributed/coordinator/transport/rank_client.ts";
import { createRunCredentials, decodeJoinToken } from "../../../src/distributed/nats/mod.ts";
import type { RankTransport } from "../../../src/distributed/protocol/transport.ts";
import { joinTokenFor } from "../../../src/distributed/run/join.ts";
import { validateConfig } from "../../../src/distributed/run/validate_config.ts";
import { ArrayDataSet, Trainer } from "../../../src/index.ts";
import { assert, assertEquals, assertRejects, assertThrows } from "../../util/assert.ts";

const valid = (patch: Record<string, unknown>) => ({ ...defaultRunConfig(), batchSize: 8, numEpochs: 1, ...patch });

Deno.test("reconnectGraceSecs: default 60 s; one line naming the knob and the expected value for a bad one", () => {
  assertEquals(defaultRunConfig().reconnectGraceSecs, DEFAULT_RECONNECT_GRACE_SECS);
  assertEquals(DEFAULT_RECONNECT_GRACE_SECS, 60);
  validateConfig(valid({ reconnectGraceSecs: 0.5 }));
  for (const [v, shown] of [[0, "0"], [-3, "-3"], [NaN, "NaN"], [Infinity, "Infinity"]] as const) {
    const e = assertThrows(() => validateConfig(valid({ reconnectGraceSecs: v })), RangeError);
    assertEquals(e.message, `Trainer.run: reconnectGraceSecs must be finite and > 0, got ${shown}`);
  }
  const e = assertThrows(() => validateConfig(valid({ reconnectGraceSecs: "60" })), TypeError);
  assertEquals(e.message, `Trainer.run: reconnectGraceSecs must be a number, got string "60"`);
});

Deno.test("builder: .reconnectGraceSecs(s) sets the knob; run() rejects a bad one before any rank starts", async () => {
  const data = new ArrayDataSet([{ data: new Float32Array(40), shape: [20, 2] }, { data: new Int32Array(20), shape: [20] }]);
  const never = () => {
    throw new Error("must not be called: validation comes first");
  };
  const b = () => Trainer.builder(never, never, never).dataset(data).batchSize(4).numEpochs(1).cluster({ ranks: [{}, {}] });
  assertEquals(b().reconnectGraceSecs(7).state.config.reconnectGraceSecs, 7);
  await assertRejects(() => b().reconnectGraceSecs(-1).run(), RangeError, "reconnectGraceSecs must be finite and > 0, got -1");
});

Deno.test("graceWindows: every window from the grace; the link outlasts the holds by the slack; the compile window is the stall ceiling, at least the grace", () => {
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let i = 0; i < 200; i++) {
    const grace = Math.round(rnd() * 2000) / 4 + 0.25, hb = Math.round(rnd() * 1000) / 8 + 0.125;
    const w = graceWindows({ reconnectGraceSecs: grace, heartbeatTimeoutSecs: hb });
    // Independently: the ceiling is max(10 × heartbeat, 300 s) (README "stall ceiling").
    const ceiling = Math.max(10 * hb, STALL_CEILING_FLOOR_SECS) * 1000;
    assertEquals(w, { linkGraceMs: grace * 1000 + LINK_GRACE_SLACK_MS, remoteHoldMs: grace * 1000, remoteCompileMs: Math.max(ceiling, grace * 1000), beaconLossMs: grace * 1000 }, `grace ${grace}, hb ${hb}`);
    assert(w.beaconLossMs === w.remoteHoldMs, "the rank holds its state exactly as long as the coordinator holds its slot");
    assert(w.linkGraceMs > w.remoteHoldMs, "the ranks' holds end before the coordinator's connection gives up");
  }
  assertEquals(graceWindows({ reconnectGraceSecs: 900, heartbeatTimeoutSecs: 30 }).remoteCompileMs, 900_000, "a grace above the ceiling");
});

/** A transport that never answers, with (or without) a hold. */
function transport(hold?: RankHold): RankTransport & { hold?: RankHold } {
  return { messages: false, hold, listen: () => {}, request: () => new Promise(() => {}), close: () => Promise.resolve() };
}

Deno.test("RankClient: a remote rank's silence is judged by its hold, a worker's by the heartbeat timeout", () => {
  const hold = { silentMs: 45_000, compileMs: 600_000, knob: "reconnectGraceSecs 45" };
  const remote = new RankClient(1, transport(hold)), worker = new RankClient(0, transport());
  assertEquals(remote.hold, hold);
  assertEquals(worker.hold, undefined);
  const t = remote.lastSeen;
  assertEquals(remote.overdueMs(t + 40_000, 30_000, 300_000), 0, "held: silent 40 s of 45");
  assertEquals(remote.overdueMs(t + 46_000, 30_000, 300_000), 46_000, "past the hold");
  assertEquals(worker.overdueMs(worker.lastSeen + 31_000, 30_000, 300_000), 31_000, "a worker: the heartbeat timeout");
  remote.sink().compiling(1);
  assertEquals(remote.overdueMs(remote.lastSeen + 400_000, 30_000, 300_000), 0, "compiling: the hold's compile window, not the run's ceiling");
  assertEquals(remote.overdueMs(remote.lastSeen + 601_000, 30_000, 300_000), 601_000);
});

Deno.test("joinTokenFor carries the rank's beaconLossMs (the coordinator's hold); none without it", async () => {
  const creds = await createRunCredentials(2);
  const site = { url: "file:///p/program.ts", line: 3, col: 5, ordinal: 0 };
  const ms = graceWindows({ reconnectGraceSecs: 42, heartbeatTimeoutSecs: 30 }).beaconLossMs;
  const t = decodeJoinToken(joinTokenFor("ws://127.0.0.1:1", creds.ranks[1], site, {}, ms)) as { beaconLossMs?: number };
  assertEquals(t.beaconLossMs, 42_000);
  const old = decodeJoinToken(joinTokenFor("ws://127.0.0.1:1", creds.ranks[1], site, {})) as { beaconLossMs?: number };
  assertEquals(old.beaconLossMs, undefined);
});
