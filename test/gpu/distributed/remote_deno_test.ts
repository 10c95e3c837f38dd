/**
 * Ranks on other machines, for real on one machine (issue 10): a nats-server on loopback
 * (scripts/nats_server.ts), a coordinator with one local worker rank in this process, and
 * remote ranks as separate Deno processes (`test/fixtures/remote_rank.ts <token>`) that
 * join over NATS. Small on purpose: 2000 MNIST samples, one epoch, a 784-32-10 MLP.
 *
 * - mixed local + remote ranks train to the accuracy of the same world all local, and
 *   every sample is trained exactly once (the coordinator's chunk ledger);
 * - a remote rank process killed mid-epoch: the run finishes on the others, coverage
 *   exact, the dead rank reported;
 * - a remote rank whose model has another shape is refused at join, naming the rank;
 * - `npm start --serve 1` end to end: the printed join command (examples/train.ts --join)
 *   joins the coordinator process and the run ends;
 * - elastic membership: a remote rank killed in epoch 1, a new remote rank process joining a
 *   spare slot (`maxSlots`) of the running run: admitted at the epoch boundary, it trains
 *   epoch 2; each epoch covers every sample once; the record stream and the dashboard say
 *   who was lost and who joined, from which host.
 */
import { startNatsServer } from "../../../scripts/nats_server.ts";
import { createRunCredentials, serverAuthorization } from "../../../src/index.ts";
import { observe } from "../../../src/distributed/run/builder.ts";
import { remoteProgram, TRAIN } from "../../fixtures/programs/mnist_remote.ts";
import { assert, assertEquals, assertRejects } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { Ledger } from "../../util/ledger.ts";
import { type Proc, reap, spawnDeno } from "../../util/processes.ts";

const SEED = 42;
const RANK_SCRIPT = new URL("../../fixtures/remote_rank.ts", import.meta.url).pathname;

/** A remote rank process (test/fixtures/remote_rank.ts) joining with `token`. */
const spawnRank = (token: string, env: Record<string, string> = {}): Proc => spawnDeno(RANK_SCRIPT, [token], env);

/**
 * One run: `locals` worker ranks here, `remotes` rank processes over NATS (env per process).
 * `onBatch` sees the processes, to kill one.
 */
async function run(opts: {
  locals: number;
  remotes: number;
  batch: number;
  env?: Record<string, string>[];
  onBatch?: (rank: number, procs: Proc[]) => void;
}) {
  const world = opts.locals + opts.remotes;
  const creds = await createRunCredentials(world);
  const server = opts.remotes ? await startNatsServer({ authorization: serverAuthorization(creds) }) : undefined;
  const procs: Proc[] = [];
  const ledger = new Ledger(TRAIN, 1, SEED);
  const lost: string[] = [];
  const b = remoteProgram(opts.batch).cluster({ ranks: Array.from({ length: opts.locals }, () => ({})) });
  if (server) {
    b.remoteRanks({
      slots: opts.remotes,
      url: server.wsUrl,
      credentials: creds,
      joinTimeoutSecs: 120,
      onJoinToken: (rank, token) => procs.push(spawnRank(token, opts.env?.[rank - opts.locals])),
    });
  }
  observe(b, {
    chunk: ledger.chunk,
    rankLost: (r, why) => lost.push(`${r}: ${why}`),
    batch: (e) => opts.onBatch?.(e.rank, procs),
  });
  try {
    const h = await b.run();
    const state = await h.join();
    const acc = h.evals.filter((e) => e.value !== undefined).at(-1)?.value;
    return { state, acc, ledger, lost, devices: h.devices(), procs };
  } finally {
    await reap(procs);
    await server?.stop();
    last = procs;
    if (Deno.env.get("REMOTE_TEST_LOG")) for (const p of procs) console.log(await p.output);
  }
}

/** The rank processes of the last run (for their logs after a refusal). */
let last: Proc[] = [];

/**
 * The lowest test accuracy of 12 runs of the same world all local (3 worker ranks; ranks race,
 * runs differ): bench/remote_band.ts, numbers and command in bench/README.md. A run whose
 * averaging or coverage broke lands far below the bar (chance is 0.10).
 */
const LOCAL_LOWEST = 0.694, MARGIN = 0.05;

gpuTest(`one local worker rank and two remote Deno rank processes over NATS: accuracy >= ${(LOCAL_LOWEST - MARGIN).toFixed(3)} (below the all-local runs), every sample once`, async () => {
  const mixed = await run({ locals: 1, remotes: 2, batch: 40 });
  mixed.ledger.exactlyOnce("1 local + 2 remote");
  assertEquals(mixed.lost, [], "no rank lost");
  assertEquals(mixed.devices.length, 3, "three ranks");
  console.log(`test accuracy, 1 local + 2 remote: ${mixed.acc?.toFixed(3)} (all-local lowest ${LOCAL_LOWEST})`);
  assert(mixed.acc !== undefined && mixed.acc >= LOCAL_LOWEST - MARGIN, `remote-rank run accuracy ${mixed.acc} below the all-local runs' lowest ${LOCAL_LOWEST} − ${MARGIN}`);
  for (const p of mixed.procs) {
    const code = (await p.child.status).code;
    const out = await p.output;
    assert(/joined run/.test(out) && /coordinator ended the run/.test(out), `a rank process's log:\n${out}`);
    assertEquals(code, 0, `rank process exit code (log:\n${out})`);
  }
});

gpuTest("a remote rank process killed mid-epoch: the run finishes on the others, every sample once, the dead rank reported", async () => {
  let killed = -1;
  const seen = new Map<number, number>();
  const r = await run({
    locals: 1,
    remotes: 2,
    batch: 16,
    onBatch: (rank, procs) => {
      seen.set(rank, (seen.get(rank) ?? 0) + 1);
      // Rank 2 (the second process) dies once it trained a few batches: mid-epoch, work in flight.
      if (killed < 0 && rank === 2 && seen.get(2)! >= 4) {
        killed = procs[1].child.pid;
        procs[1].child.kill("SIGKILL");
      }
    },
  });
  assert(killed > 0, "rank 2 trained 4 batches and was killed");
  r.ledger.exactlyOnce("rank 2 killed");
  assertEquals(r.lost.length, 1, `one rank lost (${r.lost.join("; ")})`);
  assert(r.lost[0].startsWith("2: "), `the lost rank is 2: ${r.lost[0]}`);
  assert(r.state.params.size === 4, "the run finished with a consensus");
});

gpuTest("a remote rank whose model has another shape is refused at join, naming the rank and the layout", async () => {
  const err = await assertRejects(
    () => run({ locals: 1, remotes: 1, batch: 40, env: [{ MNIST_REMOTE_HIDDEN: "48" }] }),
    Error,
    "rank 1",
    "refused at join",
    "model layout",
  );
  assert(/paramCount/.test(err.message), `the message shows the layouts: ${err.message}`);
  const out = await last[0].output;
  assert(/refused at join/.test(out), `the rank process was told why:\n${out}`);
});

gpuTest("npm start --serve 1 prints a join command; that command (examples/train.ts --join) joins, and the run ends with its accuracy", async () => {
  const out = await Deno.makeTempDir({ prefix: "flodl-serve-" });
  const train = new URL("../../../examples/train.ts", import.meta.url).pathname;
  const root = new URL("../../../", import.meta.url).pathname;
  const coordinator = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-check", train, "--ranks", "1", "--serve", "1", "--subset", "1000", "--test-subset", "200", "--epochs", "1", "--out", out],
    cwd: root,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(coordinator.stderr).text();
  let log = "", rank: Deno.ChildProcess | undefined;
  try {
    // Read the coordinator's output until its join command, run that command as printed.
    const reader = coordinator.stdout.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      log += value;
      const m = /rank 1: (deno run -A --no-check examples\/train\.ts --join \S+.*)\n/.exec(log);
      if (m && !rank) {
        const [, ...args] = m[1].split(" ");
        rank = new Deno.Command(Deno.execPath(), { args, cwd: root, stdin: "null", stdout: "piped", stderr: "piped" }).spawn();
      }
    }
    const code = (await coordinator.status).code;
    assertEquals(code, 0, `coordinator exit code (stdout:\n${log}\nstderr:\n${await stderr})`);
    assert(rank !== undefined, `a join command was printed:\n${log}`);
    const rankLog = new TextDecoder().decode((await rank.output()).stdout);
    assert(/rank 1 joined from/.test(log) && /final test accuracy \d+\.\d+%/.test(log), `the run used the remote rank and ended:\n${log}`);
    assert(/coordinator ended the run/.test(rankLog), `the rank process stopped with the run:\n${rankLog}`);
  } finally {
    try {
      rank?.kill("SIGKILL");
    } catch { /* exited */ }
    await Deno.remove(out, { recursive: true });
  }
});

gpuTest("elastic: a remote rank killed in epoch 1 and a new remote process joining a spare slot mid-run: admitted at the boundary, trains epoch 2, each sample once per epoch, shown in the records and the dashboard", async () => {
  const creds = await createRunCredentials(3);
  const server = await startNatsServer({ authorization: serverAuthorization(creds) });
  const out = await Deno.makeTempDir({ prefix: "flodl-elastic-" });
  const procs: Proc[] = [];
  const ledger = new Ledger(TRAIN, 2, SEED);
  const lost: string[] = [];
  const joined: { rank: number; epoch: number; host: string; transport: string }[] = [];
  const tokens = new Map<number, string>();
  let killed = false, batches = 0;
  // The coordinator's own events synchronise the test: the join request (init done, hello
  // checked) releases the metricsFn of epoch 1, which the coordinator awaits before it
  // admits at that boundary. No sleep anywhere.
  let waiting!: () => void;
  const requested = new Promise<void>((r) => (waiting = r));
  const b = remoteProgram(16).numEpochs(2).cluster({ ranks: [{}] })
    .recordLog(`${out}/records`, 0).saveDashboard(`${out}/dashboard.html`)
    .metricsFn(async (m) => {
      if (m.epoch === 0) await requested;
    })
    .remoteRanks({
      slots: 1,
      maxSlots: 2,
      url: server.wsUrl,
      credentials: creds,
      joinTimeoutSecs: 120,
      onJoinToken: (rank, token) => {
        tokens.set(rank, token);
        if (rank === 1) procs.push(spawnRank(token));
      },
    });
  observe(b, {
    chunk: ledger.chunk,
    rankLost: (r, why) => lost.push(`${r}: ${why}`),
    rankWaiting: (r) => r === 2 && waiting(),
    rankJoined: (rank, epoch, place) => joined.push({ rank, epoch, host: place.host, transport: place.transport }),
    batch: (e) => {
      // Rank 1 dies once it trained some batches of epoch 1 (past the slow first ones, whose
      // length would let it stay silent up to the stall ceiling: RankClient.overdueMs); then
      // the newcomer starts.
      if (e.rank === 1 && e.epoch === 0 && ++batches === 12 && !killed) {
        killed = true;
        procs[0].child.kill("SIGKILL");
        procs.push(spawnRank(tokens.get(2)!));
      }
    },
  });
  try {
    const h = await b.run();
    assertEquals(h.devices().length, 3, "three slots: local, remote, spare");
    await h.join();
    assert(killed, "rank 1 was killed mid-epoch");
    ledger.exactlyOnce("rank 1 killed, rank 2 joined");
    assertEquals(lost.length, 1, `one rank lost (${lost.join("; ")})`);
    assert(lost[0].startsWith("1: "), `the lost rank is 1: ${lost[0]}`);
    assertEquals(joined, [{ rank: 2, epoch: 1, host: Deno.hostname(), transport: "remote" }], "rank 2 admitted for epoch 2");
    assert(!ledger.ranks[0].has(2), "rank 2 trained nothing of epoch 1");
    assert(ledger.ranks[1].has(2) && !ledger.ranks[1].has(1), `epoch 2's ranks: ${[...ledger.ranks[1]]}`);

    const host = Deno.hostname().replace(/[/\\]/g, "_");
    const records = (await Deno.readTextFile(`${out}/records/root/${host}/rank2.log`)).trim().split("\n").map((l) => JSON.parse(l));
    const join = records.find((r) => r.label?.startsWith("rank_joined:"));
    assert(join && join.epoch === 1 && join.transport === "remote", `rank 2's log has its join: ${JSON.stringify(records[0])}`);
    assert(records.some((r) => r.epoch_complete && r.epoch === 1 && r.work > 0), "and its epoch-2 row with work");
    const dash = await Deno.readTextFile(`${out}/dashboard.html`);
    assert(/"kind":"joined"/.test(dash) && /"kind":"lost"/.test(dash), "the dashboard embeds both membership events");
    const newcomer = procs[1];
    const code = (await newcomer.child.status).code;
    const log = await newcomer.output;
    assert(/joined run/.test(log) && /coordinator ended the run/.test(log), `the newcomer's log:\n${log}`);
    assertEquals(code, 0, `newcomer exit code (log:\n${log})`);
  } finally {
    await reap(procs);
    await server.stop();
    await Deno.remove(out, { recursive: true });
  }
});
