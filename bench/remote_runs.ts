/**
 * One trainer run with remote ranks, for the network benches (bench/remote_ranks.ts on
 * loopback, bench/slow_link.ts behind an emulated link): a private nats-server with the
 * run's credentials and its monitoring port, rank processes (bench/net_rank.ts) started
 * from the join tokens, the run measured by bench/ddp_measure.ts's `runOnce`, then every
 * process stopped by its own pid. The NATS server's own byte counters (`/varz`) are read
 * when the first measured epoch starts and after the run: what crossed NATS, every call
 * (batches, heartbeats, evals) and not only the reduce frames.
 */
import { startNatsServer } from "../scripts/nats_server.ts";
import { createRunCredentials, type DdpBuilder, serverAuthorization } from "../src/index.ts";
import { type DdpCase, type DdpRun, runOnce } from "./ddp_measure.ts";

const RANK_SCRIPT = new URL("./net_rank.ts", import.meta.url).pathname;

/**
 * Every process a run here started and has not yet seen end (rank processes, the server,
 * what `route` registers): what a signal handler kills, by pid, before the bench exits.
 */
export const livePids = new Set<number>();

/** The temp directories (nats-server configs) of the servers in {@link livePids}. */
const liveDirs = new Set<string>();

/** SIGKILL every process in {@link livePids} and remove their servers' temp configs (a signal handler's last word). */
export function killLive(): void {
  for (const pid of livePids) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch { /* gone */ }
  }
  livePids.clear();
  for (const dir of liveDirs) {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* gone */ }
  }
  liveDirs.clear();
}

/** The `-c <dir>/nats.conf` a nats-server process runs with, read from /proc (Linux). */
function configDir(pid: number): string | undefined {
  try {
    const argv = Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0");
    const conf = argv[argv.indexOf("-c") + 1];
    return conf?.endsWith("/nats.conf") ? conf.slice(0, -"/nats.conf".length) : undefined;
  } catch {
    return undefined;
  }
}

/** A rank process and its output. */
interface RankProcess {
  child: Deno.ChildProcess;
  output: Promise<string>;
}

/** How the rank processes reach the server (default: its ws URL on loopback, processes here). */
export interface RemoteRoute {
  /** The URL in the join tokens. */
  joinUrl: string;
  /** The command prefix a rank process runs under (e.g. `ip netns exec <ns>`); default none. */
  prefix?: string[];
}

/** A run with remote ranks: the trainer's numbers and the NATS server's. */
export interface RemoteRun extends DdpRun {
  /** NATS payload bytes published into the server (`/varz` in_bytes) in the measured epochs, per measured reduce. */
  natsInBytesPerReduce: number | null;
  /** NATS payload bytes the server delivered (`/varz` out_bytes) in the measured epochs, per measured reduce. */
  natsOutBytesPerReduce: number | null;
}

interface Varz {
  in_bytes: number;
  out_bytes: number;
  in_msgs: number;
  out_msgs: number;
}

async function varz(url: string): Promise<Varz> {
  const r = await fetch(`${url}/varz`);
  if (!r.ok) throw new Error(`nats-server monitoring ${url}/varz answered ${r.status}`);
  return await r.json() as Varz;
}

function spawnRank(token: string, prefix: string[]): RankProcess {
  const argv = [...prefix, Deno.execPath(), "run", "-A", "--no-check", RANK_SCRIPT, token];
  const child = new Deno.Command(argv[0], { args: argv.slice(1), stdin: "null", stdout: "piped", stderr: "piped" })
    .spawn();
  const text = (s: ReadableStream<Uint8Array>) => new Response(s).text();
  const output = Promise.all([text(child.stdout), text(child.stderr)]).then(([o, e]) => o + e);
  return { child, output };
}

/**
 * Train `base.clone()` once with `c.remote` of its `c.ranks` ranks as rank processes over
 * NATS. `route(wsUrl)` says how those processes reach the server (a proxy in front of it,
 * a network namespace); it may start things, which its `close` stops.
 */
export async function runRemote(
  base: DdpBuilder<any>,
  c: DdpCase,
  epochs: number,
  route: (wsUrl: string) => Promise<RemoteRoute & { close?: () => Promise<void> }> = (wsUrl) =>
    Promise.resolve({ joinUrl: wsUrl }),
): Promise<RemoteRun> {
  if (!c.remote) throw new RangeError(`runRemote: the case needs remote >= 1, got ${c.remote}`);
  const creds = await createRunCredentials(c.ranks);
  const server = await startNatsServer({ authorization: serverAuthorization(creds), monitor: true });
  const serverPid = server.pid;
  livePids.add(serverPid);
  const serverDir = configDir(serverPid);
  if (serverDir) liveDirs.add(serverDir);
  const procs: RankProcess[] = [];
  let opened: (RemoteRoute & { close?: () => Promise<void> }) | undefined;
  let atMeasured: Promise<Varz | null> | undefined;
  try {
    opened = await route(server.wsUrl);
    const prefix = opened.prefix ?? [];
    const run = await runOnce(base.clone(), c, epochs, {
      remoteSpec: {
        url: server.wsUrl,
        joinUrl: opened.joinUrl,
        credentials: creds,
        joinTimeoutSecs: 300,
        onJoinToken: (_rank, token) => procs.push(spawnRank(token, prefix)),
      },
      observer: {
        batch: (e) => {
          if (e.epoch >= 1 && !atMeasured) atMeasured = varz(server.monitorUrl!).catch(() => null);
        },
      },
    });
    const start = await atMeasured, end = await varz(server.monitorUrl!);
    const per = (k: keyof Varz) => start && run.reduces ? Math.round((end[k] - start[k]) / run.reduces) : null;
    return { ...run, natsInBytesPerReduce: per("in_bytes"), natsOutBytesPerReduce: per("out_bytes") };
  } catch (e) {
    const logs = await Promise.all(procs.map(async (p, i) => {
      try {
        p.child.kill("SIGKILL");
      } catch { /* exited */ }
      return `--- rank process ${i} ---\n${(await p.output).slice(-4000)}`;
    }));
    throw new Error(`runRemote ${JSON.stringify(c)}: ${(e as Error).message}\n${logs.join("\n")}`, { cause: e });
  } finally {
    // Ranks stop on the coordinator's bye; one that does not within 15 s is killed by its pid.
    for (const p of procs) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([p.child.status, new Promise((r) => (timer = setTimeout(r, 15_000)))]);
      clearTimeout(timer);
      try {
        p.child.kill("SIGKILL");
      } catch { /* exited */ }
      await p.child.status;
    }
    await opened?.close?.();
    await server.stop();
    livePids.delete(serverPid);
    if (serverDir) liveDirs.delete(serverDir);
  }
}

/**
 * (avg + wire) / compute over the windows once ElChe's anchor stopped growing (the reduces at
 * the run's last anchor), a window's compute estimated as its mean steps per rank × the run's
 * mean ms per step. The measured-epochs share includes ElChe's growth from its first anchor
 * (×2 at most per reduce); this is what the cadence costs once grown. null with < 2 such reduces.
 */
export function steadyShare(
  r: Pick<DdpRun, "anchors" | "reduceLog" | "computeMs" | "samples" | "ranks">,
  batch: number,
): { share: number; reduces: number } | null {
  const last = r.anchors.at(-1);
  const idx = r.anchors.flatMap((a, i) => (a === last ? [i] : []));
  if (idx.length < 2 || r.samples === 0) return null;
  const msPerStep = r.computeMs / (r.samples / batch / r.ranks);
  let ms = 0, compute = 0;
  for (const i of idx) {
    const e = r.reduceLog[i];
    ms += e.ms;
    compute += (e.steps.reduce((a, b) => a + b, 0) / r.ranks) * msPerStep;
  }
  return compute > 0 ? { share: ms / compute, reduces: idx.length } : null;
}
