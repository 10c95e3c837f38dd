/**
 * Coverage soak: many runs whose ranks are lost in the window between a chunk's completion
 * and the reduce that folds it, each counted from the ranks' side. Reports the batches (fake
 * ranks) or samples (real workers) that never reached the model, and those that reached it
 * twice; writes them to bench/results/coverage-soak-<stamp>.json. Not part of `npm test`.
 *
 *   . scripts/env.sh && deno run -A --no-check bench/coverage_soak.ts [--fake 600] [--real 12]
 *
 * --fake N: the real coordinator over fake ranks (test/util/fake_ranks.ts), a random mode
 *   (cpu-sync/cadence/async, nccl-sync/cadence), 2-4 ranks, 1-2 of them lost after a random
 *   chunk reply, frame, adoption or collective, or with a refused frame; virtual clock, ms each.
 * --real N: the tiny program (test/fixtures/programs/tiny.ts) on 3 worker ranks, rank 1 lost
 *   right after the reply of the chunk holding a random step, or mid-step (not in the first
 *   steps, whose compiles make a silent rank wait out the stall ceiling); each rank logs the
 *   samples it trains, and the survivors' logs must hold every sample once (seconds each).
 */
import { ElCheConfig, setProgramArgs } from "../src/index.ts";
import { fakeProgram, type FakeRankScript, modelLedger, simulate } from "../test/util/fake_ranks.ts";
import { mulberry32 } from "../test/util/random.ts";

const flag = (name: string, fallback: number) => {
  const i = Deno.args.indexOf(`--${name}`);
  const v = i < 0 ? fallback : Number(Deno.args[i + 1]);
  if (!Number.isInteger(v) || v < 0) throw new RangeError(`coverage_soak: --${name} must be an integer >= 0, got ${Deno.args[i + 1]}`);
  return v;
};
const fakeRuns = flag("fake", 600), realRuns = flag("real", 12);

interface Outcome {
  kind: "fake" | "real";
  seed: number;
  mode: string;
  faults: string;
  /** Batches (fake) or samples (real) of the epochs that never reached the model. */
  lost: number;
  /** Batches or samples that reached it more than once. */
  twice: number;
  error?: string;
}
const out: Outcome[] = [];

const FAKE_MODES = ["cpuSync", "cpuCadence", "cpuAsync", "ncclSync", "ncclCadence"] as const;
for (let seed = 1; seed <= fakeRuns; seed++) {
  const rng = mulberry32(9000 + seed);
  const int = (n: number) => Math.floor(rng() * n);
  const mode = FAKE_MODES[int(FAKE_MODES.length)];
  const W = 2 + int(3), B = [4, 8][int(2)], samples = 200 + int(500), epochs = 1 + int(2);
  const nccl = mode.startsWith("nccl");
  const calls = nccl ? ["train", "collective"] as const : ["train", "snapshot", "adopt"] as const;
  const victims = [...new Set([1 + int(W - 1), ...(W > 2 && rng() < 0.3 ? [int(W)] : [])])];
  const faults: string[] = [];
  const scripts: FakeRankScript[] = Array.from({ length: W }, (_, r) => {
    const s: FakeRankScript = { batchMs: () => (1 + r * 0.5) * (0.8 + 0.4 * rng()), controlMs: () => rng() * 3 };
    if (!victims.includes(r)) return s;
    if (!nccl && rng() < 0.25) {
      s.refuseSnapshot = 1 + int(4);
      faults.push(`rank ${r} frame ${s.refuseSnapshot} refused`);
    } else {
      s.dieAfter = { call: calls[int(calls.length)], n: 1 + int(6) };
      faults.push(`rank ${r} lost after ${s.dieAfter.call} #${s.dieAfter.n}`);
    }
    return s;
  });
  const b = fakeProgram(samples).elche(ElCheConfig[mode]()).batchSize(B).numEpochs(epochs);
  const ledger = modelLedger(epochs);
  const o: Outcome = { kind: "fake", seed, mode, faults: faults.join("; "), lost: 0, twice: 0 };
  try {
    const res = await simulate(b, scripts, ledger.observer);
    if (res.error && !/max_failure|no rank can take/.test(res.error.message)) o.error = res.error.message;
    if (!res.error) {
      const batches = Math.floor(samples / B);
      ledger.count(res).forEach((m) => {
        o.twice += [...m.values()].filter((n) => n > 1).length;
        // Partitions (sync) drop each share's partial tail batch: count what the ranks' shares held.
        o.lost += mode.endsWith("Sync") ? Math.max(0, batches - W - m.size) : batches - m.size;
      });
    }
  } catch (e) {
    o.error = (e as Error).message;
  }
  out.push(o);
  if (o.lost || o.twice || o.error) console.log(`fake ${seed} (${mode}, W ${W}; ${o.faults}): lost ${o.lost}, twice ${o.twice} ${o.error ?? ""}`);
}
if (fakeRuns) {
  const f = out.filter((o) => o.kind === "fake");
  console.log(`fake ranks: ${f.length} runs, ${f.reduce((a, o) => a + o.lost, 0)} batches lost, ${f.reduce((a, o) => a + o.twice, 0)} twice, ${f.filter((o) => o.error).length} errors`);
}

if (realRuns) {
  const { data, DIM, SAMPLES, sampleKey, tiny } = await import("../test/fixtures/programs/tiny.ts");
  const { observe } = await import("../src/distributed/run/builder.ts");
  const all = new Float32Array(data.getBatch([...Array(SAMPLES).keys()])[0].data as Float32Array);
  const keys = Array.from({ length: SAMPLES }, (_, i) => sampleKey(all, i));
  if (new Set(keys).size !== SAMPLES || all.length !== SAMPLES * DIM) throw new Error("coverage_soak: sample keys are not unique");
  const modes = ["cpuSync", "cpuCadence", "cpuAsync"] as const;
  for (let seed = 1; seed <= realRuns; seed++) {
    const rng = mulberry32(7000 + seed);
    const mode = modes[seed % 3];
    // Not mid-step in the first steps: a rank silent while it compiles pipelines is lost only after the stall ceiling (300 s).
    const fault = rng() < 0.7 ? "exit-after-chunk" : "exit", faultAt = (fault === "exit" ? 6 : 1) + Math.floor(rng() * 11);
    const dir = await Deno.makeTempDir({ prefix: "flodl-coverage-soak-" });
    const o: Outcome = { kind: "real", seed, mode, faults: `rank 1 ${fault} at step ${faultAt}`, lost: 0, twice: 0 };
    try {
      setProgramArgs({ faultRank: 1, faultAt, fault, logDir: dir });
      const lost: number[] = [];
      const b = tiny.clone().elche(ElCheConfig[mode]()).bf16Wire(true).batchSize(16).numEpochs(1).lrScaleRatio(0)
        .heartbeatTimeoutSecs(2).cluster({ ranks: [{}, {}, {}] });
      observe(b, { rankLost: (r) => lost.push(r) });
      const h = await b.run();
      await h.join();
      if (lost.join() !== "1") throw new Error(`ranks lost: [${lost}], want [1]`);
      const seen = new Map<string, number>();
      for (const r of [0, 2]) {
        for (const k of (await Deno.readTextFile(`${dir}/rank-${r}.log`)).split(/\s+/).filter((k) => k)) seen.set(k, (seen.get(k) ?? 0) + 1);
      }
      // Rank 1's work that a reduce folded is in the model without a survivor: count it from its log up to its last folded frame.
      const folded = h.history[0].perRankSamples[1];
      const own = (await Deno.readTextFile(`${dir}/rank-1.log`)).split(/\s+/).filter((k) => k).slice(0, folded);
      for (const k of own) seen.set(k, (seen.get(k) ?? 0) + 1);
      o.lost = keys.filter((k) => !seen.has(k)).length;
      o.twice = [...seen.values()].filter((n) => n > 1).length;
    } catch (e) {
      o.error = (e as Error).message;
    } finally {
      setProgramArgs({});
      await Deno.remove(dir, { recursive: true });
    }
    out.push(o);
    console.log(`real ${seed}/${realRuns} (${mode}, ${o.faults}): lost ${o.lost}, twice ${o.twice}${o.error ? ` — ${o.error}` : ""}`);
  }
}

const stamp = new Date().toISOString().replace(/[:.]/g, "-");
await Deno.mkdir("bench/results", { recursive: true });
// One run a line: thousands of runs stay readable in a diff.
await Deno.writeTextFile(`bench/results/coverage-soak-${stamp}.json`, `[\n${out.map((o) => JSON.stringify(o)).join(",\n")}\n]\n`);
const bad = out.filter((o) => o.lost || o.twice || o.error);
console.log(`${out.length} runs: ${bad.length} with samples lost, repeated or an error; bench/results/coverage-soak-${stamp}.json`);
if (bad.length) Deno.exit(1);
