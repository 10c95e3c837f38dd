/**
 * Worker ranks vs remote ranks on loopback, side by side in one sitting (issue 10,
 * "Performance"): per-reduce time and bytes of the trainer bench's MNIST MLP (784-256-10,
 * 203,530 parameters, bench/ddp_program.ts) with W ranks as Web Workers of this process,
 * then with rank 0 a worker and ranks 1..W-1 separate Deno processes (bench/net_rank.ts)
 * joined over a private nats-server on loopback (WebSocket, HMAC on every chunk). Rank 0 is
 * always local: the coordinator takes the model layout and initial state from it.
 *
 *   deno run -A --no-check bench/remote_ranks.ts [--ranks 2,4] [--modes cpu-sync] [--wire f32,bf16]
 *       [--subset 1280] [--epochs 2] [--reps 1] [--tag t]
 *
 * Contenders interleave per (ranks, mode, wire, rep), the order flipping every rep.
 * Writes bench/results/<date>-remote-ranks[-<tag>].json and prints a markdown table.
 */
import { type ElCheMode, setProgramArgs } from "../src/index.ts";
import { exitNow } from "../examples/exit.ts";
import { BATCH, type DdpRun, runLine, runOnce } from "./ddp_measure.ts";
import { type RemoteRun, runRemote } from "./remote_runs.ts";
import { round } from "./workloads.ts";

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && Deno.args[i + 1] !== undefined ? Deno.args[i + 1] : fallback;
}
function intFlag(name: string, fallback: number, min: number): number {
  const v = Number(flag(name, String(fallback)));
  if (!Number.isInteger(v) || v < min) {
    throw new RangeError(`bench/remote_ranks.ts: --${name} must be an integer >= ${min}, got ${flag(name, "")}`);
  }
  return v;
}

const SUBSET = intFlag("subset", 1280, 256);
const EPOCHS = intFlag("epochs", 2, 2);
const REPS = intFlag("reps", 1, 1);
const RANKS = flag("ranks", "2,4").split(",").map(Number);
if (!RANKS.every((r) => Number.isInteger(r) && r >= 2)) {
  throw new RangeError(`bench/remote_ranks.ts: --ranks must be integers >= 2, got ${flag("ranks", "")}`);
}
const MODES = flag("modes", "cpu-sync").split(",") as ElCheMode[];
const KNOWN = ["cpu-sync", "cpu-cadence", "cpu-async"];
if (!MODES.every((m) => KNOWN.includes(m))) {
  throw new RangeError(`bench/remote_ranks.ts: --modes must be among ${KNOWN.join(",")}, got ${flag("modes", "")}`);
}
const WIRES = flag("wire", "f32,bf16").split(",");
if (!WIRES.every((w) => w === "f32" || w === "bf16")) {
  throw new RangeError(`bench/remote_ranks.ts: --wire must be f32 and/or bf16, got ${flag("wire", "")}`);
}

const t0 = performance.now();
const adapter = await navigator.gpu.requestAdapter();
const adapterName = adapter ? adapter.info.description || adapter.info.architecture : "none";
const loadBefore = Deno.loadavg();
console.log(
  `bench/remote_ranks: MNIST MLP 784-256-10, ${SUBSET} samples, batch ${BATCH}, ${EPOCHS} epochs (all but the first measured), ` +
    `adapter ${adapterName}, load ${loadBefore.map((x) => x.toFixed(2)).join(" ")}`,
);
setProgramArgs({ subset: SUBSET });
const { builder } = await import("./ddp_program.ts");

type Row = DdpRun & Partial<RemoteRun> & { rep: number };
const rows: Row[] = [];
const date = new Date().toISOString();
const tag = flag("tag", "");
const path = new URL(`./results/${date.slice(0, 10)}-remote-ranks${tag ? `-${tag}` : ""}.json`, import.meta.url);
await Deno.mkdir(new URL("./results/", import.meta.url), { recursive: true });
/** The sitting so far (written after every run, so a sitting cut short keeps its runs). */
const save = (ratios: string[] = []) => {
  const out = {
    runtime: `deno ${Deno.version.deno}`,
    adapter: adapterName,
    date,
    subset: SUBSET,
    batch: BATCH,
    epochs: EPOCHS,
    load: { before: loadBefore, after: Deno.loadavg() },
    totalS: round((performance.now() - t0) / 1e3, 1),
    runs: rows,
    ratios,
  };
  Deno.writeTextFileSync(path, JSON.stringify(out, null, 2) + "\n");
  return out;
};
for (const ranks of RANKS) {
  for (const mode of MODES) {
    for (const wire of WIRES) {
      for (let rep = 0; rep < REPS; rep++) {
        const order = rep % 2 === 0 ? ["worker", "remote"] : ["remote", "worker"];
        for (const who of order) {
          const c = { ranks, mode, bf16: wire === "bf16", remote: who === "remote" ? ranks - 1 : 0 };
          const r = who === "remote" ? await runRemote(builder, c, EPOCHS) : await runOnce(builder.clone(), c, EPOCHS);

          const rr: Row = { ...r, rep };
          const nats = rr.remote
            ? `  NATS in ${rr.natsInBytesPerReduce} B/reduce, out ${rr.natsOutBytesPerReduce}`
            : "";
          rows.push(rr);
          save();
          console.log(`${who.padEnd(6)}${runLine(r)}  median ${r.reduceMsMedian} ms/reduce${nats}`);
        }
      }
    }
  }
}

const fx = (x: number | null | undefined, d = 1) => (x === null || x === undefined ? "—" : x.toFixed(d));
const lines = [
  "| ranks | rank 1.. | mode | wire | reduces | ms/reduce mean | median | averaging ms | frame bytes/reduce | NATS in / out bytes/reduce | samples/s | (avg+wire)/compute |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|",
];
for (const r of rows) {
  const nats = r.remote ? `${r.natsInBytesPerReduce} / ${r.natsOutBytesPerReduce}` : "—";
  lines.push(
    `| ${r.ranks} | ${r.remote ? `remote ×${r.remote}` : "workers"} | ${r.mode} | ${
      r.bf16 ? "bf16" : "f32"
    } | ${r.reduces} | ` +
      `${fx(r.reduceMs)} | ${fx(r.reduceMsMedian)} | ${fx(r.averageMs, 2)} | ${
        r.wireBytesPerReduce ?? "—"
      } | ${nats} | ` +
      `${fx(r.samplesPerS, 0)} | ${fx(r.overheadShare * 100)}% |`,
  );
}
const ratios = RANKS.flatMap((ranks) =>
  MODES.flatMap((mode) =>
    WIRES.map((wire) => {
      const pick = (remote: boolean) =>
        rows.filter((r) =>
          r.ranks === ranks && r.mode === mode && r.bf16 === (wire === "bf16") && (r.remote > 0) === remote
        );
      const mean = (xs: Row[]) => xs.reduce((a, r) => a + r.reduceMs, 0) / xs.length;
      return `${ranks}r ${mode} ${wire}: remote/worker ms per reduce ${
        (mean(pick(true)) / mean(pick(false))).toFixed(2)
      }×`;
    })
  )
);
console.log("\n" + lines.join("\n") + "\n\n" + ratios.join("\n"));
const out = save(ratios);
console.log(`load after ${out.load.after.map((x) => x.toFixed(2)).join(" ")}, ${out.totalS} s`);
console.log(`wrote ${path.pathname}`);
exitNow(0); // Deno 2.9 sometimes segfaults tearing down after many WebGPU devices (examples/exit.ts)
