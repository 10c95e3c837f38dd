/**
 * Run a private nats-server for a test, a bench or a `--serve` run: free loopback ports
 * (TCP and a plain WebSocket listener), a config with the run's authorization block,
 * started and awaited until it accepts, stopped by its own pid (never a broad kill), and
 * restartable on the same ports. Deno only (it spawns a process): src/ stays browser-safe,
 * so this lives in scripts/ and tests, benches and the CLI import it from here.
 *
 * The server is this process's child in both senses (issue 22):
 * - Its config, which holds the run's passwords, is never a file: it goes to the server's
 *   stdin (`-c /dev/stdin`, read once at start), so no exit path, SIGKILL included, can
 *   leave a credential file behind, and none is ever readable by another user.
 * - It dies with this process: it is started through util-linux's `setpriv --pdeathsig
 *   KILL`, so the kernel kills it when its parent dies, however (SIGTERM, SIGINT, SIGKILL,
 *   a crash): a killed coordinator leaves no server holding its ports. Nothing to reap at
 *   the next start. NOTE: Linux sends the signal when the *thread* that spawned the child
 *   ends; Deno spawns on the calling JavaScript thread, so start servers from the main
 *   thread (one started in a Web Worker stops when the worker ends). Where `setpriv` is
 *   missing (not Linux) the server is started plain and outlives a killed parent.
 *
 * ```sh
 * deno run -A scripts/nats_server.ts              # a server on free ports until Ctrl-C (no auth)
 * deno run -A scripts/nats_server.ts --cluster 3  # 3 routed nodes; prints every node's URLs
 * ```
 */

/** How to run the server. */
export interface NatsServerOptions {
  /** The server binary (default /usr/sbin/nats-server, Debian's `nats-server` package). */
  binary?: string;
  /** Largest message in bytes (the server's max_payload; default 1 MiB as nats-server's). */
  maxPayload?: number;
  /** An `authorization { ... }` block (credentials.ts `serverAuthorization`); none = anyone. */
  authorization?: string;
  /** Host to listen on (default 127.0.0.1: nothing beyond this machine). */
  host?: string;
  /** Also open nats-server's HTTP monitoring port (`/varz`, `/connz`: bytes and messages in and out) on `host`. */
  monitor?: boolean;
  /**
   * Kill the server when this process dies (default true; see the module note). False only
   * for a test that kills its coordinator and watches ranks on a server still up: it must
   * then stop the server itself, by its pid.
   */
  diesWithParent?: boolean;
}

/** A running server. */
export interface NatsServer {
  /** `nats://host:port` (TCP clients). */
  readonly url: string;
  /** `ws://host:port` (browsers, and Deno through `wsconnect`). */
  readonly wsUrl: string;
  /** `http://host:port` of the monitoring endpoint (`monitor: true`), else undefined. */
  readonly monitorUrl: string | undefined;
  /** The process id of the current server process. */
  readonly pid: number;
  /** Stop the process (SIGTERM, SIGKILL after 5 s) and wait for it; the config stays (in memory) for `start`. */
  kill(): Promise<void>;
  /** Start it again on the same ports and config (after `kill`). */
  start(): Promise<void>;
  /** Stop it (as `kill`). */
  stop(): Promise<void>;
  /** The server's stderr so far (for error messages). */
  log(): string;
}

const DEFAULT_BINARY = "/usr/sbin/nats-server";
/** util-linux's setpriv (Debian: essential), which sets the child's parent-death signal before it runs the server. */
const SETPRIV = "/usr/bin/setpriv";

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}
const LOG_CAP = 64 * 1024;
/** How long a start may take before it is an error (a loaded 2-core machine included). */
const START_TIMEOUT_MS = 20_000;

function freePort(host: string): number {
  const l = Deno.listen({ hostname: host, port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function accepts(host: string, port: number): Promise<boolean> {
  try {
    (await Deno.connect({ hostname: host, port })).close();
    return true;
  } catch {
    return false;
  }
}

/** One node's config and where it must accept before it counts as started. */
interface NodePlan {
  host: string;
  port: number;
  wsPort: number;
  httpPort: number | undefined;
  /** The whole config (goes to the server's stdin). */
  text: string;
}

function planNode(opts: NatsServerOptions, fn: string, httpPort?: number, extra = ""): NodePlan {
  const host = opts.host ?? "127.0.0.1";
  const maxPayload = opts.maxPayload ?? 1024 * 1024;
  if (!Number.isInteger(maxPayload) || maxPayload < 1024) {
    throw new RangeError(`${fn}: maxPayload must be an integer >= 1024 bytes, got ${maxPayload}`);
  }
  const port = freePort(host), wsPort = freePort(host);
  httpPort ??= opts.monitor ? freePort(host) : undefined;
  const text = [
    `listen: "${host}:${port}"`,
    `max_payload: ${maxPayload}`,
    // A client that cannot take what the server writes for this long is cut off as a slow
    // consumer (nats-server's default is 2 s): a loaded coordinator receiving several frames
    // at once must not be mistaken for a dead one.
    `write_deadline: "10s"`,
    // NOTE: no_tls is for loopback only; a server reachable from a network needs
    // `websocket { tls { cert_file, key_file } }` (wss://) and a top-level `tls {}`.
    `websocket { listen: "${host}:${wsPort}", no_tls: true }`,
    httpPort === undefined ? "" : `http: "${host}:${httpPort}"`,
    extra,
    opts.authorization ?? "",
  ].join("\n");
  return { host, port, wsPort, httpPort, text };
}

/** Run one planned node: spawned, awaited until its listeners accept, killable and restartable. */
async function runNode(plan: NodePlan, opts: NatsServerOptions): Promise<NatsServer> {
  const binary = opts.binary ?? DEFAULT_BINARY;
  const { host, port, wsPort, httpPort, text } = plan;
  if (!isFile(binary)) {
    throw new Error(`nats-server: cannot run ${binary} (no such file); install it: apt-get install -y nats-server`);
  }
  const tied = (opts.diesWithParent ?? true) && isFile(SETPRIV);
  const command = tied ? SETPRIV : binary;
  const args = [...(tied ? ["--pdeathsig", "KILL", binary] : []), "-c", "/dev/stdin"];

  let log = "";
  let child: Deno.ChildProcess | undefined;
  let drained: Promise<void> = Promise.resolve();

  const start = async () => {
    if (child) throw new Error(`nats-server: already running (pid ${child.pid})`);
    try {
      child = new Deno.Command(command, { args, stdin: "piped", stdout: "null", stderr: "piped" }).spawn();
    } catch (e) {
      throw new Error(
        `nats-server: cannot run ${binary} (${(e as Error).message}); install it: apt-get install -y nats-server`,
        { cause: e },
      );
    }
    const proc = child;
    // The config through a pipe: the server reads it to the end once, at start.
    const w = proc.stdin.getWriter();
    await w.write(new TextEncoder().encode(text)).catch(() => {});
    await w.close().catch(() => {});
    drained = (async () => {
      for await (const s of proc.stderr.pipeThrough(new TextDecoderStream())) log = (log + s).slice(-LOG_CAP);
    })();
    let exited = false;
    proc.status.then(() => exited = true);
    const until = Date.now() + START_TIMEOUT_MS;
    while (!(await accepts(host, port) && await accepts(host, wsPort))) {
      if (exited || Date.now() > until) {
        await kill();
        throw new Error(
          `nats-server (${[command, ...args].join(" ")}) did not accept on ${host}:${port} and ws ${wsPort}:\n${log}`,
        );
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  const kill = async () => {
    const proc = child;
    if (!proc) return;
    child = undefined;
    try {
      proc.kill("SIGTERM");
    } catch { /* already gone */ }
    const hard = setTimeout(() => {
      try {
        proc.kill("SIGKILL");
      } catch { /* gone */ }
    }, 5000);
    await proc.status;
    clearTimeout(hard);
    await drained;
  };

  await start();
  return {
    url: `nats://${host}:${port}`,
    wsUrl: `ws://${host}:${wsPort}`,
    monitorUrl: httpPort === undefined ? undefined : `http://${host}:${httpPort}`,
    get pid() {
      return child?.pid ?? -1;
    },
    kill,
    start,
    stop: kill,
    log: () => log,
  };
}

/**
 * Start nats-server on free loopback ports and wait until both listeners accept.
 * @throws {Error} Naming the binary and its log when it is missing, exits, or does not accept in time.
 */
export function startNatsServer(opts: NatsServerOptions = {}): Promise<NatsServer> {
  return runNode(planNode(opts, "startNatsServer"), opts);
}

/** A running cluster: N nodes routed to one another, each with its own TCP, WebSocket and monitoring port. */
export interface NatsCluster {
  /** The nodes, in order (node i is `server_name` `flodl-<i>`); each is killable and restartable alone. */
  readonly nodes: readonly NatsServer[];
  /** Every node's `ws://host:port`, in node order: what join tokens carry. */
  readonly wsUrls: readonly string[];
  /** Every node's `nats://host:port`. */
  readonly urls: readonly string[];
  /**
   * Which running node holds the client connection named `name` (the client's `name`: connect.ts
   * names links `flodl coordinator`, `flodl rank <k>`), from each node's monitoring `/connz`;
   * -1 when none does (between a node's death and the client's reconnect).
   */
  nodeOf(name: string): Promise<number>;
  /** Wait until every running node has a route to every other running one (after a `start`). */
  formed(): Promise<void>;
  /** Stop every node (by its pid). */
  stop(): Promise<void>;
}

/** A node's routes as its monitoring endpoint reports them (`/routez`), -1 when it does not answer. */
async function routesOf(monitorUrl: string): Promise<number> {
  try {
    const res = await fetch(`${monitorUrl}/routez`);
    return ((await res.json()) as { num_routes?: number }).num_routes ?? -1;
  } catch {
    return -1;
  }
}

/** The names of a node's client connections (`/connz`), undefined when it does not answer. */
export async function connectionNames(monitorUrl: string): Promise<string[] | undefined> {
  try {
    const res = await fetch(`${monitorUrl}/connz?limit=1024`);
    return ((await res.json()) as { connections?: { name?: string }[] }).connections?.map((c) => c.name ?? "") ?? [];
  } catch {
    return undefined;
  }
}

/**
 * Start `n` nats-server nodes on free loopback ports, routed to one another (a full mesh:
 * every node lists every route), and wait until the cluster is formed: each node's
 * monitoring `/routez` says `num_routes` = n − 1. Each node has the same `authorization`
 * (a run's users must be the same everywhere) and the settings of {@link startNatsServer}.
 * Nodes do not advertise other nodes' client URLs (`cluster { no_advertise: true }`): a
 * client uses the URLs it was given (the join token's), never ones it was told about
 * (they may not be reachable from it, nor allowed by a walk-in's `--allow-net`).
 * `monitor` is always on (the formation check needs it). n = 1 is one node without routes.
 * @throws {RangeError} When n is not an integer >= 1.
 * @throws {Error} As {@link startNatsServer}, or when the routes do not form in time (each node's log).
 */
export async function startNatsCluster(n: number, opts: NatsServerOptions = {}): Promise<NatsCluster> {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`startNatsCluster: n must be an integer >= 1 (nodes), got ${n}`);
  const host = opts.host ?? "127.0.0.1";
  const routePorts = Array.from({ length: n }, () => freePort(host));
  const routes = routePorts.map((p) => `"nats-route://${host}:${p}"`).join(", ");
  const plans = routePorts.map((rp, i) =>
    planNode(
      opts,
      "startNatsCluster",
      freePort(host),
      [
        `server_name: "flodl-${i}"`,
        n === 1 ? "" : `cluster { name: "flodl", listen: "${host}:${rp}", no_advertise: true, routes: [${routes}] }`,
      ].join("\n"),
    )
  );
  const nodes: NatsServer[] = [];
  try {
    for (const plan of plans) nodes.push(await runNode(plan, opts));
  } catch (e) {
    await Promise.all(nodes.map((s) => s.stop()));
    throw e;
  }
  const formed = async () => {
    const up = nodes.filter((s) => s.pid > 0);
    const until = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const routed = await Promise.all(up.map((s) => routesOf(s.monitorUrl!)));
      if (routed.every((r) => r === up.length - 1)) return;
      if (Date.now() > until) {
        const logs = up.map((s, i) => `node ${i} (${routed[i]} routes):\n${s.log()}`).join("\n");
        throw new Error(`startNatsCluster: the ${up.length} nodes did not form a cluster within ${START_TIMEOUT_MS / 1000} s:\n${logs}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const stop = async () => void await Promise.all(nodes.map((s) => s.stop()));
  try {
    await formed();
  } catch (e) {
    await stop();
    throw e;
  }
  const nodeOf = async (name: string) => {
    const names = await Promise.all(nodes.map((s) => s.pid > 0 ? connectionNames(s.monitorUrl!) : undefined));
    return names.findIndex((l) => l?.includes(name) ?? false);
  };
  return { nodes, wsUrls: nodes.map((s) => s.wsUrl), urls: nodes.map((s) => s.url), nodeOf, formed, stop };
}

if (import.meta.main) {
  const i = Deno.args.indexOf("--cluster");
  const n = i < 0 ? 0 : Number(Deno.args[i + 1]);
  if (i >= 0 && !(Number.isInteger(n) && n >= 1)) {
    console.error(`scripts/nats_server.ts: --cluster must be an integer >= 1 (nodes), got ${JSON.stringify(Deno.args[i + 1] ?? "nothing")}`);
    Deno.exit(2);
  }
  const cluster = n ? await startNatsCluster(n) : undefined;
  const servers = cluster ? cluster.nodes : [await startNatsServer()];
  for (const s of servers) console.log(`nats-server pid ${s.pid}: ${s.url} and ${s.wsUrl}${s.monitorUrl ? `, monitor ${s.monitorUrl}` : ""}`);
  if (cluster) console.log(`cluster of ${n} formed; WebSocket URLs: ${cluster.wsUrls.join(",")}`);
  console.log("Ctrl-C stops it");
  Deno.addSignalListener("SIGINT", async () => {
    await Promise.all(servers.map((s) => s.stop()));
    Deno.exit(0);
  });
}
