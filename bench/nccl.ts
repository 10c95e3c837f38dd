/**
 * Per-reduce time of the nccl-* collective (ranks reduce-scatter through a
 * SharedArrayBuffer slab, src/distributed/coordinator/reduce/reduce_nccl.ts) against the cpu-*
 * plane (frames through the coordinator), f32 both, at 2 and 4 ranks on the trainer
 * bench's MNIST MLP (bench/ddp_program.ts, 203,530 parameters). Contenders are interleaved
 * per rank count, so machine load hits them alike; every epoch after the first is measured.
 *
 *   deno run -A --no-check bench/nccl.ts [--subset 3200] [--epochs 3] [--ranks 2,4] [--tag t]
 *
 * Writes bench/results/<date>-nccl[-<tag>].json. Target (issue 12): the collective's
 * per-reduce time at most half of cpu-*'s.
 */
import { type ElCheMode, setProgramArgs } from "../src/index.ts";
import { exitNow } from "../examples/exit.ts";
import { BATCH, type DdpRun, runLine, runOnce } from "./ddp_measure.ts";
import { round } from "./workloads.ts";

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && Deno.args[i + 1] !== undefined ? Deno.args[i + 1] : fallback;
}

const SUBSET = Number(flag("subset", "3200"));
if (!Number.isInteger(SUBSET) || SUBSET < 256) throw new RangeError(`bench/nccl.ts: --subset must be an integer >= 256, got ${flag("subset", "")}`);
const EPOCHS = Number(flag("epochs", "3"));
if (!Number.isInteger(EPOCHS) || EPOCHS < 2) throw new RangeError(`bench/nccl.ts: --epochs must be an integer >= 2, got ${flag("epochs", "")}`);
const RANKS = flag("ranks", "2,4").split(",").map(Number);
if (!RANKS.every((r) => Number.isInteger(r) && r >= 2)) throw new RangeError(`bench/nccl.ts: --ranks must be integers >= 2, got ${flag("ranks", "")}`);

/** Each nccl-* mode beside the cpu-* mode with the same pacing. */
const PAIRS: [ElCheMode, ElCheMode][] = [["cpu-sync", "nccl-sync"], ["cpu-cadence", "nccl-cadence"]];

const t0 = performance.now();
const adapter = await navigator.gpu.requestAdapter();
const adapterName = adapter ? adapter.info.description || adapter.info.architecture : "none";
const loadBefore = Deno.loadavg();
console.log(`bench/nccl: MNIST MLP, ${SUBSET} samples, batch ${BATCH}, ${EPOCHS} epochs (all but the first measured), adapter ${adapterName}, load ${loadBefore.map((x) => x.toFixed(2)).join(" ")}`);
setProgramArgs({ subset: SUBSET });
const { builder } = await import("./ddp_program.ts");
const runs: DdpRun[] = [];
const pairs: { ranks: number; cpu: ElCheMode; nccl: ElCheMode; cpuMs: number; ncclMs: number; ratio: number }[] = [];
for (const ranks of RANKS) {
  for (const [cpu, nccl] of PAIRS) {
    const a = await runOnce(builder, { ranks, mode: cpu, bf16: false }, EPOCHS);
    console.log(runLine(a));
    const b = await runOnce(builder, { ranks, mode: nccl, bf16: false }, EPOCHS);
    console.log(runLine(b));
    runs.push(a, b);
    pairs.push({ ranks, cpu, nccl, cpuMs: a.reduceMs, ncclMs: b.reduceMs, ratio: round(b.reduceMs / a.reduceMs, 3) });
  }
}
console.log("\nper-reduce ms (mean over the measured epochs), nccl / cpu:");
for (const p of pairs) console.log(`  ${p.ranks}r ${p.nccl.padEnd(12)} ${p.ncclMs.toFixed(2).padStart(7)} ms  vs ${p.cpu.padEnd(11)} ${p.cpuMs.toFixed(2).padStart(7)} ms  = ${p.ratio.toFixed(2)}x`);
const out = {
  runtime: `deno ${Deno.version.deno}`,
  adapter: adapterName,
  date: new Date().toISOString(),
  subset: SUBSET,
  batch: BATCH,
  epochs: EPOCHS,
  load: { before: loadBefore, after: Deno.loadavg() },
  totalS: round((performance.now() - t0) / 1e3, 1),
  pairs,
  target: { target: "nccl-* per-reduce ms <= 0.5x cpu-* (f32)", met: pairs.every((p) => p.ratio <= 0.5) },
  runs,
};
const tag = flag("tag", "");
const path = new URL(`./results/${out.date.slice(0, 10)}-nccl${tag ? `-${tag}` : ""}.json`, import.meta.url);
await Deno.mkdir(new URL("./results/", import.meta.url), { recursive: true });
await Deno.writeTextFile(path, JSON.stringify(out, null, 2) + "\n");
console.log(`wrote ${path.pathname}`);
exitNow(0); // Deno sometimes segfaults tearing down after many WebGPU devices (examples/exit.ts)
