/**
 * What the emulated link of bench/slow_link.ts really does, measured through it before the
 * runs: round-trip time of 1-byte pings and throughput of a bulk transfer each way, over TCP
 * from the ranks' namespace to a probe server on the coordinator's side (behind the same
 * delay proxy the ranks use).
 *
 *   server (coordinator side): `startProbeServer()` in the bench process
 *   client (ranks' side):      `ip netns exec <ns> deno run -A bench/link_probe.ts <host> <port> [MiB]`
 *                              prints one JSON line: { rttMs: [...], upMbit, downMbit }
 *
 * Protocol: "p" → "p" (ping); "u" + u32 n + n bytes → "k" (upload); "d" + u32 n → n bytes (download).
 */

async function readExact(conn: Deno.Conn, n: number, into?: Uint8Array): Promise<Uint8Array> {
  const buf = into ?? new Uint8Array(n);
  for (let off = 0; off < n;) {
    const got = await conn.read(buf.subarray(off, n));
    if (got === null) throw new Error(`bench/link_probe.ts: connection closed after ${off} of ${n} bytes`);
    off += got;
  }
  return buf;
}

async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  for (let off = 0; off < data.length;) off += await conn.write(data.subarray(off));
}

/** The probe's server: answers pings, swallows uploads, serves downloads. */
export function startProbeServer(hostname = "127.0.0.1"): { port: number; close: () => void } {
  const listener = Deno.listen({ hostname, port: 0 });
  (async () => {
    for await (const conn of listener) {
      (async () => {
        try {
          (conn as Deno.TcpConn).setNoDelay(true);
          const scratch = new Uint8Array(1 << 20);
          for (;;) {
            const [op] = await readExact(conn, 1);
            if (op === 0x70) await writeAll(conn, new Uint8Array([0x70]));
            else {
              const n = new DataView((await readExact(conn, 4)).buffer).getUint32(0);
              if (op === 0x75) {
                for (let left = n; left > 0; left -= Math.min(left, scratch.length)) {
                  await readExact(conn, Math.min(left, scratch.length), scratch);
                }
                await writeAll(conn, new Uint8Array([0x6b]));
              } else if (op === 0x64) {
                for (let left = n; left > 0; left -= Math.min(left, scratch.length)) {
                  await writeAll(conn, scratch.subarray(0, Math.min(left, scratch.length)));
                }
              } else throw new Error(`bench/link_probe.ts: unknown op ${op}`);
            }
          }
        } catch { /* client gone */ }
        try {
          conn.close();
        } catch { /* closed */ }
      })();
    }
  })().catch(() => {});
  return { port: (listener.addr as Deno.NetAddr).port, close: () => listener.close() };
}

/** The client: pings, then `mib` MiB up and down. */
export async function probe(hostname: string, port: number, mib = 4, pings = 20) {
  const conn = await Deno.connect({ hostname, port });
  conn.setNoDelay(true);
  const rttMs: number[] = [];
  for (let i = 0; i < pings; i++) {
    const t = performance.now();
    await writeAll(conn, new Uint8Array([0x70]));
    await readExact(conn, 1);
    rttMs.push(+(performance.now() - t).toFixed(2));
  }
  const n = mib * 1024 * 1024;
  const head = (op: number) => {
    const h = new Uint8Array(5);
    h[0] = op;
    new DataView(h.buffer).setUint32(1, n);
    return h;
  };
  const rtt = [...rttMs].sort((a, b) => a - b)[Math.floor(pings / 2)];
  let t = performance.now();
  await writeAll(conn, head(0x75));
  await writeAll(conn, new Uint8Array(n));
  await readExact(conn, 1);
  const upMs = performance.now() - t;
  t = performance.now();
  await writeAll(conn, head(0x64));
  await readExact(conn, n);
  const downMs = performance.now() - t;
  conn.close();
  // One round trip of each transfer is latency, not bandwidth.
  const mbit = (ms: number) => +((n * 8) / 1e6 / (Math.max(ms - rtt, 1) / 1e3)).toFixed(1);
  return {
    rttMs,
    rttMedianMs: rtt,
    mib,
    upMs: +upMs.toFixed(1),
    downMs: +downMs.toFixed(1),
    upMbit: mbit(upMs),
    downMbit: mbit(downMs),
  };
}

if (import.meta.main) {
  const [host, port, mib] = Deno.args;
  if (!host || !Number.isInteger(Number(port))) {
    console.error(`bench/link_probe.ts: expects <host> <port> [MiB], got ${JSON.stringify(Deno.args)}`);
    Deno.exit(2);
  }
  console.log(JSON.stringify(await probe(host, Number(port), Number(mib ?? 4))));
}
