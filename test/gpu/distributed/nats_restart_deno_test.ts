/**
 * The NATS server killed and restarted on the same port mid-run (issues 10 and 27): one
 * local worker rank and one remote rank process. Both sides reconnect and their links
 * resume where they stopped (nats/README.md "Liveness"), so a restart within the grace is
 * survived: no rank lost, every sample once. A server away longer than the grace
 * (`reconnectGraceSecs`) loses the remote rank as before: the run goes on without it or, with
 * `maxFailure(absolute(1))`, stops with a bundle whose error says why and where to resume.
 * Never a hang: every wait here is bounded by `within`, which fails loudly naming what did
 * not happen (a bound, not a timing assertion). The rank process stops on its own.
 */
import { startNatsServer } from "../../../scripts/nats_server.ts";
import { createRunCredentials, ElCheConfig, MaxFailureThreshold, readBundleMeta, serverAuthorization } from "../../../src/index.ts";
import { observe } from "../../../src/distributed/run/builder.ts";
import { FsStorage } from "../../../src/io/mod.ts";
import { mnistRemote, TRAIN } from "../../fixtures/programs/mnist_remote.ts";
import { assert, assertEquals, assertRejects } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { Ledger } from "../../util/ledger.ts";
import { type Proc, reap, spawnDeno, within } from "../../util/processes.ts";

const SEED = 42;
const RANK_SCRIPT = new URL("../../fixtures/remote_rank.ts", import.meta.url).pathname;
/** Bound on the run after the restart: far above a 2000-sample epoch here, so only a hang reaches it. */
const RUN_BOUND_MS = 180_000;

/**
 * One run of 1 local + 1 remote rank; the server is killed at the remote rank's first batch
 * after the first reduce, and restarted on its port `awayMs` later. `stem`: savePath (and
 * maxFailure(1)).
 */
async function restartedRun(awayMs: number, stem?: string) {
  const creds = await createRunCredentials(2);
  const server = await startNatsServer({ authorization: serverAuthorization(creds) });
  const port = new URL(server.wsUrl).port;
  const procs: Proc[] = [];
  const ledger = new Ledger(TRAIN, 1, SEED);
  const lost: string[] = [];
  let restart: Promise<void> | undefined;
  let reduced = false;
  let b = mnistRemote.clone().elche(ElCheConfig.cpuCadence()).bf16Wire(true).batchSize(16).numEpochs(1).lrScaleRatio(0)
    .heartbeatTimeoutSecs(8).reconnectGraceSecs(8).cluster({ ranks: [{}] })
    .remoteRanks({ slots: 1, url: server.wsUrl, credentials: creds, joinTimeoutSecs: 120, onJoinToken: (_r, t) => procs.push(spawnDeno(RANK_SCRIPT, [t])) });
  if (stem) b = b.savePath(stem).maxFailure(MaxFailureThreshold.absolute(1));
  observe(b, {
    chunk: ledger.chunk,
    rankLost: (r, why) => lost.push(`${r}: ${why}`),
    reduce: () => void (reduced = true),
    // After a first consensus (a bundle has something to hold), at a batch of the remote rank: mid-epoch, work in flight.
    batch: (e) => {
      if (e.rank === 1 && reduced && !restart) {
        restart = server.kill().then(() => new Promise((r) => setTimeout(r, awayMs))).then(() => server.start());
      }
    },
  });
  try {
    const h = await b.run();
    const joined = within(h.join(), RUN_BOUND_MS, "the run neither finished nor stopped after the NATS server restart");
    const outcome = await joined.then(() => undefined, (e: Error) => e);
    if (outcome?.message.startsWith("hang:")) throw outcome;
    assert(restart, "the server was restarted mid-epoch");
    await within(restart, 30_000 + awayMs, "nats-server restarted on its port");
    assertEquals(new URL(server.wsUrl).port, port, "same port");
    // The rank process stops on its own: told the run ended, or its connection lost for good.
    const [own] = await reap(procs, 30_000);
    const log = await procs[0].output;
    assert(own, `the rank process did not stop on its own after the restart:\n${log}`);
    return { outcome, ledger, lost, log, acc: h.evals.filter((e) => e.value !== undefined).at(-1)?.value };
  } finally {
    await reap(procs);
    await server.stop();
  }
}

gpuTest("NATS server restarted mid-epoch: both sides reconnect and resume, no rank lost, every sample once", async () => {
  const r = await restartedRun(500);
  assertEquals(r.outcome, undefined, `the run finished (${r.outcome?.message})`);
  assertEquals(r.lost, [], "no rank lost");
  r.ledger.exactlyOnce("NATS server restarted");
  assert(r.acc !== undefined && r.acc > 0.5, `accuracy after the restart ${r.acc}`);
  assert(/the coordinator ended the run/.test(r.log), `the rank stayed to the end of the run:\n${r.log}`);
});

gpuTest("NATS server away past reconnectGraceSecs with maxFailure(1): the remote rank is lost, the run stops with a max_failure_exceeded bundle and says so", async () => {
  const dir = await Deno.makeTempDir({ prefix: "flodl-nats-restart-" });
  try {
    const r = await restartedRun(12_000, `${dir}/ckpt`);
    assert(r.outcome, "the run stopped");
    // The error says why it stopped and which loss did it; the bundle holds the last consensus.
    await assertRejects(() => Promise.reject(r.outcome), Error, "max_failure_exceeded", "rank 1", "reconnectGraceSecs 8", `${dir}/ckpt`, "resumeFrom");
    assert(/^1: .*silent/.test(r.lost[0] ?? ""), `the loss names rank 1's silence: ${r.lost.join("; ")}`);
    assertEquals((await readBundleMeta(new FsStorage(dir), "ckpt")).save_reason, "max_failure_exceeded", "bundle reason");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
