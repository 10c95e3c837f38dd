/**
 * The network benches' pieces that need no root and no GPU: the delay proxy
 * (bench/delay_proxy.ts) forwards every byte in order, both ways, never sooner than its
 * delay, and counts them; the link probe (bench/link_probe.ts) through it sees at least the
 * delay; nats-server's monitoring port (scripts/nats_server.ts `monitor`) answers /varz.
 * Lower bounds only: a loaded machine makes things slower, never faster than the delay.
 */
import { spawnDelayProxy, startDelayProxy } from "../../../bench/delay_proxy.ts";
import { probe, startProbeServer } from "../../../bench/link_probe.ts";
import { steadyShare } from "../../../bench/remote_runs.ts";
import { startNatsServer } from "../../../scripts/nats_server.ts";
import { assert, assertEquals } from "../../util/assert.ts";

/** An echo server on loopback. */
function echoServer() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const done = (async () => {
    for await (const c of listener) {
      (async () => {
        const buf = new Uint8Array(65536);
        try {
          for (let n; (n = await c.read(buf)) !== null;) {
            for (let off = 0; off < n;) off += await c.write(buf.subarray(off, n));
          }
        } catch { /* closed */ }
        c.close();
      })();
    }
  })().catch(() => {});
  return { port: (listener.addr as Deno.NetAddr).port, close: () => (listener.close(), done) };
}

async function readExact(c: Deno.Conn, n: number): Promise<Uint8Array> {
  const out = new Uint8Array(n);
  for (let off = 0; off < n;) {
    const got = await c.read(out.subarray(off));
    if (got === null) throw new Error(`closed after ${off} of ${n} bytes`);
    off += got;
  }
  return out;
}

Deno.test("delay proxy: 1 MiB echoed through it arrives intact and in order, counted both ways, no sooner than two delays", async () => {
  const echo = echoServer();
  const proxy = startDelayProxy({
    listen: { hostname: "127.0.0.1" },
    target: { hostname: "127.0.0.1", port: echo.port },
    oneWayMs: 40,
  });
  try {
    const data = new Uint8Array(1 << 20);
    for (let i = 0; i < data.length; i++) data[i] = (i * 2654435761) >>> 24;
    const c = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
    const t = performance.now();
    const writing = (async () => {
      for (let off = 0; off < data.length;) off += await c.write(data.subarray(off));
    })();
    const back = await readExact(c, data.length);
    const ms = performance.now() - t;
    await writing;
    c.close();
    assert(back.every((b, i) => b === data[i]), "every byte back, in order");
    assert(ms >= 80, `a round trip through a 40 ms each-way proxy took ${ms.toFixed(1)} ms, expected >= 80`);
    const bytes = proxy.bytes();
    assertEquals(bytes.toTarget, data.length, "bytes client → target");
    assertEquals(bytes.toClient, data.length, "bytes target → client");
  } finally {
    await proxy.close();
    await echo.close();
  }
});

Deno.test("delay proxy as its own process: the link probe through it sees RTT >= 2 × the delay; close() returns the bytes", async () => {
  const server = startProbeServer();
  const proxy = await spawnDelayProxy({
    listen: { hostname: "127.0.0.1" },
    target: { hostname: "127.0.0.1", port: server.port },
    oneWayMs: 15,
  });
  try {
    const p = await probe("127.0.0.1", proxy.port, 1, 5);
    assert(p.rttMs.every((ms) => ms >= 30), `every ping through 15 ms each way >= 30 ms, got ${p.rttMs.join(", ")}`);
    assert(p.upMbit > 0 && p.downMbit > 0, `throughput measured both ways: ${JSON.stringify(p)}`);
  } finally {
    const bytes = await proxy.close();
    server.close();
    // 5 pings, a 5-byte header and 1 MiB up; 5 pongs and 1 MiB down (+ a 1-byte ack and a 5-byte header).
    assertEquals(bytes.toTarget, 5 + 5 + (1 << 20) + 5, "bytes forwarded to the probe server");
    assertEquals(bytes.toClient, 5 + 1 + (1 << 20), "bytes forwarded to the probe client");
  }
});

Deno.test("delay proxy: a negative delay is refused naming the knob", () => {
  let msg = "";
  try {
    startDelayProxy({ listen: { hostname: "127.0.0.1" }, target: { hostname: "127.0.0.1", port: 1 }, oneWayMs: -1 });
  } catch (e) {
    msg = (e as Error).message;
  }
  assert(/oneWayMs must be a finite number >= 0, got -1/.test(msg), `refusal: ${msg}`);
});

Deno.test("nats-server with monitor: /varz answers with byte counters; without it there is no monitorUrl", async () => {
  const plain = await startNatsServer();
  try {
    assertEquals(plain.monitorUrl, undefined, "no monitoring port unless asked");
  } finally {
    await plain.stop();
  }
  const s = await startNatsServer({ monitor: true });
  try {
    assert(s.monitorUrl?.startsWith("http://127.0.0.1:"), `monitorUrl ${s.monitorUrl}`);
    const v = await (await fetch(`${s.monitorUrl}/varz`)).json();
    assert(
      typeof v.in_bytes === "number" && typeof v.out_bytes === "number",
      `varz has byte counters: ${Object.keys(v).join(",")}`,
    );
  } finally {
    await s.stop();
  }
});

Deno.test("steadyShare: reduce ms over the windows at the last anchor, a window's compute from its steps × ms per step", () => {
  // 2 ranks, 64-sample batches, 6400 samples = 50 steps per rank, 5000 ms of compute per rank: 100 ms a step.
  const run = {
    ranks: 2,
    samples: 6400,
    computeMs: 5000,
    anchors: [10, 20, 40, 40, 40],
    reduceLog: [
      { ms: 300, steps: [5, 5] },
      { ms: 300, steps: [10, 10] },
      { ms: 200, steps: [10, 10] },
      { ms: 100, steps: [10, 10] },
      { ms: 300, steps: [12, 8] },
    ],
  };
  const s = steadyShare(run, 64)!;
  assertEquals(s.reduces, 3, "the three reduces at anchor 40");
  // (200 + 100 + 300) ms over (10 + 10 + 10) steps × 100 ms.
  assert(Math.abs(s.share - 600 / 3000) < 1e-12, `share ${s.share}, expected 0.2`);
  assertEquals(
    steadyShare({ ...run, anchors: [10, 20, 40, 80, 160] }, 64),
    null,
    "one reduce at the last anchor: no steady state",
  );
});
