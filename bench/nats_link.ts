/**
 * The NATS link's cost per call (bench/README.md "NATS link"): one call that carries a frame
 * to a rank and the same frame back (a reduce's wire: snapshot up, consensus down), side by
 * side with the same echo through a Web Worker's postMessage (structured clone, what worker
 * ranks pay today) and with a bare nats.js publish echo (no codec, chunks, HMAC: the floor
 * of NATS on this machine). Interleaved per repetition, so load hits all alike.
 *
 *   deno run -A --no-check bench/nats_link.ts [--sizes 1,4] [--reps 20] [--max-payload 1048576] [--tag t]
 *
 * Sizes are MB of f32 (10^6 bytes). The server is a private nats-server on loopback
 * (scripts/nats_server.ts), over WebSocket as browsers connect. Bytes are what the
 * coordinator's connection sent plus received per call (nats.js stats: payloads with our
 * chunk headers and MACs and NATS protocol lines); for the worker, the bytes cloned both ways.
 */
import { startRunServer } from "../test/util/nats_server.ts";
import { openCoordinator, serveRank } from "../src/distributed/nats/mod.ts";
import { arg } from "./flags.ts";

const sizes = arg("sizes", "1,4").split(",").map(Number);
const reps = Number(arg("reps", "20"));
const maxPayload = Number(arg("max-payload", String(1024 * 1024)));
const tag = arg("tag", "");

const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

const rs = await startRunServer(1, maxPayload);
const cnc = await rs.connectCoordinator();
const coord = await openCoordinator({ connection: cnc, run: rs.creds.run, runKey: rs.creds.runKey });
const link = await coord.link(0);
const rnc = await rs.connectRank(0);
const rank = await serveRank({ connection: rnc, creds: rs.creds.ranks[0], handler: { echo: (f: unknown) => f } });
await link.ready;

// The floor: a bare request/reply on a subject of the run (no codec, chunking or HMAC).
// A frame above max_payload cannot go bare: that row is skipped for it.
// The echo side is a second connection as the coordinator (a rank may not subscribe there).
const echoNc = await rs.connectCoordinator();
const [there, back] = [`flodl.${rs.creds.run}.bare.there`, `flodl.${rs.creds.run}.bare.back`];
echoNc.subscribe(there, { callback: (_e, m) => echoNc.publish(back, m.data) });
let onBack: (d: Uint8Array) => void = () => {};
cnc.subscribe(back, { callback: (_e, m) => onBack(m.data) });
await Promise.all([echoNc.flush(), cnc.flush()]);
const viaBare = (frame: Float32Array) =>
  new Promise<Uint8Array>((resolve) => {
    onBack = resolve;
    cnc.publish(there, new Uint8Array(frame.buffer, frame.byteOffset, frame.byteLength));
  });

const worker = new Worker(
  URL.createObjectURL(new Blob(["self.onmessage = (e) => self.postMessage(e.data);"], { type: "text/javascript" })),
  { type: "module" },
);
const viaWorker = (frame: Float32Array) =>
  new Promise<Float32Array>((resolve) => {
    worker.onmessage = (e) => resolve(e.data.params);
    worker.postMessage({ rank: 0, round: 1, dtype: "f32", params: frame });
  });

interface Row {
  contender: string;
  mb: number;
  ms: number[];
  bytes: number;
}
const rows: Row[] = [];
for (const mb of sizes) {
  const frame = new Float32Array(Math.round(mb * 1e6 / 4)).map((_, i) => Math.sin(i));
  const nats: Row = { contender: "nats link (codec + chunks + HMAC)", mb, ms: [], bytes: 0 };
  const raw: Row = { contender: "nats bare publish echo", mb, ms: [], bytes: 0 };
  const clone: Row = { contender: "worker postMessage (clone)", mb, ms: [], bytes: 2 * frame.byteLength };
  const fitsBare = frame.byteLength <= maxPayload - 1024;
  for (let r = -3; r < reps; r++) { // 3 warm-up repetitions, not recorded
    let s0 = cnc.stats(), t = performance.now();
    const back = await link.call("echo", [{ rank: 0, round: r, dtype: "f32", params: frame }]) as {
      params: Float32Array;
    };
    const dt = performance.now() - t, s1 = cnc.stats();
    if (back.params.length !== frame.length || back.params[7] !== frame[7]) throw new Error("nats link: echo differs");
    if (r >= 0) nats.ms.push(dt), nats.bytes = s1.outBytes - s0.outBytes + s1.inBytes - s0.inBytes;

    if (fitsBare) {
      s0 = cnc.stats(), t = performance.now();
      const m = await viaBare(frame);
      const dt2 = performance.now() - t, s2 = cnc.stats();
      if (m.byteLength !== frame.byteLength) throw new Error("bare: echo differs");
      if (r >= 0) raw.ms.push(dt2), raw.bytes = s2.outBytes - s0.outBytes + s2.inBytes - s0.inBytes;
    }

    t = performance.now();
    const w = await viaWorker(frame);
    if (r >= 0) clone.ms.push(performance.now() - t);
    if (w.length !== frame.length) throw new Error("worker: echo differs");
  }
  rows.push(nats, ...(fitsBare ? [raw] : []), clone);
}

worker.terminate();
await echoNc.close();
await rank.close();
await coord.close();
await rs.stop();

const workerMs = (mb: number) => median(rows.find((r) => r.mb === mb && r.contender.startsWith("worker"))!.ms);
console.log(
  `NATS link vs worker postMessage: ${reps} reps per point, max_payload ${maxPayload} B, median ms per call (frame there and back)`,
);
console.log("| frame | contender | median ms | min ms | MB/s (both ways) | bytes per call | × worker |");
console.log("|---|---|---|---|---|---|---|");
for (const r of rows) {
  const m = median(r.ms), mn = Math.min(...r.ms);
  console.log(
    `| ${r.mb} MB | ${r.contender} | ${m.toFixed(2)} | ${mn.toFixed(2)} | ${
      (2 * r.mb / (m / 1000)).toFixed(0)
    } | ${r.bytes} | ${(m / workerMs(r.mb)).toFixed(1)} |`,
  );
}
const out = `bench/results/${new Date().toISOString().slice(0, 10)}-nats-link${tag ? `-${tag}` : ""}.json`;
await Deno.writeTextFile(out, JSON.stringify({ reps, maxPayload, rows }, null, 1));
console.log(`wrote ${out}`);
