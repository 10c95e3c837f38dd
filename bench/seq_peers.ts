/**
 * W3 (char-rnn), W4 (gpt-nano), bilstm and encoder training steps in ONE Deno process on the
 * same adapter: ours against TensorFlow.js 4.22 (webgpu backend) and, for gpt-nano and
 * encoder, jax-js 0.1.25 written with its array API. The models, shapes and contenders are in bench/seq_contenders.ts (the
 * same code runs in Chromium: bench/seq.spec.ts). Rounds interleave the contenders; the
 * table gives the median and every run. Exits non-zero when a contender's loss does not fall.
 *
 *   deno run -A --no-check bench/seq_peers.ts [--model char-rnn|gpt-nano|bilstm|encoder] [--batch B] [--seq T]
 *     [--steps 5] [--rounds 3] [--only ours,tf,jax] [--modes loss-at-end,loss-every-step] [--out file.json]
 */
import { Device } from "../src/index.ts";
import { CONTENDERS, DEFAULT_SHAPE, notFalling, runSitting, SEQ_MODELS, type SeqContender, type SeqMode, type SeqModel, sittingTable } from "./seq_contenders.ts";
import { flag } from "./flags.ts";

function list(name: string): string[] | undefined {
  const i = Deno.args.indexOf(`--${name}`);
  return i < 0 ? undefined : Deno.args[i + 1].split(",");
}
const modelAt = Deno.args.indexOf("--model");
const model = (modelAt >= 0 ? Deno.args[modelAt + 1] : "char-rnn") as SeqModel;
if (!SEQ_MODELS.includes(model)) throw new RangeError(`--model must be one of ${SEQ_MODELS.join(", ")}, got ${model}`);
const only = (list("only") ?? CONTENDERS[model]) as SeqContender[];
const modes = list("modes") as SeqMode[] | undefined;
for (const m of modes ?? []) if (m !== "loss-at-end" && m !== "loss-every-step") throw new RangeError(`--modes takes loss-at-end,loss-every-step, got ${m}`);
const shape = { model, batch: flag("batch", DEFAULT_SHAPE[model].batch), seq: flag("seq", DEFAULT_SHAPE[model].seq), steps: flag("steps", 5) };
const rounds = flag("rounds", 3);

const load = Deno.loadavg();
console.log(`bench/seq_peers: ${model}, B=${shape.batch} T=${shape.seq}, ${rounds} rounds of ${only.join(",")}; load ${load.map((v) => v.toFixed(2)).join(" ")}`);
const device = await Device.request({ label: "bench" });
const t0 = performance.now();
const results = await runSitting(device, { shape, contenders: only, modes, rounds, log: console.log });
const loadAfter = Deno.loadavg();
console.log(sittingTable(shape, results).join("\n"));
console.log(`load before ${load.map((v) => v.toFixed(2)).join(" ")}, after ${loadAfter.map((v) => v.toFixed(2)).join(" ")}; sitting ${((performance.now() - t0) / 1000).toFixed(0)} s`);
const outAt = Deno.args.indexOf("--out");
if (outAt >= 0) {
  const out = { runtime: `deno ${Deno.version.deno}`, date: new Date().toISOString(), shape, rounds, load: { before: load, after: loadAfter }, results };
  Deno.writeTextFileSync(Deno.args[outAt + 1], JSON.stringify(out, null, 2) + "\n");
}
const bad = notFalling(results);
if (bad.length) {
  console.error(`bench/seq_peers: the loss did not fall for ${bad.map((r) => `${r.contender} ${r.mode} round ${r.round}`).join(", ")}`);
  Deno.exit(1);
}
