/**
 * A relay for real (issue 10): a nats-server on loopback, the coordinator with
 * one local worker rank here, two remote rank processes (`test/fixtures/remote_rank.ts`)
 * behind one relay process (`scripts/relay.ts`). The run trains to the band of the same
 * world all local, every sample once, and per reduce the coordinator takes in one frame
 * from the relay where it would take one per rank: the reduce events' bytesUp are rank
 * 0's frame plus the relay's sum, and on the wire (nats-server's /connz) the coordinator's
 * inbound bytes are the relay's sums plus the ranks' small answers and events.
 */
import { startNatsServer } from "../../../scripts/nats_server.ts";
import { assignRelay, createRunCredentials, ElCheConfig, serverAuthorization } from "../../../src/index.ts";
import { observe } from "../../../src/distributed/run/builder.ts";
import { mnistRemote, TRAIN } from "../../fixtures/programs/mnist_remote.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { Ledger } from "../../util/ledger.ts";
import { type Proc, reap, spawnDeno } from "../../util/processes.ts";

const SEED = 42;
const RANK_SCRIPT = new URL("../../fixtures/remote_rank.ts", import.meta.url).pathname;
const RELAY_SCRIPT = new URL("../../../scripts/relay.ts", import.meta.url).pathname;

function program() {
  return mnistRemote.clone().elche(ElCheConfig.cpuCadence()).bf16Wire(true).batchSize(40).numEpochs(1)
    .lrScaleRatio(0).heartbeatTimeoutSecs(8);
}

/** Each sample's count over the run's completed chunks. */
gpuTest("two remote rank processes behind one relay process: all-local accuracy band, every sample once, one frame per reduce from the relay", async () => {
  // The band: the same world of 3 ranks, all local workers (remote_deno_test measures the spread of two).
  const h0 = await program().cluster({ ranks: [{}, {}, {}] }).run();
  await h0.join();
  const baseline = h0.evals.filter((e) => e.value !== undefined).at(-1)!.value!;

  const creds = await createRunCredentials(4);
  assignRelay(creds, 3, [1, 2]);
  const server = await startNatsServer({ authorization: serverAuthorization(creds), monitor: true });
  const procs: Proc[] = [];
  const cov = new Ledger(TRAIN, 1, SEED);
  const reduces: { round: number; bytesUp: number }[] = [];
  const lost: string[] = [];
  const b = program().cluster({ ranks: [{}] }).remoteRanks({
    slots: 2,
    url: server.wsUrl,
    credentials: creds,
    joinTimeoutSecs: 120,
    onJoinToken: (_rank, token) => procs.push(spawnDeno(RANK_SCRIPT, [token])),
    onRelayToken: (_slot, token) => procs.push(spawnDeno(RELAY_SCRIPT, [token])),
  });
  observe(b, {
    chunk: cov.chunk,
    rankLost: (r, why) => lost.push(`${r}: ${why}`),
    reduce: (e) => reduces.push({ round: e.round, bytesUp: e.bytesUp }),
  });
  let connz: { connections: { name?: string; in_bytes: number; out_bytes: number }[] };
  let acc: number | undefined;
  try {
    const h = await b.run();
    await h.join();
    acc = h.evals.filter((e) => e.value !== undefined).at(-1)?.value;
    connz = await (await fetch(`${server.monitorUrl}/connz?state=all&limit=100`)).json();
  } finally {
    await reap(procs);
    await server.stop();
  }
  const bandFloor = baseline - 0.05;
  cov.exactlyOnce("1 local + 2 behind a relay");
  assertEquals(lost, [], "no rank lost");
  console.log(`test accuracy: all-local ${(bandFloor + 0.05).toFixed(3)}; 1 local + 2 behind a relay ${acc?.toFixed(3)}; ${reduces.length} reduces`);
  assert(acc !== undefined && acc >= bandFloor, `relayed run accuracy ${acc} below the all-local band (${bandFloor + 0.05} − 0.05)`);

  // Per reduce: rank 0's frame and the relay's sum (bf16; the last, exact round f32), never three frames.
  const P = 784 * 32 + 32 + 32 * 10 + 10;
  const bf16 = 4 * Math.ceil(P / 2), f32 = 4 * P;
  assert(reduces.length >= 2, `${reduces.length} reduces`);
  for (const r of reduces.slice(0, -1)) assertEquals(r.bytesUp, 2 * bf16, `round ${r.round}: bytesUp`);
  assertEquals(reduces.at(-1)!.bytesUp, 2 * f32, "the final exact round: two f32 frames");
  // On the wire: what the server sent the coordinator is the relay's sums plus control.
  const named = (re: RegExp) => connz.connections.filter((c) => re.test(c.name ?? ""));
  const [coord] = named(/^flodl coordinator$/);
  const relayIn = named(/^flodl relay/).reduce((a, c) => a + c.in_bytes, 0);
  const sums = (reduces.length - 1) * bf16 + f32;
  console.log(`coordinator inbound ${coord.out_bytes} B over ${reduces.length} reduces (${(coord.out_bytes / reduces.length / 1024).toFixed(1)} KiB/reduce); relay sent ${relayIn} B; one bf16 frame ${bf16} B`);
  assert(relayIn >= sums && relayIn < sums * 1.05 + 16_384, `relay sent ${relayIn} B for sums of ${sums} B`);
  // Without the relay the two remote ranks would send 2 × sums; control (events, answers, the final state) stays under one frame per reduce.
  assert(coord.out_bytes < relayIn + reduces.length * bf16, `coordinator inbound ${coord.out_bytes} B vs relay ${relayIn} B`);
  for (const p of procs) {
    const out = await p.output;
    assertEquals((await p.child.status).code, 0, `process exit code (log:\n${out})`);
  }
});
