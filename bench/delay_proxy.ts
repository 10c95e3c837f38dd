/**
 * A userspace TCP delay line (bench/slow_link.ts): accepts on `listen`, connects each client
 * to `target`, and forwards every chunk read from either side `oneWayMs` later, in order,
 * in both directions; counts the bytes it forwarded. It stands in for netem's `delay`,
 * which this machine's kernel lacks (`tc qdisc add ... netem` → "Specified qdisc kind is
 * unknown"). It adds latency only: bandwidth is the tbf qdiscs' job (bench/netns.ts), and
 * reading is not throttled, so a chunk's delay is `oneWayMs` plus the proxy's own timer
 * slack (measured by bench/link_probe.ts, never assumed).
 *
 * ```sh
 * deno run -A bench/delay_proxy.ts <listen host:port> <target host:port> <one-way ms>   # stops when stdin closes
 * ```
 */

/** A running proxy. */
export interface DelayProxy {
  /** The port it listens on (useful with `port: 0`). */
  readonly port: number;
  /** Bytes forwarded client → target (from the ranks) and target → client (to the ranks). */
  bytes(): { toTarget: number; toClient: number };
  /** Stop listening and close every connection. */
  close(): Promise<void>;
}

export interface DelayProxyOptions {
  listen: { hostname: string; port?: number };
  target: { hostname: string; port: number };
  /** Delay added to every chunk in each direction, ms (RTT / 2). */
  oneWayMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  for (let off = 0; off < data.length;) off += await conn.write(data.subarray(off));
}

/** Forward `src` → `dst`, each chunk `delayMs` after it was read; `count` is told each chunk's size. */
async function pump(src: Deno.Conn, dst: Deno.Conn, delayMs: number, count: (n: number) => void): Promise<void> {
  const queue: { due: number; data: Uint8Array }[] = [];
  let wake: (() => void) | undefined, ended = false;
  const reader = (async () => {
    try {
      const buf = new Uint8Array(256 * 1024);
      for (;;) {
        const n = await src.read(buf);
        if (n === null) break;
        queue.push({ due: performance.now() + delayMs, data: buf.slice(0, n) });
        wake?.();
      }
    } catch { /* the other side closed it */ }
    ended = true;
    wake?.();
  })();
  try {
    for (;;) {
      if (!queue.length) {
        if (ended) break;
        await new Promise<void>((r) => (wake = r));
        wake = undefined;
        continue;
      }
      // Never sooner than due (a timer may fire a fraction of a ms early).
      for (let wait; (wait = queue[0].due - performance.now()) > 0;) await sleep(Math.ceil(wait));
      const { data } = queue.shift()!;
      await writeAll(dst, data);
      count(data.length);
    }
    await dst.closeWrite().catch(() => {});
  } catch {
    // dst is gone: stop reading src too (its reader would otherwise wait for data forever).
    try {
      src.close();
    } catch { /* closed */ }
  }
  await reader;
}

/** Start a delay proxy. */
export function startDelayProxy(opts: DelayProxyOptions): DelayProxy {
  if (!(Number.isFinite(opts.oneWayMs) && opts.oneWayMs >= 0)) {
    throw new RangeError(`startDelayProxy: oneWayMs must be a finite number >= 0, got ${opts.oneWayMs}`);
  }
  const listener = Deno.listen({ hostname: opts.listen.hostname, port: opts.listen.port ?? 0 });
  const conns = new Set<Deno.Conn>();
  const pumps = new Set<Promise<void>>();
  let toTarget = 0, toClient = 0;
  const accepting = (async () => {
    for await (const client of listener) {
      let target: Deno.Conn;
      try {
        target = await Deno.connect(opts.target);
      } catch {
        client.close();
        continue;
      }
      for (const c of [client, target]) {
        conns.add(c);
        try {
          (c as Deno.TcpConn).setNoDelay(true);
        } catch { /* not TCP */ }
      }
      const both = Promise.all([
        pump(client, target, opts.oneWayMs, (n) => (toTarget += n)),
        pump(target, client, opts.oneWayMs, (n) => (toClient += n)),
      ]).then(() => {
        for (const c of [client, target]) {
          conns.delete(c);
          try {
            c.close();
          } catch { /* closed */ }
        }
      });
      pumps.add(both);
      both.then(() => pumps.delete(both));
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    bytes: () => ({ toTarget, toClient }),
    async close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      await accepting;
      await Promise.all(pumps);
    },
  };
}

/**
 * Run the proxy as its own process (its event loop then waits on nothing but the link: in
 * the coordinator's process, averaging and HMAC checks would stretch its delays), at
 * `nice` (negative: ahead of the training processes, as a network card would be; needs
 * root). `close()` stops it and returns the bytes it forwarded. Its pid is kept in
 * `livePids` while it runs (for a signal handler to kill).
 */
export async function spawnDelayProxy(opts: DelayProxyOptions & { nice?: number }, livePids?: Set<number>): Promise<{
  port: number;
  pid: number;
  close: () => Promise<{ toTarget: number; toClient: number }>;
}> {
  const self = new URL(import.meta.url).pathname;
  const argv = [
    ...(opts.nice ? ["nice", "-n", String(opts.nice)] : []),
    Deno.execPath(),
    "run",
    "-A",
    "--no-check",
    self,
    `${opts.listen.hostname}:${opts.listen.port ?? 0}`,
    `${opts.target.hostname}:${opts.target.port}`,
    String(opts.oneWayMs),
  ];
  const child = new Deno.Command(argv[0], { args: argv.slice(1), stdin: "piped", stdout: "piped", stderr: "piped" })
    .spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const nextLine = async (): Promise<string> => {
    for (;;) {
      const i = text.indexOf("\n");
      if (i >= 0) {
        const line = text.slice(0, i);
        text = text.slice(i + 1);
        return line;
      }
      const { value, done } = await lines.read();
      if (done) {
        throw new Error(`bench/delay_proxy.ts (pid ${child.pid}) ended: ${await new Response(child.stderr).text()}`);
      }
      text += value;
    }
  };
  livePids?.add(child.pid);
  child.status.then(() => livePids?.delete(child.pid));
  const first = JSON.parse(await nextLine()) as { port: number };
  const stdin = child.stdin.getWriter();
  return {
    port: first.port,
    pid: child.pid,
    async close() {
      await stdin.close().catch(() => {}); // the child's signal to stop
      const bytes = JSON.parse(await nextLine());
      await child.status;
      await child.stderr.cancel().catch(() => {});
      return bytes;
    },
  };
}

if (import.meta.main) {
  // One JSON line { port } when listening; when stdin closes (the parent's stop), one JSON
  // line with the bytes forwarded, then exit.
  const [listen, target, ms] = Deno.args;
  const hp = (s: string | undefined, what: string) => {
    const m = /^(.+):(\d+)$/.exec(s ?? "");
    if (!m) throw new TypeError(`bench/delay_proxy.ts: ${what} must be host:port, got ${JSON.stringify(s)}`);
    return { hostname: m[1], port: Number(m[2]) };
  };
  const p = startDelayProxy({
    listen: hp(listen, "the listen address"),
    target: hp(target, "the target"),
    oneWayMs: Number(ms ?? "10"),
  });
  console.log(JSON.stringify({ port: p.port }));
  for await (const _ of Deno.stdin.readable) { /* until the parent closes it */ }
  const bytes = p.bytes();
  await p.close();
  console.log(JSON.stringify(bytes));
  Deno.exit(0);
}
