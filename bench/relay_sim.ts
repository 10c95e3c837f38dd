/**
 * How the coordinator's cost per reduce grows with the number of ranks, with and without
 * per-host relays (a relay sums its host's frames and masses and never
 * divides; the root divides once). Synthetic ranks, no GPU: each rank's frame is a real
 * bf16 wire frame of `--params` values, and the coordinator and relays run the same
 * accumulation code the trainer runs (`accumulateBf16` for bf16 frames, an f32 sum for
 * the relays' partial sums).
 *
 * For each W ∈ {2, 4, …, 256} it prints, per reduce:
 * - bytes into the coordinator (direct: W bf16 frames; relays: one f32 partial per host),
 * - the coordinator's CPU ms (measured, fastest of 5: the accumulation of what it receives),
 * - one relay's CPU ms (measured; relays run in parallel on their own hosts),
 * - the consensus' largest error against a float64 reference, direct and relayed (the
 *   relayed sum is exact up to f32 summation order: divide-once keeps it so),
 * - what the NATS server carries (in + out, the consensus fanned out by the server, so the
 *   coordinator publishes it once).
 *
 * The trainer's relays (run/relay.ts) are measured over a real nats-server by
 * bench/relay_nats.ts; they ship their sum in the round's wire dtype (bf16 on a bf16 round),
 * where this simulation sends f32 partials.
 *
 *   deno run -A --no-check bench/relay_sim.ts [--params 203530] [--per-host 4] [--max 256] [--json out.json]
 */
import { accumulateBf16, packBf16 } from "../src/tensor/mod.ts";
import { flag } from "./flags.ts";

interface Row {
  ranks: number;
  hosts: number;
  directInMiB: number;
  relayInMiB: number;
  directCpuMs: number;
  relayRootCpuMs: number;
  relayHostCpuMs: number;
  directMaxErr: number;
  relayMaxErr: number;
  serverMiB: number;
}


const P = flag("params", 203_530); // the 784-256-10 MLP
const PER_HOST = flag("per-host", 4);
const MAX = flag("max", 256);
const jsonAt = Deno.args.indexOf("--json");
const jsonPath = jsonAt >= 0 ? Deno.args[jsonAt + 1] : undefined;

/** A deterministic parameter vector for rank r (mulberry32), near a shared point as after training. */
function rankParams(r: number): Float32Array {
  let s = (0x9e3779b9 ^ (r * 0x85ebca6b)) >>> 0;
  const rand = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = new Float32Array(P);
  for (let i = 0; i < P; i++) out[i] = Math.sin(i * 0.001) + 0.01 * (rand() - 0.5);
  return out;
}

/**
 * Fastest ms of `reps` runs of `fn` (after one warm-up): the machine this runs on is shared,
 * and the minimum is the run that other processes disturbed least.
 */
function timeMs(fn: () => void, reps = 5): number {
  fn();
  let best = Infinity;
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    fn();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

const frames: Uint32Array[] = [];
const masses: number[] = [];
for (let r = 0; r < MAX; r++) {
  frames.push(packBf16(rankParams(r)));
  masses.push(40 + (r % 7) * 3); // n_k: batches since the last reduce, uneven as with ElChe
}
/** The bf16 values as f64 (what every rank sent), for the reference. */
const decoded = frames.map((w) => {
  const out = new Float64Array(P);
  const f = new Float32Array(1), u = new Uint32Array(f.buffer);
  for (let i = 0; i < P; i++) {
    u[0] = ((w[i >> 1] >>> ((i & 1) * 16)) & 0xffff) << 16;
    out[i] = f[0];
  }
  return out;
});

function maxErr(got: Float32Array, want: Float64Array): number {
  let m = 0;
  for (let i = 0; i < P; i++) m = Math.max(m, Math.abs(got[i] - want[i]));
  return m;
}

const rows: Row[] = [];
for (let W = 2; W <= MAX; W *= 2) {
  const hosts = Math.ceil(W / PER_HOST);
  const total = masses.slice(0, W).reduce((a, b) => a + b, 0);
  const ref = new Float64Array(P);
  for (let r = 0; r < W; r++) for (let i = 0; i < P; i++) ref[i] += masses[r] * decoded[r][i];
  for (let i = 0; i < P; i++) ref[i] /= total;

  // Direct: the coordinator folds every rank's bf16 frame with weight m_k / Σm (as averaging.ts).
  let direct = new Float32Array(P);
  const directCpuMs = timeMs(() => {
    direct = new Float32Array(P);
    for (let r = 0; r < W; r++) accumulateBf16(direct, frames[r], masses[r] / total);
  });

  // Relays: each host sums m_k·θ_k of its ranks in f32 (never divides); the root sums the
  // partials and divides once by Σm.
  const partials: Float32Array[] = [];
  const relayHostCpuMs = timeMs(() => {
    const acc = new Float32Array(P);
    for (let r = 0; r < Math.min(PER_HOST, W); r++) accumulateBf16(acc, frames[r], masses[r]);
  });
  for (let h = 0; h < hosts; h++) {
    const acc = new Float32Array(P);
    for (let r = h * PER_HOST; r < Math.min(W, (h + 1) * PER_HOST); r++) accumulateBf16(acc, frames[r], masses[r]);
    partials.push(acc);
  }
  let relayed = new Float32Array(P);
  const relayRootCpuMs = timeMs(() => {
    relayed = new Float32Array(P);
    for (const p of partials) for (let i = 0; i < P; i++) relayed[i] += p[i];
    const inv = 1 / total;
    for (let i = 0; i < P; i++) relayed[i] *= inv;
  });

  const MiB = 1024 * 1024;
  const bf16Bytes = Math.ceil(P / 2) * 4;
  rows.push({
    ranks: W,
    hosts,
    directInMiB: (W * bf16Bytes) / MiB,
    relayInMiB: (hosts * P * 4) / MiB,
    directCpuMs,
    relayRootCpuMs,
    relayHostCpuMs,
    directMaxErr: maxErr(direct, ref),
    relayMaxErr: maxErr(relayed, ref),
    // In: every frame; out: the consensus to every rank (bf16), fanned out by the server.
    serverMiB: (2 * W * bf16Bytes) / MiB,
  });
}

const fmt = (x: number, d = 1) => x.toFixed(d);
console.log(`relay simulation: ${P} params, ${PER_HOST} ranks per host (one relay per host)`);
console.log("| ranks | hosts | in, direct (MiB) | in, relays (MiB) | coord CPU direct (ms) | coord CPU relays (ms) | relay CPU (ms) | max err direct | max err relays | NATS server MiB/reduce |");
console.log("|---|---|---|---|---|---|---|---|---|---|");
for (const r of rows) {
  console.log(
    `| ${r.ranks} | ${r.hosts} | ${fmt(r.directInMiB)} | ${fmt(r.relayInMiB)} | ${fmt(r.directCpuMs)} | ${fmt(r.relayRootCpuMs)} | ${fmt(r.relayHostCpuMs)} | ${r.directMaxErr.toExponential(1)} | ${r.relayMaxErr.toExponential(1)} | ${fmt(r.serverMiB)} |`,
  );
}
if (jsonPath) Deno.writeTextFileSync(jsonPath, JSON.stringify({ params: P, perHost: PER_HOST, rows }, null, 2));
