/**
 * W1 (matmul) and W2 (MLP training) for our engine, TF.js (webgpu) and jax-js in ONE Deno
 * process on the same adapter (lavapipe without a GPU), printed as tables with the ratios
 * ours/TF.js and ours/jax-js, written to bench/results/<date>-deno[-<tag>].json.
 *
 *   npx deno run -A bench/engine.ts [--tag run1] [--sizes 256,512] [--only ours,tf] [--no-profile]
 */
import { reportLines, ratios } from "./report.ts";
import { runSuite } from "./suite.ts";
import { CONTENDERS, type Contender } from "./contenders.ts";

function flag(name: string): string | undefined {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : undefined;
}

function parseList<T>(name: string, parse: (s: string) => T, ok: (x: T) => boolean, expected: string): T[] | undefined {
  const v = flag(name);
  if (v === undefined) return undefined;
  const xs = v.split(",").map(parse);
  if (xs.length === 0 || !xs.every(ok)) throw new RangeError(`bench/engine.ts: --${name} must be ${expected}, got ${v}`);
  return xs;
}

const sizes = parseList("sizes", Number, (n) => Number.isInteger(n) && n > 0, "comma-separated positive integers");
const only = parseList("only", (s) => s as Contender, (c) => CONTENDERS.includes(c), `a comma-separated subset of ${CONTENDERS}`);
const tag = flag("tag");

const loadBefore = Deno.loadavg();
console.log(`bench/engine (deno ${Deno.version.deno}), load average ${loadBefore.map((x) => x.toFixed(2)).join(" ")}`);
const result = await runSuite({ sizes, only, profile: !Deno.args.includes("--no-profile") });
const date = new Date().toISOString();
const out = {
  runtime: `deno ${Deno.version.deno}`,
  date,
  load: { before: loadBefore, after: Deno.loadavg() },
  ...result,
  ratios: ratios(result),
};
console.log("\n" + reportLines(result, `Deno ${Deno.version.deno}, ${date.slice(0, 16)}Z`).join("\n"));
await Deno.mkdir(new URL("./results/", import.meta.url), { recursive: true });
const path = new URL(`./results/${date.slice(0, 10)}-deno${tag ? `-${tag}` : ""}.json`, import.meta.url);
await Deno.writeTextFile(path, JSON.stringify(out, null, 2) + "\n");
console.log(`\nwrote ${path.pathname} (${result.totalS} s)`);
const failed = Object.values(result.contenders).some((c) => c!.error || c!.w1.some((x) => !x.ok) || c!.w2.some((x) => !x.ok));
if (failed) {
  console.error("bench/engine: a contender failed or a result check failed (see above)");
  Deno.exit(1);
}
