/**
 * A rank refused at join knows it (issue 22, item 2), against a real nats-server on
 * loopback: a hello that does not verify (the token carries another key) is answered with
 * a refusal signed with the slot's password, the rank stops with fault `rejected` naming
 * why and never counts as joined, and the coordinator reports the refusal once however many
 * hellos come; a refusal after the hello check (a bye marked refused) is `rejected` too; a
 * notice not signed with the slot's password is dropped. `joinRelay`, the same path without
 * a GPU, rejects its `done`, and `scripts/relay.ts` exits 1 with one line. Waits are on
 * events (bounded, never asserted as times).
 */
import { assert, assertEquals } from "../../../util/assert.ts";
import { startRunServer, until } from "../../../util/nats_server.ts";
import type { RunServer } from "../../../util/nats_server.ts";
import { within } from "../../../util/processes.ts";
import {
  assignRelay,
  connectLink,
  createRunCredentials,
  encodeJoinToken,
  fromRankSubject,
  openCoordinator,
  RankLinkError,
  relayCredentials,
  serveRank,
  serverAuthorization,
  toRankSubject,
} from "../../../../src/distributed/nats/mod.ts";
import { importLinkKey, sealChunk } from "../../../../src/distributed/nats/wire.ts";
import { sealRefusal } from "../../../../src/distributed/nats/refusal.ts";
import { joinRelay } from "../../../../src/distributed/run/relay.ts";
import { startNatsServer } from "../../../../scripts/nats_server.ts";

/** The coordinator's side with the passwords, as remote_slots.ts opens it. */
async function coordinatorOf(rs: RunServer) {
  return await openCoordinator({
    connection: await rs.connectCoordinator(),
    run: rs.creds.run,
    runKey: rs.creds.runKey,
    beaconMs: 100,
    passwords: rs.creds.ranks.map((r) => r.pass),
  });
}

Deno.test("refusal: a rank whose token carries another key stops rejected, naming the key; the coordinator reports it once", async () => {
  const rs = await startRunServer(2);
  try {
    const { run } = rs.creds;
    const coord = await coordinatorOf(rs);
    const refused: RankLinkError[] = [];
    const link = await coord.link(1, { onRefused: (e) => void refused.push(e) });
    // A tap as the coordinator's user counts the notices the coordinator sends slot 1.
    const tap = await rs.connectCoordinator();
    let notices = 0;
    tap.subscribe(toRankSubject(run, 1), { callback: (_e, m) => void (m.data.length > 0 && notices++) });
    await tap.flush();
    // Five hellos of slot 1's user signed with another key (rank 0's): five refusals, one report.
    const evil = await rs.connectRank(1);
    const subject = fromRankSubject(run, 1), wrong = await importLinkKey(rs.creds.ranks[0].key);
    for (let seq = 1; seq <= 5; seq++) {
      evil.publish(subject, await sealChunk(wrong, subject, { run, from: "r1", seq, part: 0, parts: 1, bytes: 4 }, new Uint8Array(4)));
    }
    await until("five notices to slot 1", () => notices >= 5 ? true : undefined);
    assertEquals(refused.length, 1, `refusals reported (${refused.map((e) => e.message).join(" | ")})`);
    assert(
      refused[0].message.startsWith("rank 1: refused at join: its hello does not verify (HMAC does not match") &&
        refused[0].message.includes("told the rank"),
      refused[0].message,
    );
    await evil.close();

    // The rank itself, with that wrong key: it stops, rejected, and never joined.
    const server = await serveRank({
      connection: await rs.connectRank(1),
      creds: { ...rs.creds.ranks[1], key: rs.creds.ranks[0].key },
      handler: {},
      beaconLossMs: 60_000,
      helloMs: 20,
    });
    const why = await within(server.down, 20_000, "the wrong-key rank stops");
    assertEquals(why.fault, "rejected", `fault (${why.message})`);
    assert(
      why.message.startsWith("rank 1: the coordinator refused it at join: its hello does not verify (HMAC does not match") &&
        why.message.includes("the join token's key is not slot 1's key in this run"),
      why.message,
    );
    assertEquals(await server.joined, false, "joined");
    assertEquals(refused.length, 1, "still one report after the rank's own hellos");
    // The slot stays open: the right token joins it after.
    const good = await serveRank({ connection: await rs.connectRank(1), creds: rs.creds.ranks[1], handler: { ping: () => "pong" } });
    await within(link.ready, 20_000, "the right rank joins the slot");
    assertEquals(await link.call("ping"), "pong", "a call after the refused one");
    assertEquals(await good.joined, true, "joined");
    await tap.close();
    await coord.close();
    await good.down;
  } finally {
    await rs.stop();
  }
});

Deno.test("refusal: a bye marked refused (the hello failed the run's checks) stops the rank rejected with the reason", async () => {
  const rs = await startRunServer(2);
  try {
    const coord = await coordinatorOf(rs);
    const link = await coord.link(0);
    const server = await serveRank({ connection: await rs.connectRank(0), creds: rs.creds.ranks[0], handler: {} });
    await link.ready;
    await link.refuse("rank 0: refused at join: datasetLen 5, the run's is 6");
    const why = await within(server.down, 20_000, "the refused rank stops");
    assertEquals(why.fault, "rejected", `fault (${why.message})`);
    assertEquals(
      why.message,
      "rank 0: the coordinator refused it at join: rank 0: refused at join: datasetLen 5, the run's is 6",
      "message",
    );
    assertEquals((await link.down).fault, "rejected", "the coordinator's side");
    await coord.close();
  } finally {
    await rs.stop();
  }
});

Deno.test("refusal: a notice not signed with the slot's password is dropped and reported; the rank then joins", async () => {
  const rs = await startRunServer(2);
  try {
    const { run } = rs.creds;
    const dropped: string[] = [];
    const server = await serveRank({
      connection: await rs.connectRank(1),
      creds: rs.creds.ranks[1],
      handler: {},
      onRefused: (e) => void dropped.push(e.message),
    });
    const tap = await rs.connectCoordinator();
    tap.publish(toRankSubject(run, 1), await sealRefusal(rs.creds.ranks[0].pass, run, 1, "forged"));
    await until("the forged notice dropped", () => dropped[0]);
    assert(dropped[0].startsWith("rank 1: dropped a refusal notice that does not verify"), dropped[0]);
    const coord = await coordinatorOf(rs);
    const link = await coord.link(1);
    await within(link.ready, 20_000, "the rank joins");
    assertEquals(await server.joined, true, "joined");
    await tap.close();
    await coord.close();
    await server.down;
  } finally {
    await rs.stop();
  }
});

/** A run with one relay slot (2) for rank 1, on its own server; the relay's token with `key` swapped for a wrong one. */
async function relayRun() {
  const creds = await createRunCredentials(3);
  assignRelay(creds, 2, [1]);
  const server = await startNatsServer({ authorization: serverAuthorization(creds) });
  const coord = await openCoordinator({
    connection: await connectLink(server.wsUrl, creds.coordinator.user, creds.coordinator.pass, "coordinator"),
    run: creds.run,
    runKey: creds.runKey,
    passwords: creds.ranks.map((r) => r.pass),
  });
  const refused: string[] = [];
  await coord.link(2, { who: "relay (slot 2)", onRefused: (e) => void refused.push(e.message) });
  const token = encodeJoinToken(server.wsUrl, { ...relayCredentials(creds, 2), key: creds.ranks[0].key });
  return { server, coord, refused, token };
}

Deno.test("refusal: joinRelay with a wrong key rejects done naming the key; the coordinator reports it once", async () => {
  const r = await relayRun();
  try {
    const lines: string[] = [];
    const relay = joinRelay(r.token, { log: (l) => void lines.push(l) });
    const got = await within(relay.done.then(() => "resolved", (e) => `rejected: ${e.message}`), 20_000, "the relay's done");
    assert(got.startsWith("rejected: relay (slot 2): the coordinator refused it at join: its hello does not verify"), got);
    assert(!lines.some((l) => /joined run/.test(l)), `the relay never said it joined:\n${lines.join("\n")}`);
    assertEquals(r.refused.length, 1, `refusals reported: ${r.refused.join(" | ")}`);
  } finally {
    await r.coord.close();
    await r.server.stop();
  }
});

Deno.test("refusal: scripts/relay.ts with a wrong key exits 1 with one line on stderr, no stack", async () => {
  const r = await relayRun();
  try {
    const script = new URL("../../../../scripts/relay.ts", import.meta.url).pathname;
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--no-check", script, r.token],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const out = await within(child.output(), 60_000, "scripts/relay.ts ends");
    const stderr = new TextDecoder().decode(out.stderr).trim(), stdout = new TextDecoder().decode(out.stdout);
    assertEquals(out.code, 1, `exit code (stderr: ${stderr})`);
    assertEquals(stderr.split("\n").length, 1, `one line on stderr:\n${stderr}`);
    assert(stderr.startsWith("scripts/relay.ts: relay (slot 2): the coordinator refused it at join"), stderr);
    assert(!/\n\s+at /.test(stderr) && !/joined run/.test(stdout), `no stack, never joined:\n${stdout}\n${stderr}`);
  } finally {
    await r.coord.close();
    await r.server.stop();
  }
});
