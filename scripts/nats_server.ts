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
 * deno run -A scripts/nats_server.ts            # a server on free ports until Ctrl-C (no auth)
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

/**
 * Start nats-server on free loopback ports and wait until both listeners accept.
 * @throws {Error} Naming the binary and its log when it is missing, exits, or does not accept in time.
 */
export async function startNatsServer(opts: NatsServerOptions = {}): Promise<NatsServer> {
  const binary = opts.binary ?? DEFAULT_BINARY;
  const host = opts.host ?? "127.0.0.1";
  const maxPayload = opts.maxPayload ?? 1024 * 1024;
  if (!Number.isInteger(maxPayload) || maxPayload < 1024) {
    throw new RangeError(`startNatsServer: maxPayload must be an integer >= 1024 bytes, got ${maxPayload}`);
  }
  const port = freePort(host), wsPort = freePort(host);
  const httpPort = opts.monitor ? freePort(host) : undefined;
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
    opts.authorization ?? "",
  ].join("\n");
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

if (import.meta.main) {
  const server = await startNatsServer();
  console.log(`nats-server pid ${server.pid}: ${server.url} and ${server.wsUrl} (Ctrl-C stops it)`);
  Deno.addSignalListener("SIGINT", async () => {
    await server.stop();
    Deno.exit(0);
  });
}
