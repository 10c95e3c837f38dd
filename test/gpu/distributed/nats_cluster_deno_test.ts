/**
 * A 3-node NATS cluster under a run (issue 27 item 2): one local worker rank and two remote
 * rank processes, every client given every node's URL (the join tokens' `urls`). Mid-run the
 * node the coordinator is on is killed, later the node a remote rank is on; neither comes
 * back. Each client moves to a surviving node (seen in the survivors' `/connz` by its
 * connection name, never guessed) and its links resume (wire.ts), so the run finishes with
 * every rank, every sample once per epoch. With one URL in the tokens a rank has nowhere to
 * go and is lost (the test fails: checked by hand, see nats/README.md "A cluster").
 * Every wait is bounded by `within`/`until` on an observable event (a reduce, a batch, a
 * connection in `/connz`), never a sleep.
 */
import { startNatsCluster } from "../../../scripts/nats_server.ts";
import { createRunCredentials, ElCheConfig, serverAuthorization } from "../../../src/index.ts";
import { observe } from "../../../src/distributed/run/builder.ts";
import { mnistRemote, TRAIN } from "../../fixtures/programs/mnist_remote.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { Ledger } from "../../util/ledger.ts";
import { type Proc, reap, spawnDeno, within } from "../../util/processes.ts";

const SEED = 42;
const EPOCHS = 2;
const RANK_SCRIPT = new URL("../../fixtures/remote_rank.ts", import.meta.url).pathname;
/** Bound on the whole run: far above 2 epochs of 2000 samples here, so only a hang reaches it. */
const RUN_BOUND_MS = 300_000;
/** Bound on a client showing up on a surviving node after its node died. */
const MOVE_BOUND_MS = 30_000;

/** Poll `f` (a `/connz` look-up) until it returns a value; a loud error after `ms` naming `what`. */
async function until<T>(what: string, f: () => Promise<T | undefined>, ms = MOVE_BOUND_MS): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`hang: ${what} within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

gpuTest("NATS cluster of 3: the coordinator's node and then a remote rank's node killed mid-run; every client moves to a survivor, no rank lost, every sample once", async () => {
  const creds = await createRunCredentials(3);
  const cluster = await startNatsCluster(3, { authorization: serverAuthorization(creds) });
  const procs: Proc[] = [];
  const ledger = new Ledger(TRAIN, EPOCHS, SEED);
  const lost: string[] = [];
  const events: string[] = [];
  const alive = () => cluster.nodes.map((_, i) => i).filter((i) => cluster.nodes[i].pid > 0);
  /** The node `name` is on once it is on a running node other than `dead`. */
  const movedOff = (name: string, dead: number) =>
    until(`"${name}" on a surviving node after node ${dead} died`, async () => {
      const n = await cluster.nodeOf(name);
      return n >= 0 && n !== dead && cluster.nodes[n].pid > 0 ? n : undefined;
    });
  let reduces = 0, reducesAtMove = -1;
  let first: Promise<{ dead: number; now: number }> | undefined;
  let second: Promise<{ rank: number; dead: number; now: number }> | undefined;
  const b = mnistRemote.clone().elche(ElCheConfig.cpuCadence()).bf16Wire(true).batchSize(16).numEpochs(EPOCHS).lrScaleRatio(0)
    .heartbeatTimeoutSecs(8).cluster({ ranks: [{}] })
    .remoteRanks({
      slots: 2,
      url: cluster.wsUrls,
      credentials: creds,
      joinTimeoutSecs: 120,
      onJoinToken: (_r, t) => procs.push(spawnDeno(RANK_SCRIPT, [t])),
    });
  observe(b, {
    chunk: ledger.chunk,
    rankLost: (r, why) => lost.push(`${r}: ${why}`),
    reduce: () => void reduces++,
    batch: (e) => {
      // 1. After a first consensus, at a remote rank's batch (work in flight): the coordinator's node.
      if (!first && reduces > 0 && e.rank === 1) {
        first = (async () => {
          const dead = await cluster.nodeOf("flodl coordinator");
          assert(dead >= 0, "the coordinator is on a node (/connz)");
          await cluster.nodes[dead].kill();
          events.push(`killed node ${dead} (the coordinator's) at reduce ${reduces}`);
          const now = await movedOff("flodl coordinator", dead);
          reducesAtMove = reduces;
          events.push(`the coordinator moved to node ${now}`);
          return { dead, now };
        })();
        first.catch(() => {}); // awaited (and reported) after the run
      }
      // 2. Once the coordinator moved and a consensus was reached since: the node of the remote rank at its batch.
      if (first && !second && reducesAtMove >= 0 && reduces > reducesAtMove && e.rank >= 1) {
        const rank = e.rank;
        second = (async () => {
          const dead = await cluster.nodeOf(`flodl rank ${rank}`);
          assert(dead >= 0 && cluster.nodes[dead].pid > 0, `rank ${rank} is on a running node (/connz), got ${dead}`);
          await cluster.nodes[dead].kill();
          events.push(`killed node ${dead} (rank ${rank}'s) at reduce ${reduces}`);
          const now = await movedOff(`flodl rank ${rank}`, dead);
          events.push(`rank ${rank} moved to node ${now}`);
          // One node left: every client is on it.
          for (const name of ["flodl coordinator", "flodl rank 1", "flodl rank 2"]) {
            await until(`"${name}" on the last node ${now}`, async () => (await cluster.nodeOf(name)) === now || undefined);
          }
          return { rank, dead, now };
        })();
        second.catch(() => {}); // awaited (and reported) after the run
      }
    },
  });
  try {
    const h = await b.run();
    const outcome = await within(h.join(), RUN_BOUND_MS, "the run neither finished nor stopped after the node kills").then(() => undefined, (e: Error) => e);
    if (outcome?.message.startsWith("hang:")) throw outcome;
    assert(first && second, `both kills happened mid-run (${events.join("; ") || "none"})`);
    const a = await within(first, MOVE_BOUND_MS, "the coordinator's move");
    const c = await within(second, MOVE_BOUND_MS, "the remote rank's move");
    assertEquals(outcome, undefined, `the run finished (${outcome?.message}; ${events.join("; ")})`);
    assertEquals(lost, [], "no rank lost");
    ledger.exactlyOnce("NATS cluster nodes killed");
    assert(a.now !== a.dead && c.now !== c.dead, `each client on another node: ${events.join("; ")}`);
    assertEquals(alive().length, 1, "two nodes stayed down");
    console.log(`  ${events.join("; ")}; ${reduces} reduces`);
    const [own] = await reap(procs, 30_000);
    const logs = await Promise.all(procs.map((p) => p.output));
    assert(own, `rank process did not stop on its own:\n${logs[0]}`);
    for (const log of logs) assert(/the coordinator ended the run/.test(log), `a rank stayed to the end of the run:\n${log}`);
    assert(h.evals.filter((e) => e.value !== undefined).at(-1)!.value! > 0.5, "accuracy after the kills");
  } finally {
    await reap(procs);
    await cluster.stop();
  }
});
