/**
 * Cold start (issue 24, item 1): for each ddp-bench model, in a fresh process each, the time
 * from launch to the first training step, solo and with 2 worker ranks, on Deno's adapter.
 * Solo runs split it into the program (imports and data), the device, the pipeline compiles
 * (count, Σ ms, the slowest) and the rest of the first step. Writes a markdown table to
 * stdout and the figures to bench/results/<date>-cold-start.json.
 *
 *   deno run -A --no-check bench/cold_start.ts [--models mlp,gpt-nano] [--ranks 1,2]
 */
import { MODELS, type ModelName } from "../src/zoo/mod.ts";
import type { ColdStart } from "./cold_start_one.ts";

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && Deno.args[i + 1] ? Deno.args[i + 1] : fallback;
}
const models = flag("models", MODELS.join(",")).split(",") as ModelName[];
for (const m of models) if (!MODELS.includes(m)) throw new RangeError(`cold_start.ts: --models: ${JSON.stringify(m)} is not one of ${MODELS.join(", ")}`);
const rankCounts = flag("ranks", "1,2").split(",").map(Number);
for (const r of rankCounts) if (!Number.isInteger(r) || r < 1) throw new RangeError(`cold_start.ts: --ranks: ${r} is not an integer >= 1`);

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
    const { code, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--no-check", new URL("./cold_start_one.ts", import.meta.url).pathname, model, String(ranks), out],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (code !== 0) {
      console.error(`cold_start.ts: ${model} × ${ranks} failed (exit ${code}): ${new TextDecoder().decode(stderr).trim().split("\n").slice(-3).join(" | ")}`);
      continue;
    }
    const r = JSON.parse(await Deno.readTextFile(out)) as ColdStart;
    results.push(r);
    const first = Math.max(...r.firstStepMs);
    if (r.compiles) {
      const total = r.compiles.reduce((a, c) => a + c.ms, 0);
      const slow = [...r.compiles].sort((a, b) => b.ms - a.ms)[0];
      const rest = first - r.deviceMs! - total;
      rows.push(`| ${model} | 1 | ${s(first)} | ${s(r.programMs)} | ${s(r.deviceMs! - r.programMs)} | ${r.compiles.length} | ${s(total)} | ${slow ? `${s(slow.ms)} ${slow.key}` : "—"} | ${s(rest)} |`);
    } else {
      rows.push(`| ${model} | ${ranks} | ${s(first)} (ranks: ${r.firstStepMs.map(s).join(", ")}) | ${s(r.programMs)} | — | — | — | — | — |`);
    }
    console.error(rows[rows.length - 1]);
  }
}
await Deno.remove(dir, { recursive: true });
console.log(`Cold start on ${adapterName} (Deno ${Deno.version.deno}), load ${loadBefore} before, ${load()} after; seconds from launch:\n`);
console.log("| Model | Ranks | First step | Program + data | Device | Compiles | Σ compile | Slowest compile | Rest |");
console.log("|---|---|---|---|---|---|---|---|---|");
for (const r of rows) console.log(r);
const stamp = new Date().toISOString().slice(0, 10);
const path = new URL(`./results/${stamp}-cold-start.json`, import.meta.url).pathname;
await Deno.writeTextFile(path, JSON.stringify({ adapter: adapterName, deno: Deno.version.deno, loadBefore, loadAfter: load(), results }, null, 1) + "\n");
console.log(`\nwrote ${path}`);
