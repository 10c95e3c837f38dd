/**
 * The ddp-bench report in flodl's format (per model Mode | Loss | Eval | vs Ref |
 * Total (s) | Syncs | Avg Sync (ms) | per-rank busy | Idle (s)), with flodl's published 0.5
 * numbers beside ours and the difference, the PyTorch reference of the
 * character models and resnet20, and per-epoch loss and eval curves as inline SVG in one HTML page.
 */
import { CHAR_MODELS, type ModelName } from "../../src/zoo/mod.ts";
import { RECIPES } from "../../src/zoo/mod.ts";
import { runLabel, type RunResult } from "./result.ts";

/** flodl's ddp-bench columns. */
export const FLODL_MODES = ["solo-0", "solo-1", "nccl-sync", "nccl-cadence", "nccl-async", "cpu-sync", "cpu-cadence", "cpu-async", "sync"] as const;

/**
 * flodl 0.5's report: `[eval, total seconds]` per mode, 5 epochs of the full
 * datasets on an RTX 5060 Ti + GTX 1060 (two GPUs of different speed: its DDP modes always
 * had a slower rank). Eval: accuracy; MSE for conv-ae; validation CE on tiny-Shakespeare
 * for char-rnn and gpt-nano (ours is on the Brown Corpus: compare trends, not digits).
 */
export const FLODL_05: Record<ModelName, Partial<Record<(typeof FLODL_MODES)[number], [number, number]>>> = {
  logistic: { "solo-0": [.9237, 5.5], "solo-1": [.9240, 4.0], "nccl-sync": [.9240, 4.6], "nccl-cadence": [.9251, 4.0], "nccl-async": [.9242, 3.9], "cpu-sync": [.9245, 5.3], "cpu-cadence": [.9230, 3.2], "cpu-async": [.9244, 3.1], sync: [.9248, 9.7] },
  mlp: { "solo-0": [.9700, 6.5], "solo-1": [.9735, 5.7], "nccl-sync": [.9692, 5.3], "nccl-cadence": [.9738, 6.8], "nccl-async": [.9780, 5.3], "cpu-sync": [.9789, 15.5], "cpu-cadence": [.9785, 3.8], "cpu-async": [.9779, 3.3], sync: [.9732, 12.7] },
  lenet: { "solo-0": [.9857, 12.7], "solo-1": [.9878, 11.0], "nccl-sync": [.9740, 9.2], "nccl-cadence": [.9875, 9.0], "nccl-async": [.9835, 8.8], "cpu-sync": [.9871, 14.3], "cpu-cadence": [.9852, 7.1], "cpu-async": [.9896, 7.0], sync: [.9837, 29.7] },
  "conv-ae": { "solo-0": [.0007, 9.8], "solo-1": [.0006, 8.4], "nccl-sync": [.0006, 6.8], "nccl-cadence": [.0007, 6.3], "nccl-async": [.0007, 6.4], "cpu-sync": [.0006, 10.0], "cpu-cadence": [.0007, 5.3], "cpu-async": [.0008, 5.2], sync: [.0006, 18.6] },
  "char-rnn": { "solo-0": [1.571, 20.4], "solo-1": [1.567, 25.8], "nccl-sync": [1.640, 24.9], "nccl-cadence": [1.594, 23.9], "nccl-async": [1.709, 23.1], "cpu-sync": [1.690, 26.0], "cpu-cadence": [1.608, 21.5], "cpu-async": [1.622, 22.0], sync: [1.584, 49.7] },
  "gpt-nano": { "solo-0": [2.474, 11.7], "solo-1": [2.472, 29.2], "nccl-sync": [2.462, 15.6], "nccl-cadence": [2.455, 9.3], "nccl-async": [2.468, 10.0], "cpu-sync": [2.464, 18.5], "cpu-cadence": [2.432, 7.3], "cpu-async": [2.440, 7.0] },
  // flodl trains its ResNet-20 on CIFAR-10 (200 epochs, 91.25% published); ours is on MNIST: no column to set beside.
  resnet20: {},
};

/** What torch_ref.py prints (its last stdout line). */
export interface TorchResult {
  model: ModelName;
  torch: string;
  epochs: number;
  batch: number;
  steps: number;
  loss: number;
  eval: number;
  lossCurve: number[];
  evalCurve: number[];
  totalS: number;
  stepMs: number;
}

export interface BenchReport {
  runtime: string;
  adapter: string;
  date: string;
  scale: Record<"mnist" | "chars", { epochs: number; subset: number; testSubset: number; batch: number }>;
  slow: number;
  load: { before: number[]; after: number[] };
  totalS: number;
  runs: RunResult[];
  torch: TorchResult[];
}

const METRIC_NAME = { accuracy: "test accuracy", mse: "test MSE", ce: "validation CE" } as const;
const fmtEval = (m: ModelName, v: number | null | undefined) =>
  v === null || v === undefined ? "—" : RECIPES[m].metric === "accuracy" ? v.toFixed(4) : v.toFixed(RECIPES[m].metric === "mse" ? 5 : 3);
const signed = (x: number, digits: number) => `${x >= 0 ? "+" : ""}${x.toFixed(digits)}`;

/** flodl's column for one of our runs: solo ↔ solo-0, cpu-* ↔ cpu-*. */
function flodlOf(r: RunResult): [number, number] | undefined {
  return FLODL_05[r.model][r.mode === "solo" ? "solo-0" : r.mode];
}

/** The markdown report. */
export function renderMarkdown(rep: BenchReport): string {
  const L: string[] = [];
  const s = rep.scale;
  L.push(`## ddp-bench, ${rep.date.slice(0, 16)}Z (${rep.runtime}, ${rep.adapter})`, "");
  L.push(
    `Scale: MNIST models ${s.mnist.epochs} epochs of ${s.mnist.subset} images (eval on ${s.mnist.testSubset}), batch ${s.mnist.batch}; ` +
      `char-rnn and gpt-nano ${s.chars.epochs} epochs of ${s.chars.subset} sequences of 128 characters of the Brown Corpus ` +
      `(validation on ${s.chars.testSubset}), batch ${s.chars.batch}. Every DDP run has 2 ranks on the one adapter` +
      (rep.slow ? `; "rank 1 ×${rep.slow}" runs make rank 1's steps ${rep.slow} times as long` : "") +
      `. Load average ${rep.load.before.map((x) => x.toFixed(1)).join(" ")} before, ${rep.load.after.map((x) => x.toFixed(1)).join(" ")} after; ` +
      `sitting ${rep.totalS.toFixed(0)} s.`,
    "",
    `Columns as flodl's report: Loss = last epoch's mean training loss; Eval = last eval; vs Ref = Eval − our solo Eval; ` +
      `Total = run() to join() (rank start-up and shader compiles included); Syncs = reduces; Busy = Σ step compute / training wall, ` +
      `Idle = training wall − Σ step compute, per rank; Step = median compute ms per step, per rank. ` +
      `flodl 0.5 = its published eval / total s at 5 epochs of the full data on two GPUs (solo ↔ solo-0); ` +
      `Δ = our Eval − flodl's (a different scale: read the direction, not the digits).`,
    "",
  );
  const models = [...new Set(rep.runs.map((r) => r.model))];
  for (const m of models) {
    const runs = rep.runs.filter((r) => r.model === m);
    const solo = runs.find((r) => r.mode === "solo" && r.slowdown.every((x) => x === 1));
    L.push(`### ${m} (${METRIC_NAME[RECIPES[m].metric]}${RECIPES[m].metric === "accuracy" ? ", higher is better" : ", lower is better"})`, "");
    L.push("| Mode | Loss | Eval | vs Ref | Total (s) | Syncs | Avg Sync (ms) | Busy r0 / r1 | Idle (s) r0 / r1 | Step (ms) r0 / r1 | flodl 0.5 | Δ vs flodl |");
    L.push("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (const r of runs) {
      const f = flodlOf(r);
      const vsRef = solo && r !== solo && r.eval !== null && solo.eval !== null ? signed(r.eval - solo.eval, 4) : "—";
      L.push(
        `| ${runLabel(r)} | ${r.loss?.toFixed(4) ?? "—"} | ${fmtEval(m, r.eval)} | ${vsRef} | ${r.totalS.toFixed(1)} | ${r.syncs} | ` +
          `${r.avgSyncMs.toFixed(1)} | ${r.perRank.map((p) => `${(p.busyPct * 100).toFixed(0)}%`).join(" / ")} | ` +
          `${r.perRank.map((p) => p.idleS.toFixed(1)).join(" / ")} | ${r.perRank.map((p) => p.stepMs.toFixed(0)).join(" / ")} | ` +
          `${f ? `${fmtEval(m, f[0])} / ${f[1]}` : "—"} | ${f && r.eval !== null ? signed(r.eval - f[0], 4) : "—"} |`,
      );
    }
    const t = rep.torch.find((x) => x.model === m);
    if (t) {
      L.push(
        `| PyTorch ${t.torch} (CPU), same samples, ${t.steps} steps | ${t.loss.toFixed(4)} | ${fmtEval(m, t.eval)} | ` +
          `${solo?.eval != null ? signed(t.eval - solo.eval, 4) : "—"} | ${t.totalS.toFixed(1)} | — | — | — | — | ${t.stepMs.toFixed(0)} | — | — |`,
      );
    }
    L.push("");
    L.push(`Loss per epoch: ${runs.map((r) => `${runLabel(r)} ${r.lossCurve.map((x) => x?.toFixed(3) ?? "—").join(" → ")}`).join("; ")}` +
      (t ? `; PyTorch ${t.lossCurve.map((x) => x.toFixed(3)).join(" → ")}` : "") + ".", "");
  }
  return L.join("\n") + "\n";
}

const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"];
const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** One line chart (epochs on x) as inline SVG. */
function chart(title: string, series: { label: string; ys: (number | null)[] }[]): string {
  const W = 420, H = 240, P = { l: 56, r: 10, t: 24, b: 30 };
  const ys = series.flatMap((s) => s.ys).filter((y): y is number => y !== null && Number.isFinite(y));
  if (ys.length === 0) return "";
  let lo = Math.min(...ys), hi = Math.max(...ys);
  if (hi === lo) [lo, hi] = [lo - 1e-3, hi + 1e-3];
  const n = Math.max(...series.map((s) => s.ys.length));
  const x = (i: number) => P.l + (n > 1 ? (i / (n - 1)) * (W - P.l - P.r) : (W - P.l - P.r) / 2);
  const y = (v: number) => P.t + (1 - (v - lo) / (hi - lo)) * (H - P.t - P.b);
  const lines = series.map((s, k) => {
    const pts = s.ys.map((v, i) => (v === null ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`)).filter(Boolean);
    const c = COLORS[k % COLORS.length];
    return `<polyline fill="none" stroke="${c}" stroke-width="1.6" points="${pts.join(" ")}"/>` +
      pts.map((p) => `<circle cx="${p!.split(",")[0]}" cy="${p!.split(",")[1]}" r="2.5" fill="${c}"/>`).join("");
  });
  const legend = series.map((s, k) =>
    `<span style="color:${COLORS[k % COLORS.length]}">■</span> ${esc(s.label)}`
  ).join(" &nbsp; ");
  const ticks = [lo, (lo + hi) / 2, hi].map((v) =>
    `<text x="${P.l - 4}" y="${y(v) + 4}" text-anchor="end" font-size="10">${v.toPrecision(4)}</text>`
  ).join("");
  const xt = Array.from({ length: n }, (_, i) => `<text x="${x(i)}" y="${H - 12}" text-anchor="middle" font-size="10">${i + 1}</text>`).join("");
  return `<figure><svg width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img"><title>${esc(title)}</title>` +
    `<text x="${P.l}" y="14" font-size="12" font-weight="bold">${esc(title)}</text>` +
    `<rect x="${P.l}" y="${P.t}" width="${W - P.l - P.r}" height="${H - P.t - P.b}" fill="none" stroke="#ccc"/>` +
    ticks + xt + `<text x="${W / 2}" y="${H - 1}" font-size="10" text-anchor="middle">epoch</text>` + lines.join("") +
    `</svg><figcaption style="font-size:12px">${legend}</figcaption></figure>`;
}

/** The HTML page: the markdown tables as preformatted text and per model its loss and eval curves. */
export function renderHtml(rep: BenchReport): string {
  const models = [...new Set(rep.runs.map((r) => r.model))];
  const body = models.map((m) => {
    const runs = rep.runs.filter((r) => r.model === m);
    const t = rep.torch.find((x) => x.model === m);
    const loss = runs.map((r) => ({ label: runLabel(r), ys: r.lossCurve }));
    const ev = runs.map((r) => ({ label: runLabel(r), ys: r.evalCurve }));
    if (t) {
      loss.push({ label: "PyTorch", ys: t.lossCurve });
      ev.push({ label: "PyTorch", ys: t.evalCurve });
    }
    return `<section><h2>${esc(m)}</h2><div style="display:flex;flex-wrap:wrap;gap:16px">` +
      chart(`${m}: training loss per epoch`, loss) + chart(`${m}: ${METRIC_NAME[RECIPES[m].metric]} per epoch`, ev) + `</div></section>`;
  }).join("\n");
  return `<!doctype html><html><head><meta charset="utf-8"><title>ddp-bench ${esc(rep.date.slice(0, 16))}Z</title>` +
    `<style>body{font-family:system-ui,sans-serif;margin:24px;max-width:1200px}pre{white-space:pre-wrap;font-size:12px}</style></head><body>` +
    `<h1>ddp-bench, ${esc(rep.date.slice(0, 16))}Z</h1><p>${esc(rep.runtime)}, ${esc(rep.adapter)}. Character models: ${CHAR_MODELS.join(", ")}.</p>` +
    body + `<h2>Tables</h2><pre>${esc(renderMarkdown(rep))}</pre></body></html>\n`;
}
