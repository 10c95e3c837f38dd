/**
 * Past the grace (issue 27): a remote rank process stopped (SIGSTOP) longer than the run's
 * `reconnectGraceSecs` is dropped as before: its unfinished samples go to the others and the
 * run goes on. Its slot reopens as a spare (the coordinator closes the old link telling the
 * rank to rejoin); once continued (SIGCONT) the rank reads that bye, says hello again with the
 * same token, and is admitted at the next epoch boundary: it trains the last epoch, every
 * sample once per epoch, and stops on its own when the coordinator ends the run.
 *
 * Synchronised on the coordinator's events, no sleeps: the stop at the remote rank's 4th
 * batch, the continue once the coordinator declared it lost (plus the rest of a 12 s stop,
 * twice the grace), and epoch 0's metricsFn waits for the rank's join request, so the
 * boundary it is admitted at is the one before the last epoch. Every wait is bounded
 * (`within`, failing loudly).
 */
import { startNatsServer } from "../../../scripts/nats_server.ts";
import { createRunCredentials, serverAuthorization } from "../../../src/index.ts";
import { observe } from "../../../src/distributed/run/builder.ts";
import { remoteProgram, TRAIN } from "../../fixtures/programs/mnist_remote.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { Ledger } from "../../util/ledger.ts";
import { type Proc, reap, spawnDeno, within } from "../../util/processes.ts";

const SEED = 42;
const RANK_SCRIPT = new URL("../../fixtures/remote_rank.ts", import.meta.url).pathname;
const GRACE_SECS = 6, STOP_MS = 12_000;

gpuTest("a remote rank stopped past reconnectGraceSecs is dropped, rejoins its own slot by itself at the next epoch, trains the last epoch; every sample once per epoch", async () => {
  const creds = await createRunCredentials(2);
  const server = await startNatsServer({ authorization: serverAuthorization(creds) });
  const procs: Proc[] = [];
  const ledger = new Ledger(TRAIN, 2, SEED);
  const lost: string[] = [], joined: [number, number][] = [];
  let stopped: Promise<void> | undefined, batches = 0;
  let lostNow!: () => void, waiting!: () => void;
  const lostSeen = new Promise<void>((r) => (lostNow = r));
  const requested = new Promise<void>((r) => (waiting = r));
  const b = remoteProgram(16).numEpochs(2).reconnectGraceSecs(GRACE_SECS).cluster({ ranks: [{}] })
    .metricsFn(async (m) => {
      if (m.epoch === 0) await within(requested, 120_000, "the dropped rank asked to rejoin during epoch 0's end");
    })
    .remoteRanks({ slots: 1, url: server.wsUrl, credentials: creds, joinTimeoutSecs: 120, onJoinToken: (_r, t) => procs.push(spawnDeno(RANK_SCRIPT, [t])) });
  observe(b, {
    chunk: ledger.chunk,
    rankLost: (r, why) => {
      lost.push(`${r}: ${why}`);
      lostNow();
    },
    rankWaiting: (r) => r === 1 && waiting(),
    rankJoined: (r, epoch) => joined.push([r, epoch]),
    batch: (e) => {
      if (e.rank !== 1 || e.epoch !== 0 || ++batches !== 4 || stopped) return;
      const pid = procs[0].child.pid, t0 = Date.now();
      Deno.kill(pid, "SIGSTOP");
      stopped = within(lostSeen, 60_000, "the stopped rank declared lost")
        .then(() => new Promise<void>((r) => setTimeout(r, Math.max(0, STOP_MS - (Date.now() - t0)))))
        .finally(() => Deno.kill(pid, "SIGCONT"));
    },
  });
  try {
    const h = await b.run();
    await within(h.join(), 300_000, "the run did not finish after the rank's stop");
    assert(stopped, "the remote rank was stopped at its 4th batch");
    await stopped;
    const [own] = await reap(procs, 30_000);
    const log = await procs[0].output;
    assert(own, `the rank process did not stop on its own:\n${log}`);
    assertEquals(lost.length, 1, `one loss (${lost.join("; ")})`);
    assert(new RegExp(`^1: rank 1 was silent for [\\d.]+ s \\(reconnectGraceSecs ${GRACE_SECS}\\)$`).test(lost[0]), `the loss names the grace: ${lost[0]}`);
    assertEquals(joined, [[1, 1]], `rank 1 joined back at the boundary before epoch 1 (the rank's output:\n${log})`);
    ledger.exactlyOnce("rank 1 dropped and back");
    assert(ledger.ranks[1].has(1), `rank 1 trained in the last epoch (ranks of epoch 1: ${[...ledger.ranks[1]]})`);
    assert(/rank 1: rejoined run /.test(log) && /the coordinator ended the run/.test(log), `the rank rejoined and stayed to the end:\n${log}`);
    assertEquals((await procs[0].child.status).code, 0, `exit code (its output:\n${log})`);
  } finally {
    await reap(procs);
    await server.stop();
  }
});
