/**
 * The data-parallel trainer on the MNIST MLP (784-256-10, Adam 1e-3, batch 64), all ranks
 * on one adapter, 3 epochs over a subset of MNIST's training set; epochs 2 and 3 are
 * measured (the first compiles shaders and calibrates ElChe). The sweep and its targets
 * are bench/ddp_measure.ts; the program the ranks re-enter is bench/ddp_program.ts;
 * bench/ddp_page.ts runs the same in Chromium.
 *
 *   npx deno run -A --no-check bench/ddp.ts [--subset 6400] [--epochs 3] [--ranks 2,4] [--tag run1]
 *
 * Writes bench/results/<date>-ddp[-<tag>].json.
 */
import { setProgramArgs } from "../src/index.ts";
import { exitNow } from "../examples/exit.ts";
import { BATCH, sweep } from "./ddp_measure.ts";
import { ddpLines } from "./report.ts";
import { round } from "./workloads.ts";

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && Deno.args[i + 1] !== undefined ? Deno.args[i + 1] : fallback;
}

const SUBSET = Number(flag("subset", "6400"));
if (!Number.isInteger(SUBSET) || SUBSET < 256) throw new RangeError(`bench/ddp.ts: --subset must be an integer >= 256, got ${flag("subset", "")}`);
const EPOCHS = Number(flag("epochs", "3"));
if (!Number.isInteger(EPOCHS) || EPOCHS < 2) throw new RangeError(`bench/ddp.ts: --epochs must be an integer >= 2, got ${flag("epochs", "")}`);
const RANKS = flag("ranks", "2,4").split(",").map(Number);
if (!RANKS.every((r) => Number.isInteger(r) && r >= 2)) throw new RangeError(`bench/ddp.ts: --ranks must be integers >= 2, got ${flag("ranks", "")}`);

const t0 = performance.now();
const adapter = await navigator.gpu.requestAdapter();
const adapterName = adapter ? adapter.info.description || adapter.info.architecture : "none";
const loadBefore = Deno.loadavg();
console.log(`bench/ddp: MNIST MLP, ${SUBSET} samples, batch ${BATCH}, ${EPOCHS} epochs (all but the first measured), adapter ${adapterName}, load ${loadBefore.map((x) => x.toFixed(2)).join(" ")}`);
setProgramArgs({ subset: SUBSET });
const { builder } = await import("./ddp_program.ts");
const { runs, targets } = await sweep(builder, RANKS, EPOCHS, (line) => console.log(line));
const out = {
  runtime: `deno ${Deno.version.deno}`,
  adapter: adapterName,
  date: new Date().toISOString(),
  subset: SUBSET,
  batch: BATCH,
  epochs: EPOCHS,
  load: { before: loadBefore, after: Deno.loadavg() },
  totalS: round((performance.now() - t0) / 1e3, 1),
  runs,
  targets,
};
console.log("\n" + ddpLines(out, `Deno ${Deno.version.deno}, trainer, ${out.date.slice(0, 16)}Z`).join("\n"));
const tag = flag("tag", "");
const path = new URL(`./results/${out.date.slice(0, 10)}-ddp${tag ? `-${tag}` : ""}.json`, import.meta.url);
await Deno.mkdir(new URL("./results/", import.meta.url), { recursive: true });
await Deno.writeTextFile(path, JSON.stringify(out, null, 2) + "\n");
console.log(`wrote ${path.pathname}`);
exitNow(0); // Deno 2.9 sometimes segfaults tearing down after many WebGPU devices (examples/exit.ts)
