/**
 * A coordinator that dies mid-run (issue 27 item 4): its process is killed (SIGKILL) after its
 * first epoch bundle was saved, once both remote rank processes completed a chunk since.
 * The nats-server stays up (the test's, as a user's own server or cluster would). Started
 * again with `resumeFrom` on the same server with the same credentials, it takes back the two
 * remote ranks still waiting, the same processes (they hold on and hello again within their
 * grace), and the run finishes: every sample once per epoch across both lives, counted from
 * the first life's bundle (its coverage) and the second life's completed chunks.
 * Fixture: test/fixtures/restart_coordinator.ts.
 */
import { startNatsServer } from "../../../scripts/nats_server.ts";
import { createRunCredentials, readBundleMeta, serverAuthorization } from "../../../src/index.ts";
import { FsStorage } from "../../../src/io/mod.ts";
import { TRAIN } from "../../fixtures/programs/mnist_remote.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { Ledger } from "../../util/ledger.ts";
import { type Proc, reap, spawnDeno, watchOutput } from "../../util/processes.ts";

const COORDINATOR = new URL("../../fixtures/restart_coordinator.ts", import.meta.url).pathname;
const RANK_SCRIPT = new URL("../../fixtures/remote_rank.ts", import.meta.url).pathname;

function coordinator(args: string[]) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-check", COORDINATOR, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  return { child, ...watchOutput(child) };
}

/** The `chunk` lines of a coordinator's output, counted into `ledger`. */
function countChunks(text: string, ledger: Ledger): Set<number> {
  const ranks = new Set<number>();
  for (const m of text.matchAll(/^chunk (\d+) (\d+) (\d+) (\d+)$/gm)) {
    const [e, r, o, n] = m.slice(1).map(Number);
    ledger.chunk(e, r, o, n);
    ranks.add(r);
  }
  return ranks;
}

gpuTest("a coordinator killed mid-epoch and started again with resumeFrom takes back its waiting remote ranks: the run finishes, every sample once per epoch", async () => {
  const dir = await Deno.makeTempDir({ prefix: "flodl-restart-" });
  const creds = await createRunCredentials(3);
  const server = await startNatsServer({ authorization: serverAuthorization(creds) });
  const credsFile = `${dir}/credentials.json`;
  await Deno.writeTextFile(credsFile, JSON.stringify(creds), { mode: 0o600 });
  const stem = `${dir}/ckpt`;
  const ranks: Proc[] = [];
  let second: ReturnType<typeof coordinator> | undefined;
  const first = coordinator([credsFile, server.wsUrl, stem, "first"]);
  try {
    for (const k of [1, 2]) ranks.push(spawnDeno(RANK_SCRIPT, [(await first.until(new RegExp(`^token ${k} (\\S+)$`, "m"), `token ${k}`))[1]]));
    // After the first epoch bundle, once each remote rank completed a chunk since: work in flight.
    const saved = (await first.until(/^saved checkpoint$/m, "the first epoch bundle")).index;
    await first.until(/^chunk \d+ 1 /m, "a chunk of rank 1 after the bundle", saved);
    await first.until(/^chunk \d+ 2 /m, "a chunk of rank 2 after the bundle", saved);
    first.child.kill("SIGKILL");
    await first.child.status;
    assert(!/^done /m.test(first.text()), "the first life was killed before the run's end");
    const meta = await readBundleMeta(new FsStorage(dir), "ckpt");
    console.log(`the first life left a bundle of epoch ${meta.epoch + 1}`);
    const ledger = new Ledger(TRAIN, 4, 42);
    ledger.heldBy(meta);

    second = coordinator([credsFile, server.wsUrl, stem, "resume"]);
    const done = JSON.parse((await second.until(/^done (.*)$/m, "the resumed run's end"))[1]) as { acc?: number; devices: number };
    const trained = countChunks(second.text(), ledger);
    assert(!/^lost /m.test(second.text()), `no rank lost in the second life:\n${second.text()}`);
    assertEquals([...trained].sort(), [0, 1, 2], "the local rank and both remote ranks trained in the second life");
    assertEquals(done.devices, 3, "three ranks");
    ledger.exactlyOnce("a coordinator killed and resumed");
    assert(done.acc !== undefined && done.acc > 0.5, `accuracy after the resume ${done.acc}`);
    // The same two rank processes: never restarted, they stop on their own at the end.
    const own = await reap(ranks, 30_000);
    const logs = await Promise.all(ranks.map((r) => r.output));
    own.forEach((o, k) => assert(o && /the coordinator ended the run/.test(logs[k]), `rank ${k + 1} stayed and stopped on its own:\n${logs[k]}`));
  } catch (e) {
    await reap(ranks, 0);
    for (const [k, r] of ranks.entries()) console.log(`--- rank ${k + 1}:\n${await r.output}`);
    console.log(`--- second life:\n${second?.text().split("\n").filter((l) => !l.startsWith("chunk")).join("\n")}`);
    throw e;
  } finally {
    for (const c of [first, second]) {
      try {
        c?.child.kill("SIGKILL");
      } catch { /* ended */ }
      await c?.child.status;
    }
    await reap(ranks);
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
