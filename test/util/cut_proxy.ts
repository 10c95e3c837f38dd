/**
 * A TCP proxy that cuts a link on cue: what a Wi-Fi blink or a cable pulled does to a rank,
 * made by construction (this machine's kernel has no netem). It accepts on a loopback port,
 * connects each client to `target` and forwards bytes both ways until told otherwise:
 * - `cut(ms)`: every open connection is closed at once (both ends see it reset), and for
 *   `ms` a new one is accepted and closed straight away, as a link that is down;
 * - `hold(ms)`: nothing is forwarded for `ms` in either direction (a black hole: the TCP
 *   connections stay open, their bytes wait), then everything held goes through in order.
 * Used by the link-cut test and bench/fault_soak.ts; stopped with `close()`.
 */

/** A running proxy. */
export interface CutProxy {
  /** The port it listens on. */
  readonly port: number;
  /** Connections accepted so far (a reconnect is one more). */
  readonly accepted: number;
  /** Close every connection now and refuse new ones for `ms`; resolves when the link is up again. */
  cut(ms: number): Promise<void>;
  /** Forward nothing for `ms`, then go on; resolves when the link flows again. */
  hold(ms: number): Promise<void>;
  /** Stop listening and close every connection. */
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function shut(c: Deno.Conn): void {
  try {
    c.close();
  } catch { /* closed */ }
}

/**
 * Start a proxy on `hostname` (a free port) in front of `target`.
 * @throws {RangeError} For a cut or hold whose duration is not a finite number >= 0.
 */
export function startCutProxy(target: { hostname: string; port: number }, hostname = "127.0.0.1"): CutProxy {
  const listener = Deno.listen({ hostname, port: 0 });
  const pairs = new Set<[Deno.Conn, Deno.Conn]>();
  let downUntil = 0, accepted = 0;
  /** While a hold lasts: the promise every pump waits on before it writes. */
  let held: Promise<void> | undefined;

  async function pump(src: Deno.Conn, dst: Deno.Conn): Promise<void> {
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await src.read(buf);
        if (n === null) break;
        while (held) await held;
        for (let off = 0; off < n;) off += await dst.write(buf.subarray(off, n));
      }
    } catch { /* one side closed */ }
    shut(src);
    shut(dst);
  }

  const accepting = (async () => {
    for await (const client of listener) {
      if (Date.now() < downUntil) {
        shut(client);
        continue;
      }
      accepted++;
      let server: Deno.Conn;
      try {
        server = await Deno.connect(target);
      } catch {
        shut(client);
        continue;
      }
      const pair: [Deno.Conn, Deno.Conn] = [client, server];
      pairs.add(pair);
      void Promise.all([pump(client, server), pump(server, client)]).then(() => pairs.delete(pair));
    }
  })().catch(() => {});

  const checked = (what: string, ms: number) => {
    if (!(Number.isFinite(ms) && ms >= 0)) throw new RangeError(`CutProxy.${what}: ms must be a finite number >= 0, got ${ms}`);
  };
  return {
    port: (listener.addr as Deno.NetAddr).port,
    get accepted() {
      return accepted;
    },
    async cut(ms) {
      checked("cut", ms);
      downUntil = Date.now() + ms;
      for (const [a, b] of pairs) shut(a), shut(b);
      await sleep(ms);
    },
    async hold(ms) {
      checked("hold", ms);
      let release!: () => void;
      held = new Promise((r) => (release = r));
      await sleep(ms);
      held = undefined;
      release();
    },
    async close() {
      listener.close();
      for (const [a, b] of pairs) shut(a), shut(b);
      await accepting;
    },
  };
}
