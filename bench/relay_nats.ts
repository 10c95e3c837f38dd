/**
 * Relays over a real nats-server (issue 10): the coordinator's inbound bytes
 * and CPU per reduce with W remote ranks sending their frames to it directly, and with the
 * same ranks behind per-host relays (run/relay.ts) that sum them first. The coordinator's
 * side is the trainer's own: NatsTransport and RankClient per rank, RelayClient per relay,
 * `reduceCycle` (reduce_cycle.ts: snapshot, relay sums, average, adopt). The ranks are
 * fakes without GPU holding a real bf16 frame of the MNIST MLP (203,530 parameters); they
 * and the relays run in a second Deno process (this file with `--fakes`), so this
 * process's CPU time (`process.cpuUsage`: user + system, all its threads) is the
 * coordinator's: chunk MACs, decoding, frame checks, averaging, packing the consensus.
 *
 *   deno run -A --no-check bench/relay_nats.ts [--ranks 2,4,8,16] [--per-host 4] [--reduces 8] [--json out.json]
 *
 * Per W and topology: the median over `--reduces` cycles (after 3 warm-up cycles) of bytes the
 * coordinator's links received, the bytes it published (its links and the cast subject,
 * nats/cast.ts: the consensus once), its CPU ms (all of the cycle, and the part up to the
 * consensus: snapshots, relay sums, checks, averaging; the rest is the adoption) and the
 * cycle's wall ms.
 */
import process from "node:process";
import { startNatsServer } from "../scripts/nats_server.ts";
import { RankClient } from "../src/distributed/coordinator/transport/rank_client.ts";
import { reduceCycle } from "../src/distributed/coordinator/reduce/reduce_cycle.ts";
import { RelayClient } from "../src/distributed/coordinator/reduce/relay_client.ts";
import { NatsTransport } from "../src/distributed/coordinator/transport/transport_nats.ts";
import {
  assignRelay,
  connectLink,
  coordinatorInbox,
  createRunCredentials,
  decodeJoinToken,
  encodeJoinToken,
  encodeValue,
  importLinkKey,
  openCoordinator,
  relayCredentials,
  relaySubject,
  serveRank,
  serverAuthorization,
  WireSender,
} from "../src/distributed/nats/mod.ts";
import type { Frame, LayoutTable, RankSetup } from "../src/distributed/protocol/messages.ts";
import { joinRelay } from "../src/distributed/run/relay.ts";
import { packBf16 } from "../src/tensor/mod.ts";
import { arg, flag } from "./flags.ts";

const P = 203_530, B = 0;
const LAYOUT: LayoutTable = { params: [{ name: "w", shape: [P], offset: 0, numel: P }], buffers: [], paramCount: P, bufferCount: B };

/** A fake rank's parameters near a shared point (deterministic per rank). */
function paramsOf(rank: number): Float32Array {
  let s = (0x9e3779b9 ^ (rank * 0x85ebca6b)) >>> 0;
  return Float32Array.from({ length: P }, (_, i) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return Math.sin(i * 0.001) + 0.01 * (s / 4294967296 - 0.5);
  });
}

if (Deno.args[0] === "--fakes") {
  // The fake host(s): Deno.args[1] is JSON { ranks: token[], relays: token[] }.
  const { ranks, relays } = JSON.parse(Deno.args[1]) as { ranks: string[]; relays: string[] };
  for (const token of relays) joinRelay(token, { beaconLossMs: 60_000 });
  await Promise.all(ranks.map(async (token) => {
    const t = decodeJoinToken(token);
    const nc = await connectLink(t.url, t.user, t.pass, `rank ${t.rank}`);
    const words = packBf16(paramsOf(t.rank));
    let toRelay: { via: number; sender: WireSender } | undefined;
    await serveRank({
      connection: nc,
      creds: t,
      beaconLossMs: 60_000,
      handler: {
        init: async (s: RankSetup) => {
          if (s.relay !== undefined) {
            const key = await importLinkKey(t.key);
            toRelay = { via: s.relay, sender: new WireSender((sub, d) => nc.publish(sub, d), relaySubject(t.run, t.rank), t.run, `r${t.rank}`, key, nc.info!.max_payload) };
          }
          return { rank: s.rank, adapter: "fake", layout: LAYOUT };
        },
        snapshot: async (round: number) => {
          const f: Frame = { rank: t.rank, round, batches: 40 + (t.rank % 7) * 3, dtype: "bf16", params: words, buffers: new Float32Array(0) };
          if (!toRelay) return f;
          await toRelay.sender.send(encodeValue(f));
          return { ...f, via: toRelay.via, params: new Uint32Array(0) };
        },
        adopt: () => ({ rank: t.rank, divergence: 0, postNorm: 1 }),
      },
    });
  }));
} else {
  const RANKS = arg("ranks", "2,4,8,16").split(",").map(Number);
  const PER_HOST = flag("per-host", 4);
  const REDUCES = flag("reduces", 8);
  const WARM = 3;
  const jsonAt = Deno.args.indexOf("--json");
  const rows: Record<string, number | string>[] = [];
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`bench/relay_nats: ${P} parameters (bf16 frame ${(4 * Math.ceil(P / 2) / 1024).toFixed(0)} KiB), ${PER_HOST} ranks a host, load ${Deno.loadavg().map((x) => x.toFixed(1)).join(" ")}`);
  for (const W of RANKS) {
    for (const relayed of [false, true]) {
      const hosts = Math.ceil(W / PER_HOST);
      const creds = await createRunCredentials(W + (relayed ? hosts : 0));
      if (relayed) {
        for (let h = 0; h < hosts; h++) assignRelay(creds, W + h, Array.from({ length: Math.min(PER_HOST, W - h * PER_HOST) }, (_, i) => h * PER_HOST + i));
      }
      const server = await startNatsServer({ authorization: serverAuthorization(creds), maxPayload: 8 * 1024 * 1024 });
      const coord = await openCoordinator({
        connection: await connectLink(server.wsUrl, creds.coordinator.user, creds.coordinator.pass, "coordinator", coordinatorInbox(creds.run)),
        run: creds.run,
        runKey: creds.runKey,
      });
      const transports = await Promise.all(Array.from({ length: W }, (_, k) => NatsTransport.open(coord, k)));
      const relayLinks = relayed ? await Promise.all(Array.from({ length: hosts }, (_, h) => coord.link(W + h, { who: `relay (slot ${W + h})` }))) : [];
      const fakes = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--no-check", new URL(import.meta.url).pathname, "--fakes", JSON.stringify({
          ranks: transports.map((t) => encodeJoinToken(server.wsUrl, creds.ranks[t.rank])),
          relays: relayLinks.map((l) => encodeJoinToken(server.wsUrl, relayCredentials(creds, l.rank))),
        })],
        stdout: "inherit",
        stderr: "inherit",
      }).spawn();
      await Promise.all([...transports.map((t) => t.link.ready), ...relayLinks.map((l) => l.ready)]);
      const clients = transports.map((t) => new RankClient(t.rank, t));
      const relayOf = (k: number) => (relayed ? W + Math.floor(k / PER_HOST) : undefined);
      await Promise.all(clients.map((c) => c.call("init", (api) => api.init({ rank: c.rank, relay: relayOf(c.rank) } as RankSetup))));
      const relays = relayLinks.map((l) => new RelayClient(l, clients.filter((c) => relayOf(c.rank) === l.rank)));
      const links = [...transports.map((t) => t.link), ...relayLinks];
      const received = () => links.reduce((a, l) => a + l.bytes.received, 0);
      // `?? 0`: the same file measures a revision before casts (no castBytes).
      const sent = () => links.reduce((a, l) => a + l.bytes.sent, 0) + ((coord as { castBytes?: number }).castBytes ?? 0);
      const bytes: number[] = [], out: number[] = [], cpu: number[] = [], cpuIn: number[] = [], wall: number[] = [];
      for (let round = 1; round <= REDUCES + WARM; round++) {
        const b0 = received(), s0 = sent(), c0 = process.cpuUsage(), t0 = performance.now();
        let mid = c0;
        const cycle = await reduceCycle({
          round,
          exact: false,
          stallMs: 120_000,
          ranks: clients,
          layout: LAYOUT,
          gamma: 1,
          bf16Wire: true,
          version: round,
          globalStep: 0,
          observer: {},
          averaged: () => void (mid = process.cpuUsage(c0)),
        });
        const c1 = process.cpuUsage(c0);
        if (cycle.acks.length !== W) throw new Error(`round ${round}: ${cycle.acks.length} of ${W} ranks adopted`);
        if (round <= WARM) continue; // warm-up: JIT, first chunks
        wall.push(performance.now() - t0);
        cpu.push((c1.user + c1.system) / 1000);
        cpuIn.push((mid.user + mid.system) / 1000);
        bytes.push(received() - b0);
        out.push(sent() - s0);
      }
      const row = {
        ranks: W,
        topology: relayed ? `${hosts} relay(s)` : "direct",
        inKiB: Math.round(median(bytes) / 1024),
        outKiB: Math.round(median(out) / 1024),
        cpuMs: Number(median(cpu).toFixed(1)),
        cpuInMs: Number(median(cpuIn).toFixed(1)),
        wallMs: Number(median(wall).toFixed(1)),
      };
      rows.push(row);
      console.log(JSON.stringify(row));
      for (const r of relays) await r.close();
      await Promise.all(clients.map((c) => c.transport.close()));
      await coord.close();
      await fakes.status;
      await server.stop();
    }
  }
  console.log("\n| ranks | topology | into the coordinator (KiB / reduce) | out of it (KiB / reduce) | coordinator CPU (ms / reduce) | of which gather + average | reduce wall (ms) |\n|---|---|---|---|---|---|---|");
  for (const r of rows) console.log(`| ${r.ranks} | ${r.topology} | ${r.inKiB} | ${r.outKiB} | ${r.cpuMs} | ${r.cpuInMs} | ${r.wallMs} |`);
  if (jsonAt >= 0) await Deno.writeTextFile(Deno.args[jsonAt + 1], JSON.stringify({ date: new Date().toISOString(), load: Deno.loadavg(), P, perHost: PER_HOST, rows }, null, 2));
}
