/**
 * The trainer's message path in isolation (bench/README.md "Memory"): one Web Worker and
 * this isolate exchange N comlink messages the way a rank and the coordinator do, no GPU.
 * RSS is printed every N/5 messages and the growth per message after the first fifth.
 * With GC=1 (and --v8-flags=--expose-gc) both isolates run a major collection every 1,000
 * messages.
 *
 *   deno run -A --no-check bench/memory_worker.ts <mode> [N]
 *   GC=1 deno run -A --no-check --v8-flags=--expose-gc bench/memory_worker.ts <mode> [N]
 *
 * Modes: `sink` (the worker calls a proxied sink N times without awaiting, as a rank sends
 * its batch events), `call` (this isolate calls the worker and awaits each reply, as the
 * coordinator's control calls), `frame` (a call whose reply transfers a 64 KiB
 * ArrayBuffer, as a rank's frame download), `post` (plain postMessage worker → here, no comlink).
 */
import * as Comlink from "comlink";

const MODES = ["sink", "call", "frame", "post"];
const FRAME_BYTES = 64 * 1024;
const gc = Deno.env.get("GC") ? (globalThis as { gc?: () => void }).gc : undefined;
if (Deno.env.get("GC") && !gc) throw new Error("bench/memory_worker.ts: GC=1 needs --v8-flags=--expose-gc");

interface Api {
  run(n: number, sink: { batch(e: object): void | Promise<void>; done(): void }): Promise<void>;
  post(n: number): void;
  ping(i: number): number;
  frame(i: number): Float32Array;
}

const inWorker = typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope !== "undefined";

if (inWorker) {
  let seen = 0;
  const tick = () => {
    if (gc && ++seen % 1000 === 0) gc();
  };
  const api: Api = {
    async run(n, sink) {
      for (let i = 0; i < n; i++) {
        // The fields of a BatchEvent (protocol.ts); a rank never awaits these, but steps
        // between them, so the replies arrive: wait for every 16th.
        const sent = sink.batch({ rank: 0, epoch: i >> 8, ms: 12.5, computeMs: 10.1, loss: 0.3, lr: 1e-3, samples: 64 });
        if (i % 16 === 15) await sent;
        tick();
      }
      sink.done();
    },
    post(n) {
      for (let i = 0; i < n; i++) {
        (globalThis as unknown as { postMessage(m: unknown): void }).postMessage({ kind: "batch", i, loss: 0.3 });
        tick();
      }
    },
    ping(i) {
      tick();
      return i + 1;
    },
    frame(i) {
      tick();
      const f = new Float32Array(FRAME_BYTES / 4);
      f[0] = i;
      return Comlink.transfer(f, [f.buffer]);
    },
  };
  Comlink.expose(api);
} else {
  const mode = Deno.args[0];
  const N = Number(Deno.args[1] ?? 100_000);
  if (!MODES.includes(mode)) {
    throw new RangeError(`bench/memory_worker.ts: mode must be one of ${MODES.join(", ")}, got ${JSON.stringify(mode)}`);
  }
  if (!Number.isInteger(N) || N < 5000 || N % 5 !== 0) {
    throw new RangeError(`bench/memory_worker.ts: N must be a multiple of 5, >= 5000, got ${Deno.args[1]}`);
  }
  const worker = new Worker(import.meta.url, { type: "module" });
  const api = Comlink.wrap<Api>(worker);
  const MiB = (b: number) => (b / 2 ** 20).toFixed(1);
  let received = 0, rssStart = 0;
  const onMessage = () => {
    received++;
    if (gc && received % 1000 === 0) gc();
    if (received % (N / 5) === 0) {
      const rss = Deno.memoryUsage().rss;
      if (received === N / 5) rssStart = rss;
      console.log(`${String(received).padStart(7)}  rss ${MiB(rss).padStart(6)} MiB  heap ${MiB(Deno.memoryUsage().heapUsed)} MiB`);
      if (received === N) {
        const grew = rss - rssStart;
        console.log(`${mode}${gc ? " (gc every 1000)" : ""}: ${(grew / (N * 0.8) / 1024).toFixed(3)} KiB/message after the first fifth`);
      }
    }
  };
  console.log(`bench/memory_worker ${mode}: ${N} messages`);
  if (mode === "sink") {
    await new Promise<void>((done) => {
      api.run(N, Comlink.proxy({ batch: onMessage, done }));
    });
  } else if (mode === "post") {
    await new Promise<void>((done) => {
      worker.addEventListener("message", (e: MessageEvent) => {
        if ((e.data as { kind?: string })?.kind !== "batch") return;
        onMessage();
        if (received === N) done();
      });
      api.post(N);
    });
  } else {
    for (let i = 0; i < N; i++) {
      if (mode === "call") await api.ping(i);
      else await api.frame(i);
      onMessage();
    }
  }
  worker.terminate();
}
