/**
 * flodl's ddp-bench, ported: seven models of flodl's ddp-bench trained solo and in
 * cpu-sync / cpu-cadence / cpu-async with 2 ranks, then with one rank `--slow` times slower,
 * each run in its own process (bench/ddp-bench/one.ts); PyTorch trains char-rnn, gpt-nano and
 * resnet20 on the same samples for the same steps (bench/ddp-bench/torch_ref.py); the report, in
 * flodl's format with its published 0.5 numbers beside ours, goes to bench/results/ as
 * markdown, JSON and an HTML page of per-epoch curves (bench/ddp-bench/report.ts).
 *
 *   deno run -A --no-check bench/ddp-bench/run.ts [flags]
 *
 * Scale (defaults sized for a 2-core machine without a GPU; flodl's are 5 epochs of all
 * 60000 images, 50 of all of tiny-Shakespeare):
 *   --models logistic,mlp,lenet,conv-ae,char-rnn,gpt-nano,resnet20
 *   --modes solo,cpu-sync,cpu-cadence,cpu-async     --slow-modes cpu-sync,cpu-cadence,cpu-async
 *   --slow 3            the slow rank's factor (rank 1; 0 = no slow-rank runs)
 *   --epochs 2          --subset 2048 --test-subset 1000 (MNIST images)   --batch 64
 *   --char-epochs 2     --char-subset 128 --char-test-subset 32 (sequences of 128)   --char-batch 64
 *   --torch / --no-torch   the PyTorch reference of char-rnn, gpt-nano and resnet20 (default on)
 *   --tag <name>        results file name: bench/results/<date>-ddp-bench[-<tag>].{json,md,html}
 */
import { exitNow } from "../../examples/exit.ts";
import { CHAR_MODELS, MODELS, type ModelName } from "../../src/zoo/mod.ts";
import { loadTaskData } from "../../src/zoo/mod.ts";
import type { RunConfig } from "./one.ts";
import { type BenchReport, renderHtml, renderMarkdown, type TorchResult } from "./report.ts";
import { type Mode, MODES, runLabel, type RunResult } from "./result.ts";

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && Deno.args[i + 1] !== undefined ? Deno.args[i + 1] : fallback;
}
function intFlag(name: string, fallback: number, min: number): number {
  const v = flag(name, String(fallback)), n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new RangeError(`bench/ddp-bench: --${name} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  return n;
}
function listFlag<T extends string>(name: string, fallback: readonly T[], allowed: readonly T[]): T[] {
  const v = flag(name, fallback.join(","));
  const xs = v === "" ? [] : v.split(",");
  for (const x of xs) {
    if (!allowed.includes(x as T)) throw new RangeError(`bench/ddp-bench: --${name} takes a list of ${allowed.join(", ")}, got ${JSON.stringify(x)}`);
  }
  return xs as T[];
}

const models = listFlag<ModelName>("models", MODELS, MODELS);
const modes = listFlag<Mode>("modes", MODES, MODES);
const ddpModes = MODES.filter((m) => m !== "solo");
const slowModes = listFlag<Mode>("slow-modes", ddpModes, ddpModes);
const slow = Number(flag("slow", "3"));
if (!(slow === 0 || slow >= 1)) throw new RangeError(`bench/ddp-bench: --slow must be 0 (off) or a factor >= 1, got ${flag("slow", "")}`);
const scale = {
  mnist: { epochs: intFlag("epochs", 2, 1), subset: intFlag("subset", 2048, 1), testSubset: intFlag("test-subset", 1000, 1), batch: intFlag("batch", 64, 1) },
  chars: {
    epochs: intFlag("char-epochs", 2, 1),
    subset: intFlag("char-subset", 128, 1),
    testSubset: intFlag("char-test-subset", 32, 1),
    batch: intFlag("char-batch", 64, 1),
  },
};
for (const [what, sc, pre] of [["MNIST", scale.mnist, ""], ["chars", scale.chars, "char-"]] as const) {
  // Each of the 2 ranks needs at least one batch per epoch, or a DDP run trains nothing.
  if (sc.subset < 2 * sc.batch) {
    throw new RangeError(`bench/ddp-bench: --${pre}subset must be >= 2 × --${pre}batch (${2 * sc.batch}) so each of 2 ranks gets a ${what} batch, got ${sc.subset}`);
  }
}
const torch = !Deno.args.includes("--no-torch");
const tag = flag("tag", "");
const date = new Date().toISOString();
const stem = new URL(`../results/${date.slice(0, 10)}-ddp-bench${tag ? `-${tag}` : ""}`, import.meta.url).pathname;
/** The repository root: deno.json's import map resolves from here. */
const ROOT = new URL("../../", import.meta.url).pathname;
const work = await Deno.makeTempDir({ prefix: "ddp-bench-" });

const adapter = await navigator.gpu.requestAdapter();
const adapterName = adapter ? adapter.info.description || adapter.info.architecture : "none";
const loadBefore = Deno.loadavg();
console.log(
  `ddp-bench: ${models.join(", ")}; ${modes.join(", ")}` + (slow ? `; rank 1 ×${slow} slower in ${slowModes.join(", ")}` : "") +
    `; MNIST ${JSON.stringify(scale.mnist)}, chars ${JSON.stringify(scale.chars)}; adapter ${adapterName}, load ${loadBefore.map((x) => x.toFixed(2)).join(" ")}`,
);

/** Run one configuration in a child process; resolves with its result, or null when it failed (logged). */
async function runOne(cfg: RunConfig, k: number): Promise<RunResult | null> {
  const out = `${work}/run${k}.json`;
  const t0 = performance.now();
  const res = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-check", new URL("./one.ts", import.meta.url).pathname, JSON.stringify(cfg), out],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const secs = ((performance.now() - t0) / 1e3).toFixed(1);
  try {
    if (res.code !== 0) throw new Error(`exit ${res.code}`);
    const r = JSON.parse(await Deno.readTextFile(out)) as RunResult;
    console.log(
      `  ${cfg.model.padEnd(9)} ${runLabel(r).padEnd(24)} loss ${r.loss?.toFixed(4) ?? "— (no batch ran)"}  eval ${r.eval?.toFixed(4) ?? "—"}  ` +
        `${r.totalS.toFixed(1)} s  syncs ${r.syncs}  step ${r.perRank.map((p) => p.stepMs.toFixed(0)).join("/")} ms  (process ${secs} s)`,
    );
    return r;
  } catch (e) {
    const err = new TextDecoder().decode(res.stderr).split("\n").filter((l) => l.trim() && !/^\s+at /.test(l)).slice(-6).join("\n    ");
    console.log(`  ${cfg.model.padEnd(9)} ${cfg.mode} [${cfg.slowdown}] FAILED (${(e as Error).message}, ${secs} s):\n    ${err}`);
    return null;
  }
}

/** The models with a PyTorch reference (torch_ref.py). */
const TORCH_MODELS: readonly ModelName[] = ["char-rnn", "gpt-nano", "resnet20"];

/**
 * Export `model`'s exact samples for torch_ref.py: the same subset and split, and the
 * vocabulary of the character models, or the standardized images of resnet20.
 */
async function exportSamples(model: ModelName, path: string): Promise<void> {
  const s = CHAR_MODELS.includes(model) ? scale.chars : scale.mnist;
  const data = await loadTaskData(model, { subset: s.subset, testSubset: s.testSubset });
  const rows = (ds: typeof data.train) => {
    const [x, y] = ds.getBatch(Array.from({ length: ds.len() }, (_, i) => i));
    return { input: Array.from(x.data as ArrayLike<number>), target: Array.from(y.data as Int32Array), n: ds.len() };
  };
  const shape = data.vocab ? { vocab: data.vocab.itos, seqLen: 128 } : { imageShape: data.train.fields[0].shape };
  await Deno.writeTextFile(path, JSON.stringify({ ...shape, train: rows(data.train), validation: rows(data.test) }));
}

async function runTorch(model: ModelName, dataPath: string): Promise<TorchResult | null> {
  const t0 = performance.now();
  const s = CHAR_MODELS.includes(model) ? scale.chars : scale.mnist;
  const res = await new Deno.Command("/usr/bin/python3", {
    args: [new URL("./torch_ref.py", import.meta.url).pathname, "--model", model, "--data", dataPath, "--epochs", String(s.epochs),
      "--batch", String(s.batch)],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(res.stdout);
  if (res.code !== 0) {
    console.log(`  ${model.padEnd(9)} PyTorch FAILED: ${new TextDecoder().decode(res.stderr).slice(-800)}`);
    return null;
  }
  const r = JSON.parse(text.trim().split("\n").at(-1)!) as TorchResult;
  console.log(`  ${model.padEnd(9)} ${"PyTorch (CPU)".padEnd(24)} loss ${r.loss.toFixed(4)}  eval ${r.eval.toFixed(4)}  ${r.totalS.toFixed(1)} s  step ${r.stepMs.toFixed(0)} ms (process ${((performance.now() - t0) / 1e3).toFixed(1)} s)`);
  return r;
}

const t0 = performance.now();
const runs: RunResult[] = [];
const torchRuns: TorchResult[] = [];
let k = 0;
for (const model of models) {
  const s = CHAR_MODELS.includes(model) ? scale.chars : scale.mnist;
  const base = { model, subset: s.subset, testSubset: s.testSubset, epochs: s.epochs, batch: s.batch };
  const configs: RunConfig[] = [
    ...modes.map((mode) => ({ ...base, mode, slowdown: mode === "solo" ? [1] : [1, 1] })),
    ...(slow ? slowModes.map((mode) => ({ ...base, mode, slowdown: [1, slow] })) : []),
  ];
  for (const cfg of configs) {
    const r = await runOne(cfg, k++);
    if (r) runs.push(r);
  }
  if (torch && TORCH_MODELS.includes(model)) {
    const dataPath = `${work}/samples.json`;
    await exportSamples(model, dataPath);
    const r = await runTorch(model, dataPath);
    if (r) torchRuns.push(r);
  }
}

const report: BenchReport = {
  runtime: `deno ${Deno.version.deno}`,
  adapter: adapterName,
  date,
  scale,
  slow,
  load: { before: loadBefore, after: Deno.loadavg() },
  totalS: Math.round((performance.now() - t0) / 100) / 10,
  runs,
  torch: torchRuns,
};
await Deno.mkdir(new URL("../results/", import.meta.url), { recursive: true });
await Deno.writeTextFile(`${stem}.json`, JSON.stringify(report, null, 1) + "\n");
const md = renderMarkdown(report);
await Deno.writeTextFile(`${stem}.md`, md);
await Deno.writeTextFile(`${stem}.html`, renderHtml(report));
await Deno.remove(work, { recursive: true });
console.log("\n" + md);
console.log(`wrote ${stem}.{json,md,html}`);
exitNow(0);
