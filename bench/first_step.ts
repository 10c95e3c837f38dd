/**
 * Time to the first step, side by side (issue 24): ours, TF.js (webgpu) and jax-js each set up
 * and train the W2 MLP in a fresh Deno process of its own, so the first step pays every
 * compile the MLP needs; reported in seconds since the process began. Each process gets an
 * empty Mesa shader cache (what a machine's first run sees; bench/cold_start.ts says why).
 * The Chromium side is bench/bench.spec.ts's "first step" test.
 *
 *   deno run -A --no-check bench/first_step.ts [--only ours,tf,jax] [--rounds 1]
 */
import { CONTENDERS, type Contender } from "./contenders.ts";
import { firstStep, type FirstStep } from "./suite.ts";

const child = Deno.args.indexOf("--child");
if (child >= 0) {
  const r = await firstStep(Deno.args[child + 1] as Contender);
  console.log(JSON.stringify(r));
  Deno.exit(0);
}

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && Deno.args[i + 1] ? Deno.args[i + 1] : fallback;
}
const only = flag("only", CONTENDERS.join(",")).split(",") as Contender[];
for (const c of only) if (!CONTENDERS.includes(c)) throw new RangeError(`first_step.ts: --only: ${JSON.stringify(c)} is not one of ${CONTENDERS.join(", ")}`);
const rounds = Number(flag("rounds", "1"));
if (!Number.isInteger(rounds) || rounds < 1) throw new RangeError(`first_step.ts: --rounds must be an integer >= 1, got ${flag("rounds", "1")}`);

const load = () => Deno.loadavg().map((x) => x.toFixed(1)).join(" ");
const loadBefore = load();
const dir = await Deno.makeTempDir({ prefix: "flodl-first-step-" });
const results: FirstStep[] = [];
const s = (ms: number) => (ms / 1000).toFixed(1);
for (let round = 0; round < rounds; round++) {
  for (const who of only) { // interleaved: a change of load hits every contender alike
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--no-check", new URL(import.meta.url).pathname, "--child", who],
      env: { MESA_SHADER_CACHE_DIR: await Deno.makeTempDir({ dir, prefix: "mesa-" }) },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(stdout).trim().split("\n").at(-1) ?? "";
    if (code !== 0 || !out.startsWith("{")) {
      console.error(`first_step.ts: ${who} failed (exit ${code}): ${new TextDecoder().decode(stderr).trim().split("\n").slice(-3).join(" | ")}`);
      continue;
    }
    const r = JSON.parse(out) as FirstStep;
    results.push(r);
    console.error(`${r.name}: set up ${s(r.setupMs)} s, first step at ${s(r.firstStepMs)} s (${r.stepMs.first.toFixed(0)} ms), then ${r.stepMs.steady} ms a step${r.ok ? "" : ", loss off the reference"}`);
  }
}
await Deno.remove(dir, { recursive: true });
console.log(`First MLP step in a fresh Deno ${Deno.version.deno} process, empty Mesa cache, on ${results[0]?.adapter ?? "?"}; load ${loadBefore} before, ${load()} after; seconds since launch:\n`);
console.log("| Contender | Set up | First step at | First step alone | Later steps (ms) |");
console.log("|---|---|---|---|---|");
for (const r of results) console.log(`| ${r.name} ${r.version} | ${s(r.setupMs)} | ${s(r.firstStepMs)} | ${s(r.stepMs.first)} | ${r.stepMs.steady} |`);
if (results.some((r) => !r.ok)) {
  console.error("first_step.ts: a contender's loss was off the float64 reference");
  Deno.exit(1);
}
