/**
 * Tables and ratios of a suite result (markdown), shared by the Deno runner, the
 * Playwright driver and bench/summarize.ts. Pure: no runtime APIs.
 */
import type { DdpRun } from "./ddp_measure.ts";
import type { StepProfile } from "./profile.ts";
import type { SuiteResult } from "./suite.ts";
import { type Contender, LABELS } from "./contenders.ts";
import type { W2Mode } from "./workloads.ts";

/** ours / peer for each W1 size and W2 mode (higher is better for us); null where one side is missing. */
export interface Ratios {
  w1: Record<string, { tf: number | null; jax: number | null }>;
  w2: Record<string, { tf: number | null; jax: number | null }>;
}

const ratio = (a?: number, b?: number) => (a !== undefined && b !== undefined && b > 0 ? +(a / b).toFixed(2) : null);

export function ratios(r: SuiteResult): Ratios {
  const c = r.contenders;
  const w1 = (who: Contender, n: number) => c[who]?.w1.find((x) => x.n === n)?.gflops;
  const w2 = (who: Contender, m: W2Mode) => c[who]?.w2.find((x) => x.mode === m)?.samplesPerS;
  const sizes = [...new Set(Object.values(c).flatMap((x) => x!.w1.map((y) => y.n)))].sort((a, b) => a - b);
  const modes = [...new Set(Object.values(c).flatMap((x) => x!.w2.map((y) => y.mode)))];
  return {
    w1: Object.fromEntries(sizes.map((n) => [n, { tf: ratio(w1("ours", n), w1("tf", n)), jax: ratio(w1("ours", n), w1("jax", n)) }])),
    w2: Object.fromEntries(modes.map((m) => [m, { tf: ratio(w2("ours", m), w2("tf", m)), jax: ratio(w2("ours", m), w2("jax", m)) }])),
  };
}

const fx = (x: number | null | undefined, d = 2) => (x === null || x === undefined ? "—" : x.toFixed(d));
const rx = (x: number | null) => (x === null ? "—" : `${x.toFixed(2)}×`);

/** Markdown tables: W1 GFLOP/s, W2 samples/s, the ratios, the checks, the profile. */
export function reportLines(r: SuiteResult, title: string): string[] {
  const c = r.contenders;
  const q = ratios(r);
  const who = (["ours", "tf", "jax"] as const).filter((k) => c[k]);
  const out: string[] = [`### ${title}`, ""];
  for (const k of who) {
    out.push(`- ${LABELS[k]} ${c[k]!.version}: adapter \`${c[k]!.adapter}\`${c[k]!.tiling ? `, matmul tiling ${c[k]!.tiling}` : ""}${c[k]!.error ? `, **FAILED**: ${c[k]!.error!.split("\n")[0]}` : ""}`);
  }
  out.push("", `W1, f32 n×n matmul incl. reading C back, GFLOP/s (median of ${r.workloads.w1.runs} after ${r.workloads.w1.warmup} warm-up):`, "");
  out.push(`| n | ${who.map((k) => LABELS[k]).join(" | ")} | ours/TF.js | ours/jax-js | C check (max rel. err) |`);
  out.push(`|---|${who.map(() => "---|").join("")}---|---|---|`);
  for (const n of Object.keys(q.w1)) {
    const row = who.map((k) => c[k]!.w1.find((x) => x.n === +n));
    const check = row.map((x) => (x ? `${x.ok ? "ok" : "FAIL"} ${x.maxErr.toExponential(0)}` : "—")).join(" / ");
    out.push(`| ${n} | ${row.map((x) => fx(x?.gflops)).join(" | ")} | ${rx(q.w1[n].tf)} | ${rx(q.w1[n].jax)} | ${check} |`);
  }
  out.push("", `W2, MLP 784-256-10 + Adam, batch ${r.workloads.w2.batch}, ${r.workloads.w2.steps} timed steps, samples/s:`, "");
  out.push(`| loss read | ${who.map((k) => LABELS[k]).join(" | ")} | ours/TF.js | ours/jax-js | loss step 1 → 55 (ref ${r.workloads.w2.refFirst} → ${r.workloads.w2.refLast}) |`);
  out.push(`|---|${who.map(() => "---|").join("")}---|---|---|`);
  for (const m of Object.keys(q.w2)) {
    const row = who.map((k) => c[k]!.w2.find((x) => x.mode === m));
    const loss = row.map((x) => (x ? `${x.firstLoss} → ${x.lastLoss} ${x.ok ? "ok" : "FAIL"}` : "—")).join(" / ");
    out.push(`| ${m === "loss-at-end" ? "at end" : "every step"} | ${row.map((x) => fx(x?.samplesPerS, 0)).join(" | ")} | ${rx(q.w2[m].tf)} | ${rx(q.w2[m].jax)} | ${loss} |`);
  }
  if (r.profile) out.push("", ...profileLines(r.profile));
  return out;
}

/** Our W2 step, where the time goes. */
export function profileLines(p: StepProfile): string[] {
  const out = [
    `Our W2 step alone (record + submit + wait): ${fx(p.stepMs)} ms; host recording + submit ${fx(p.hostMs)} ms; ` +
    `empty submit + wait ${fx(p.syncMs)} ms; 4-byte loss readback ${fx(p.readMs)} ms; reading all parameters back ` +
    `(800 KB) ${fx(p.paramsReadMs)} ms; ${p.launches} launches, ` +
    `Σ kernel ${fx(p.kernelMs)} ms (each replayed ×20 in one submit, empty-submit baseline subtracted).`,
    "",
    "| family | launches | GPU ms | share |",
    "|---|---|---|---|",
    ...p.families.map((f) => `| ${f.family} | ${f.launches} | ${fx(f.ms)} | ${(f.share * 100).toFixed(0)}% |`),
    "",
    "| kernel (step order) | shape | GPU ms |",
    "|---|---|---|",
    ...p.kernels.map((k) => `| ${k.kernel} | ${k.detail} | ${fx(k.ms, 3)} |`),
  ];
  return out;
}

/** What bench/ddp.ts writes (the parts the tables use). */
export interface DdpResult {
  adapter: string;
  date: string;
  subset: number;
  batch: number;
  epochs?: number;
  load: { before: number[]; after: number[] };
  runs: DdpRun[];
  targets: Record<string, { target: string; measured: string; met: boolean }>;
}

/** Markdown tables of a bench/ddp.ts result. */
export function ddpLines(r: DdpResult, title: string): string[] {
  const s = (ms: number) => (ms / 1e3).toFixed(2);
  const out = [
    `### ${title}`,
    "",
    `MNIST MLP 784-256-10, Adam 1e-3, batch ${r.batch}, ${r.subset} training samples, ${r.epochs ?? 3} epochs (epoch 1 warms up; ` +
    `the rest are measured), all ranks on \`${r.adapter}\`, load average ${r.load.before.map((x) => x.toFixed(1)).join(" ")} before, ` +
    `${r.load.after.map((x) => x.toFixed(1)).join(" ")} after.`,
    "",
    "| ranks | mode | wire | slowdown | samples/s | measured wall s | all epochs s | with start-up s | reduces | ms/reduce | averaging ms | wire bytes/reduce | (avg+wire)/compute |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const x of r.runs) {
    out.push(
      `| ${x.ranks} | ${x.ranks === 1 ? "— (single device)" : x.mode} | ${x.ranks === 1 ? "—" : x.bf16 ? "bf16" : "f32"} | ${x.slowdown.join(",")} | ` +
        `${x.samplesPerS.toFixed(0)} | ${s(x.epochWallMs)} | ${s(x.trainWallMs)} | ${s(x.totalMs)} | ${x.reduces} | ${x.reduceMs.toFixed(1)} | ` +
        `${x.averageMs.toFixed(2)} | ${x.wireBytesPerReduce ?? "—"} | ${(x.overheadShare * 100).toFixed(1)}% |`,
    );
  }
  out.push("", "| target | measured | met |", "|---|---|---|");
  for (const t of Object.values(r.targets)) out.push(`| ${t.target} | ${t.measured} | ${t.met ? "yes" : "**no**"} |`);
  return out;
}
