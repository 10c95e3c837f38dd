/**
 * Fault soak (issue 27 item 6): many short remote runs in a row, each with one random fault
 * at a random moment, counted. A run is the remote-rank tests' program
 * (test/fixtures/programs/mnist_remote.ts: 2000 MNIST samples, one epoch, batches of 16,
 * cpu-cadence, bf16 wire) on one local worker rank and one remote rank process
 * (test/fixtures/remote_rank.ts) over a real nats-server; the remote rank reaches the server
 * through a proxy that can cut its link (test/util/cut_proxy.ts). The fault fires at the
 * remote rank's k-th batch, k uniform in 1..40 (mid-epoch: its first steps compile), and is
 * one of:
 * - `cut`: the rank's TCP connections reset, the link down for 1–20 s;
 * - `hold`: the link a black hole for 1–20 s (connections open, bytes wait);
 * - `stop`: the rank process frozen (SIGSTOP) for 1–20 s, then SIGCONT: a frozen tab's kin;
 * - `kill`: the rank process killed (SIGKILL): it must be reported lost, its work retrained;
 * - `nats`: the nats-server killed and started again on its port 0.2–5 s later;
 * - `node`: on a 3-node NATS cluster, the node the coordinator or the rank (drawn) is on
 *   killed for good: every client fails over to another node.
 * Every fault but `kill` lasts less than the grace (reconnectGraceSecs 30, which the rank
 * holds too), so the run must keep its rank. Counted per run: a hang (no end within
 * 300 s), a run that did not finish, ranks lost (expected: none, or rank 1 for `kill`),
 * samples never trained or trained twice (the coordinator's completed chunks, test/util/
 * ledger.ts), and the test accuracy, against the all-local band of the same world
 * (bench/remote_band.ts 2 ranks, batches of 16). Writes bench/results/fault-soak-<stamp>.json
 * and prints a summary. Not part of `npm test`, which drives each fault once by construction.
 *
 *   . scripts/env.sh && deno run -A --no-check bench/fault_soak.ts [--runs 50] [--seed 1] [--kinds cut,hold,stop,kill,nats,node]
 */
import { within } from "../test/util/processes.ts";
import { proxiedRun } from "../test/util/proxied_remote.ts";
import { mulberry32 } from "../test/util/random.ts";

const KINDS = ["cut", "hold", "stop", "kill", "nats", "node"] as const;
type Kind = typeof KINDS[number];

const flag = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i < 0 ? fallback : Deno.args[i + 1] ?? "";
};
const runs = Number(flag("runs", "50")), seed = Number(flag("seed", "1"));
const kinds = flag("kinds", KINDS.join(",")).split(",") as Kind[];
if (!Number.isInteger(runs) || runs < 1) throw new RangeError(`fault_soak: --runs must be an integer >= 1, got ${flag("runs", "")}`);
if (!Number.isInteger(seed)) throw new RangeError(`fault_soak: --seed must be an integer, got ${flag("seed", "")}`);
for (const k of kinds) {
  if (!KINDS.includes(k)) throw new RangeError(`fault_soak: --kinds takes ${KINDS.join(", ")} (comma-separated), got "${k}"`);
}

const RUN_BOUND_MS = 300_000, GRACE_SECS = 30;

interface Outcome {
  run: number;
  kind: Kind;
  /** The fault's length, ms (none for `kill` and `node`). */
  ms?: number;
  /** For `node`: whose node was killed. */
  node?: string;
  /** The remote rank's batch the fault fired at; undefined when the run ended first. */
  atBatch: number;
  fired: boolean;
  status: "ok" | "failed" | "hang";
  error?: string;
  lost: string[];
  never: number;
  twice: number;
  acc?: number;
  secs: number;
}

const rand = mulberry32(seed);
const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
const between = (lo: number, hi: number) => Math.round(lo + rand() * (hi - lo));

async function one(run: number, kind: Kind): Promise<Outcome> {
  const t0 = performance.now();
  const atBatch = between(1, 40);
  const ms = kind === "kill" || kind === "node" ? undefined : kind === "nats" ? between(200, 5000) : between(1000, 20_000);
  const whose = pick(["flodl coordinator", "flodl rank 1"]);
  let fault: Promise<void> | undefined, node: string | undefined;
  const r = await proxiedRun(GRACE_SECS, (n) => void (n === atBatch && (fault = fire())), { nodes: kind === "node" ? 3 : 1 });
  const rank = () => r.procs[0].child;
  const fire = (): Promise<void> => {
    switch (kind) {
      case "cut":
        return r.proxy.cut(ms!);
      case "hold":
        return r.proxy.hold(ms!);
      case "stop":
        Deno.kill(rank().pid, "SIGSTOP");
        return new Promise((done) => setTimeout(done, ms)).then(() => Deno.kill(rank().pid, "SIGCONT"));
      case "kill":
        rank().kill("SIGKILL");
        return Promise.resolve();
      case "nats":
        return r.server.kill().then(() => new Promise((done) => setTimeout(done, ms))).then(() => r.server.start());
      case "node":
        return r.cluster.nodeOf(whose).then((k) => {
          if (k < 0) throw new Error(`fault_soak: "${whose}" is on no node`);
          node = `${whose.slice(6)}'s node ${k}`;
          return r.cluster.nodes[k].kill();
        });
    }
  };
  let status: Outcome["status"] = "ok", error: string | undefined, acc: number | undefined;
  try {
    const h = await r.builder.run();
    await within(h.join(), RUN_BOUND_MS, "the run's end");
    await fault;
    acc = h.evals.filter((e) => e.value !== undefined).at(-1)?.value;
  } catch (e) {
    error = (e as Error).message.split("\n")[0];
    status = error.startsWith("hang:") ? "hang" : "failed";
  } finally {
    if (kind === "stop" && r.procs[0]) {
      try {
        Deno.kill(rank().pid, "SIGCONT");
      } catch { /* gone */ }
    }
    await r.stop();
  }
  const c = r.ledger.counts[0];
  return {
    run,
    kind,
    ...(ms === undefined ? {} : { ms }),
    ...(node ? { node } : {}),
    atBatch,
    fired: fault !== undefined,
    status,
    ...(error ? { error } : {}),
    lost: r.lost,
    never: c.filter((n) => n === 0).length,
    twice: c.filter((n) => n > 1).length,
    ...(acc === undefined ? {} : { acc }),
    secs: Math.round((performance.now() - t0) / 100) / 10,
  };
}

const out: Outcome[] = [];
const stamp = new Date().toISOString().replace(/[:.]/g, "-");
const file = `bench/results/fault-soak-${stamp}.json`;
for (let i = 1; i <= runs; i++) {
  const o = await one(i, pick(kinds));
  out.push(o);
  const want = o.kind === "kill" ? 1 : 0;
  const bad = o.status !== "ok" || !o.fired || o.lost.length !== want || o.never || o.twice;
  console.log(
    `run ${i}/${runs}: ${o.kind}${o.ms === undefined ? "" : ` ${o.ms} ms`}${o.node ? ` (${o.node})` : ""} at batch ${o.atBatch}${o.fired ? "" : " (never fired)"}: ` +
      `${o.status}${o.error ? ` (${o.error})` : ""}, lost ${o.lost.length}, never ${o.never}, twice ${o.twice}, ` +
      `acc ${o.acc?.toFixed(3) ?? "-"}, ${o.secs} s${bad ? "  <-- UNEXPECTED" : ""}`,
  );
  await Deno.writeTextFile(file, JSON.stringify({ seed, kinds, runs: out }, null, 1));
}
const fired = out.filter((o) => o.fired);
const accs = out.flatMap((o) => (o.acc === undefined ? [] : [o.acc])).sort((a, b) => a - b);
console.log(
  `${runs} runs (${fired.length} with the fault fired; ${KINDS.map((k) => `${k} ${out.filter((o) => o.kind === k).length}`).join(", ")}): ` +
    `hangs ${out.filter((o) => o.status === "hang").length}, not finished ${out.filter((o) => o.status !== "ok").length}, ` +
    `unexpected losses ${out.filter((o) => o.lost.length !== (o.kind === "kill" ? 1 : 0)).length}, ` +
    `samples lost ${out.reduce((s, o) => s + o.never, 0)}, repeated ${out.reduce((s, o) => s + o.twice, 0)}; ` +
    `accuracy lowest ${accs[0]?.toFixed(3)}, median ${accs[Math.floor(accs.length / 2)]?.toFixed(3)} → ${file}`,
);
