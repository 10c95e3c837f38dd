/**
 * Cold start (issue 24, item 1): for each ddp-bench model, in a fresh process each, the time
 * from launch to the first training step, solo and with 2 worker ranks, on Deno's adapter.
 * Solo runs split it into the program (imports and data), the device, the pipeline compiles
 * (count, Σ ms, the slowest) and the rest of the first step, and gives the median of the
 * steps after it (what a cheaper compile must not slow). Writes a markdown table to stdout and
 * the figures to bench/results/<date>-cold-start[-<tag>].json.
 *
 * On lavapipe a pipeline compiles in two halves: NIR when it is created (Deno blocks in
 * `createComputePipeline`: the "compiles" columns) and LLVM at its first dispatch (inside the
 * "rest"). Mesa keeps the second half in its disk cache, so a machine's first run is the slow
 * one. `--cache cold` (the default) gives every process an empty cache of its own: what a
 * fresh machine, a new user or a CI run sees. `--cache warm` runs each configuration once
 * untimed on a cache of the sitting's own, then times it on that cache: every later run.
 *
 *   deno run -A --no-check bench/cold_start.ts [--models mlp,gpt-nano] [--ranks 1,2]
 *     [--cache cold|warm] [--steps 4] [--tag t]
 */
import { MODELS, type ModelName } from "../src/zoo/mod.ts";
import type { ColdStart } from "./cold_start_run.ts";

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && Deno.args[i + 1] ? Deno.args[i + 1] : fallback;
}
const models = flag("models", MODELS.join(",")).split(",") as ModelName[];
for (const m of models) if (!MODELS.includes(m)) throw new RangeError(`cold_start.ts: --models: ${JSON.stringify(m)} is not one of ${MODELS.join(", ")}`);
const rankCounts = flag("ranks", "1,2").split(",").map(Number);
for (const r of rankCounts) if (!Number.isInteger(r) || r < 1) throw new RangeError(`cold_start.ts: --ranks: ${r} is not an integer >= 1`);
const cache = flag("cache", "cold");
if (cache !== "cold" && cache !== "warm") throw new RangeError(`cold_start.ts: --cache must be cold or warm, got ${JSON.stringify(cache)}`);
const steps = flag("steps", "4");
if (!(Number(steps) >= 1 && Number.isInteger(Number(steps)))) throw new RangeError(`cold_start.ts: --steps must be an integer >= 1, got ${JSON.stringify(steps)}`);
const tag = flag("tag", "");

const adapter = await navigator.gpu?.requestAdapter();
const adapterName = adapter ? adapter.info.description || adapter.info.architecture || adapter.info.vendor : "none";
const load = () => Deno.loadavg().map((x) => x.toFixed(1)).join(" ");
const loadBefore = load();
const dir = await Deno.makeTempDir({ prefix: "flodl-cold-" });
const results: ColdStart[] = [];
const s = (ms: number) => (ms / 1000).toFixed(1);
const rows: string[] = [];
for (const model of models) {
  for (const ranks of rankCounts) {
    const out = `${dir}/${model}-${ranks}.json`;
    const cacheDir = cache === "warm" ? `${dir}/mesa-cache` : await Deno.makeTempDir({ dir, prefix: "mesa-" });
    const once = () =>
      new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--no-check", new URL("./cold_start_one.ts", import.meta.url).pathname, model, String(ranks), out, steps],
        env: { MESA_SHADER_CACHE_DIR: cacheDir },
        stdout: "null",
        stderr: "piped",
      }).output();
    if (cache === "warm") await once();
    const { code, stderr } = await once();
    if (code !== 0) {
      console.error(`cold_start.ts: ${model} × ${ranks} failed (exit ${code}): ${new TextDecoder().decode(stderr).trim().split("\n").slice(-3).join(" | ")}`);
      continue;
    }
    const r = JSON.parse(await Deno.readTextFile(out)) as ColdStart;
    results.push(r);
    const first = Math.max(...r.firstStepMs);
    const step = r.steadyStepMs.map((x) => x.toFixed(0)).join(", ");
    if (r.compiles) {
      const total = r.compiles.reduce((a, c) => a + c.ms, 0);
      const slow = [...r.compiles].sort((a, b) => b.ms - a.ms)[0];
      const rest = first - r.deviceMs! - total;
      rows.push(`| ${model} | 1 | ${s(first)} | ${s(r.programMs)} | ${s(r.deviceMs! - r.programMs)} | ${r.compiles.length} | ${s(total)} | ${slow ? `${s(slow.ms)} ${slow.key}` : "—"} | ${s(rest)} | ${step} |`);
    } else {
      rows.push(`| ${model} | ${ranks} | ${s(first)} (ranks: ${r.firstStepMs.map(s).join(", ")}) | ${s(r.programMs)} | — | — | — | — | — | ${step} |`);
    }
    console.error(rows[rows.length - 1]);
  }
}
await Deno.remove(dir, { recursive: true });
console.log(`Cold start on ${adapterName} (Deno ${Deno.version.deno}), Mesa cache ${cache}, load ${loadBefore} before, ${load()} after; seconds from launch, steps in ms:\n`);
console.log("| Model | Ranks | First step | Program + data | Device | Compiles | Σ compile | Slowest compile | Rest | Later steps (median) |");
console.log("|---|---|---|---|---|---|---|---|---|---|");
for (const r of rows) console.log(r);
const stamp = new Date().toISOString().slice(0, 10);
const path = new URL(`./results/${stamp}-cold-start${tag ? `-${tag}` : ""}.json`, import.meta.url).pathname;
await Deno.writeTextFile(path, JSON.stringify({ adapter: adapterName, deno: Deno.version.deno, cache, loadBefore, loadAfter: load(), results }, null, 1) + "\n");
console.log(`\nwrote ${path}`);
