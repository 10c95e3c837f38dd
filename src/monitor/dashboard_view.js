// @ts-self-types="./dashboard_view.d.ts"
/**
 * The dashboard's DOM view: summary table, uPlot charts, timeline swimlane, config and
 * alerts. This file is the ONLY copy of the chart code. It is plain JavaScript with no
 * imports because it is used twice:
 *
 * - the live demo imports it as an ES module (through `dashboard_live.ts`, which passes
 *   npm's uPlot in), and
 * - `renderDashboardHtml` inlines its text into the saved HTML inside a
 *   `<script type="module">`, after uPlot's IIFE build has defined the global `uPlot`.
 *
 * So: no imports, no TypeScript syntax, and neither a closing script tag nor an HTML
 * comment opener anywhere (renderDashboardHtml escapes the first and refuses the second).
 * Types live in dashboard_view.d.ts. Non-finite numbers arrive as numbers (the saved page
 * revives "NaN"/"Infinity" strings with {@link reviveNonFinite}); uPlot draws them as gaps
 * while tables print them as "NaN", so a NaN loss is visible, never hidden.
 */

const STYLE_ID = "flodl-dashboard-style";
const PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#8C564B", "#7F7F7F"];
const DARK = "--fd-bg:#0d1117;--fd-fg:#e6edf3;--fd-muted:#9da7b3;--fd-grid:rgba(255,255,255,.12);" +
  "--fd-border:#30363d;--fd-panel:#161b22;--fd-band:rgba(255,255,255,.05);color-scheme:dark;";
const LIGHT = "--fd-bg:#ffffff;--fd-fg:#1b1f24;--fd-muted:#57606a;--fd-grid:rgba(0,0,0,.10);" +
  "--fd-border:#d0d7de;--fd-panel:#f6f8fa;--fd-band:rgba(0,0,0,.04);color-scheme:light;";
const CSS = `.fd{${LIGHT}background:var(--fd-bg);color:var(--fd-fg);font:14px/1.45 system-ui,sans-serif;` +
  `padding:16px 20px;min-height:100vh;box-sizing:border-box}` +
  `.fd[data-theme=dark]{${DARK}}@media (prefers-color-scheme:dark){.fd[data-theme=auto]{${DARK}}}` +
  `.fd h1{font-size:1.5em;margin:0 0 4px}.fd h2{font-size:1.15em;margin:24px 0 8px}` +
  `.fd .fd-sub{color:var(--fd-muted);margin:0 0 12px}` +
  `.fd table{border-collapse:collapse;margin:4px 0}.fd th,.fd td{border:1px solid var(--fd-border);` +
  `padding:3px 8px;text-align:left;vertical-align:top}.fd th{background:var(--fd-panel);font-weight:600}` +
  `.fd td.num{text-align:right;font-variant-numeric:tabular-nums}` +
  `.fd .fd-grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(440px,100%),1fr));gap:12px}` +
  `.fd figure{margin:0;padding:8px;border:1px solid var(--fd-border);border-radius:6px;background:var(--fd-bg);min-width:0}` +
  `.fd figcaption{font-weight:600;margin-bottom:4px}.fd .fd-plot{width:100%}` +
  `.fd .u-legend{color:var(--fd-fg);font-size:12px}.fd .u-title{color:var(--fd-fg)}` +
  `.fd .fd-scroll{overflow-x:auto;max-width:100%}` +
  `.fd .fd-lane-legend{list-style:none;padding:0;margin:4px 0 0;display:flex;flex-wrap:wrap;gap:12px;font-size:12px}` +
  `.fd .fd-swatch{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}`;

/**
 * `JSON.parse` reviver turning the strings "NaN", "Infinity", "-Infinity" (how the
 * monitor writes non-finite numbers) back into numbers.
 */
export function reviveNonFinite(_key, value) {
  return value === "NaN" || value === "Infinity" || value === "-Infinity" ? Number(value) : value;
}

/**
 * Per-rank batch losses, bounded: at most `maxPerRank` points per rank. When a rank
 * overflows, neighbouring points merge pairwise (batch-weighted means; NaN propagates)
 * and later points average twice as many batches. Also tracks the mean batch loss since
 * the last reduce (the loss of a reduce window).
 */
export class BatchSeries {
  constructor(maxPerRank = 2000) {
    this.max = Math.max(2, maxPerRank | 0);
    this.ranks = new Map();
    this.winSum = 0;
    this.winN = 0;
  }
  #rank(r) {
    let s = this.ranks.get(r);
    if (!s) this.ranks.set(r, s = { points: [], count: 0, stride: 1, sum: 0, n: 0, epoch: 0 });
    return s;
  }
  add(ev) {
    const s = this.#rank(ev.rank);
    s.count++;
    s.sum += ev.loss;
    s.n++;
    s.epoch = ev.epoch;
    this.winSum += ev.loss;
    this.winN++;
    if (s.n >= s.stride) {
      s.points.push({ rank: ev.rank, epoch: ev.epoch, index: s.count, loss: s.sum / s.n, n: s.n });
      s.sum = 0;
      s.n = 0;
      if (s.points.length > this.max) {
        const merged = [];
        for (let i = 0; i < s.points.length; i += 2) {
          const a = s.points[i], b = s.points[i + 1];
          merged.push(b ? { ...b, loss: (a.loss * a.n + b.loss * b.n) / (a.n + b.n), n: a.n + b.n } : a);
        }
        s.points = merged;
        s.stride *= 2;
      }
    }
  }
  /** Mean loss of the batches since the previous call, or undefined when none ran. */
  takeWindowLoss() {
    const v = this.winN ? this.winSum / this.winN : undefined;
    this.winSum = 0;
    this.winN = 0;
    return v;
  }
  load(points) {
    this.ranks.clear();
    for (const p of points || []) {
      const s = this.#rank(p.rank);
      s.points.push({ ...p });
      s.count = Math.max(s.count, p.index);
      s.stride = Math.max(s.stride, p.n || 1);
    }
  }
  points() {
    const out = [];
    for (const [r, s] of [...this.ranks].sort((a, b) => a[0] - b[0])) {
      out.push(...s.points);
      if (s.n) out.push({ rank: r, epoch: s.epoch, index: s.count, loss: s.sum / s.n, n: s.n });
    }
    return out;
  }
}

/**
 * What each rank did over time, bounded: per rank, bins of `binMs` from `t0` holding the ms
 * spent computing, throttled (a simulated slow rank's sleep) and in reduces; the rest of a
 * bin between the rank's first and last batch is idle. A batch arriving at time `t` after
 * `ms` of work covers [t - ms, t]: its last (s - 1)/s is throttle for a rank slowed down s
 * times, except the rank's first batch (pipeline compilation, which a slowed-down rank
 * does not stretch: src/distributed/rank/chunk_run.ts). A reduce of `ms` ending at `t` covers [t - ms, t] on the ranks that took part.
 * When a rank would need more than `maxBins` bins, neighbouring bins merge pairwise and
 * `binMs` doubles, so a long run keeps its shape at the resolution a screen can show.
 */
export class RankActivity {
  constructor(maxBins = 1500, binMs = 20) {
    this.max = Math.max(8, maxBins | 0);
    this.binMs = binMs;
    this.t0 = undefined;
    this.end = undefined;
    /** Per rank: { compute, throttle, reduce } ms per bin, and its first batch start / last batch end. */
    this.ranks = [];
    /** Reduce ms per bin, whole run (the coordinator lane when no timeline events came). */
    this.sync = [];
  }
  #rank(r) {
    while (this.ranks.length <= r) this.ranks.push({ compute: [], throttle: [], reduce: [], from: undefined, to: undefined });
    return this.ranks[r];
  }
  /** Add [from, to) to the bins `owner[key]` (looked up after any merge, which replaces them). */
  #spread(owner, key, from, to) {
    if (!(to > from)) return;
    if (this.t0 === undefined) this.t0 = from;
    from = Math.max(from, this.t0);
    if (!(to > from)) return;
    for (;;) {
      const last = Math.floor((to - this.t0) / this.binMs);
      if (last < this.max) break;
      this.#coarsen();
    }
    const bins = owner[key];
    for (let i = Math.floor((from - this.t0) / this.binMs); ; i++) {
      const a = this.t0 + i * this.binMs, b = a + this.binMs;
      const overlap = Math.min(b, to) - Math.max(a, from);
      if (overlap > 0) {
        while (bins.length <= i) bins.push(0);
        bins[i] += overlap;
      }
      if (b >= to) break;
    }
    this.end = Math.max(this.end ?? to, to);
  }
  #coarsen() {
    const half = (bins) => {
      const out = [];
      for (let i = 0; i < bins.length; i += 2) out.push(bins[i] + (bins[i + 1] || 0));
      return out;
    };
    for (const r of this.ranks) {
      r.compute = half(r.compute);
      r.throttle = half(r.throttle);
      r.reduce = half(r.reduce);
    }
    this.sync = half(this.sync);
    this.binMs *= 2;
  }
  /** A batch of `rank` that ended at `t` after `ms` (slowed down `slowdown` times). */
  batch(rank, t, ms, slowdown = 1) {
    if (!(Number.isFinite(t) && Number.isFinite(ms) && ms >= 0)) return;
    const s = this.#rank(rank);
    if (this.t0 === undefined) this.t0 = t - ms;
    const work = slowdown > 1 && s.from !== undefined ? ms / slowdown : ms;
    this.#spread(s, "compute", t - ms, t - ms + work);
    this.#spread(s, "throttle", t - ms + work, t);
    s.from = Math.min(s.from ?? t - ms, t - ms);
    s.to = Math.max(s.to ?? t, t);
  }
  /** A reduce that ended at `t` after `ms`; `ranks` took part (all when omitted). */
  reduce(t, ms, ranks) {
    if (!(Number.isFinite(t) && Number.isFinite(ms) && ms >= 0) || this.t0 === undefined) return;
    for (const r of ranks ?? this.ranks.map((_, i) => i)) this.#spread(this.#rank(r), "reduce", t - ms, t);
    this.#spread(this, "sync", t - ms, t);
  }
  /**
   * Ms per kind of `rank` in bin `i`: compute, throttle, reduce as recorded (the sum capped
   * at the bin's span), idle the rest of the part of the bin between its first and last batch.
   */
  bin(rank, i) {
    const s = this.ranks[rank];
    const a = this.t0 + i * this.binMs, b = a + this.binMs;
    const span = s && s.from !== undefined ? Math.max(0, Math.min(b, s.to) - Math.max(a, s.from)) : 0;
    const compute = s?.compute[i] || 0, throttle = s?.throttle[i] || 0, reduce = s?.reduce[i] || 0;
    const busy = compute + throttle + reduce;
    const k = busy > this.binMs ? this.binMs / busy : 1;
    return { compute: compute * k, throttle: throttle * k, reduce: reduce * k, idle: Math.max(0, span - busy * k) };
  }
  /** Bins per rank (the longest). */
  get length() {
    return Math.max(this.sync.length, ...this.ranks.map((r) => Math.max(r.compute.length, r.throttle.length, r.reduce.length)));
  }
  toJSON() {
    return { t0: this.t0, end: this.end, binMs: this.binMs, max: this.max, ranks: this.ranks, sync: this.sync };
  }
  load(obj) {
    if (!obj) return this;
    this.t0 = obj.t0;
    this.end = obj.end;
    this.binMs = obj.binMs;
    this.max = obj.max ?? this.max;
    this.ranks = (obj.ranks || []).map((r) => ({ ...r, compute: [...r.compute], throttle: [...r.throttle], reduce: [...r.reduce] }));
    this.sync = [...(obj.sync || [])];
    return this;
  }
}

/**
 * A y range that fits `values` (non-finite ones ignored) with a margin; for a metric known
 * to live in [0, 1] (an accuracy) the range stays inside [0, 1]. With one value (or all
 * equal) the range still has a height. Returns [min, max], or null when there is no value.
 */
export function fitRange(values, unit = false) {
  const xs = values.filter((v) => typeof v === "number" && Number.isFinite(v));
  if (!xs.length) return null;
  let lo = Math.min(...xs), hi = Math.max(...xs);
  const pad = Math.max((hi - lo) * 0.1, Math.abs(hi) * 0.02, unit ? 0.02 : 1e-6);
  lo -= pad;
  hi += pad;
  if (unit && Math.min(...xs) >= 0 && Math.max(...xs) <= 1) {
    lo = Math.max(0, lo);
    hi = Math.min(1, hi);
  }
  return [lo, hi];
}

/** Whether an eval metric's name says it is a fraction in [0, 1]. */
const UNIT_METRIC = /acc|precision|recall|f1|iou|auc/i;

function fmt(v, digits = 5) {
  if (v === undefined || v === null) return "–";
  if (typeof v !== "number") return String(v);
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v)) return String(v);
  return Number(v.toPrecision(digits)).toString();
}

function fmtBytes(v) {
  if (!Number.isFinite(v)) return String(v);
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${Number(v.toPrecision(3))} ${units[i]}`;
}

function fmtTime(ms) {
  return typeof ms === "number" && Number.isFinite(ms)
    ? new Date(ms).toISOString().replace("T", " ").slice(0, 19)
    : "–";
}

const gap = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** The ranks that took part in a reduce (steps or counts > 0), or undefined (all) when not said. */
function reduceRanks(ev) {
  const per = ev.steps || ev.counts;
  return per ? per.flatMap((n, r) => (n > 0 ? [r] : [])) : undefined;
}
// Legends say "rank r" only: the adapters are named once, in the subtitle.
const rankName = (_data, r) => `rank ${r}`;

/** The ranks' adapters for the subtitle: "2 ranks on X", or each rank's when they differ. */
function devicesLine(d) {
  const devs = d.devices || [];
  const ranks = `${d.worldSize} rank${d.worldSize === 1 ? "" : "s"}`;
  if (!devs.length) return ranks;
  if (devs.every((x) => x === devs[0])) return `${ranks} on ${devs[0]}`;
  return `${ranks}: ${devs.map((x, r) => `rank ${r} on ${x}`).join(", ")}`;
}

/** The eval metric's name ("accuracy"), or "eval metric" when the run did not say. */
const evalName = (d) => d.evalLabel || "eval metric";

/**
 * Units of the record tree's columns: flodl writes throughput in samples per ms; the table
 * shows samples/s, as the charts do.
 */
const RECORD_UNITS = {
  throughput: { label: "throughput (samples/s)", scale: 1000 },
  compute_only_ms: { label: "compute (ms)", scale: 1 },
  data_starve: { label: "data starve (ms)", scale: 1 },
  batch_share: { label: "batch share", scale: 1 },
  sync_ms: { label: "reduce (ms)", scale: 1 },
  cpu_avg_ms: { label: "CPU average (ms)", scale: 1 },
};

/**
 * The data plane's table: one row per rank, from the last epoch's
 * `perRankData` (src/data/plane_counters.ts keys). Counters are the epoch's; bytes are
 * what each tier held at its end.
 */
const DATA_COLUMNS = [
  ["data_vram_gathered", "VRAM gathered (batches)"],
  ["data_vram_uploaded", "uploaded (batches)"],
  ["data_ram_hits", "RAM hits"],
  ["data_disk_hits", "disk hits"],
  ["data_source_reads", "source reads (misses)"],
  ["data_ram_evictions", "RAM evictions"],
  ["data_disk_spills", "spilled to disk"],
  ["data_disk_drops", "dropped"],
  ["data_vram_bytes", "VRAM pool", true],
  ["data_ram_bytes", "RAM held", true],
  ["data_disk_bytes", "disk held", true],
  ["data_wait_ms", "waited for data (ms)"],
];

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined) e.setAttribute(k, String(v));
  for (const k of kids) e.append(k);
  return e;
}

/** Chart definitions: each turns the data into uPlot series + aligned columns, or null when absent. */
const CHARTS = [
  {
    id: "loss-epoch",
    section: "Loss",
    caption: "Loss per epoch: each rank and the consensus",
    x: "epoch",
    y: "loss",
    build(d) {
      const rows = d.epochs;
      if (!rows.length) return null;
      const series = [];
      for (let r = 0; r < d.worldSize; r++) {
        series.push({
          label: rankName(d, r),
          col: rows.map((e) => gap(e.perRankLoss?.[r])),
        });
      }
      series.push({ label: "consensus", col: rows.map((e) => gap(e.avgLoss)), main: true });
      return { x: rows.map((e) => e.epoch + 1), series }; // epochs counted from 1, as evals and the terminal
    },
  },
  {
    id: "loss-batch",
    section: "Loss",
    caption: "Loss per batch, each rank (downsampled)",
    x: "batch",
    y: "loss",
    build(d) {
      const pts = d.batches || [];
      if (!pts.length) return null;
      const xs = [...new Set(pts.map((p) => p.index))].sort((a, b) => a - b);
      const at = new Map(xs.map((x, i) => [x, i]));
      const series = [];
      for (let r = 0; r < d.worldSize; r++) {
        const col = xs.map(() => null);
        for (const p of pts) if (p.rank === r) col[at.get(p.index)] = gap(p.loss);
        series.push({ label: rankName(d, r), col, spanGaps: true });
      }
      return { x: xs, series };
    },
  },
  {
    id: "loss-reduce",
    section: "Loss",
    caption: "Mean batch loss per reduce window (consensus)",
    x: "reduce",
    y: "loss",
    build(d) {
      const rows = (d.reduces || []).filter((e) => e.loss !== undefined);
      if (!rows.length) return null;
      return {
        x: rows.map((e) => e.round),
        series: [{ label: "window loss", col: rows.map((e) => gap(e.loss)), main: true }],
      };
    },
  },
  {
    id: "eval",
    section: "Loss",
    caption: "Eval metric per epoch",
    captionOf: (d) => `Eval ${evalName(d)} per epoch`,
    x: "epoch",
    y: "eval",
    yOf: evalName,
    build(d) {
      const rows = d.evals || [];
      if (!rows.length) return null;
      const col = rows.map((e) => gap(e.value));
      // uPlot's own range around one accuracy of 0.9 ran 0 to 1.5; fit the data, in [0, 1] for a fraction.
      return {
        x: rows.map((e) => e.epoch),
        series: [{ label: evalName(d), col, main: true }],
        yRange: fitRange(col, UNIT_METRIC.test(evalName(d))),
      };
    },
  },
  {
    id: "throughput",
    section: "Throughput",
    caption: "Throughput per rank (samples/s) per epoch",
    x: "epoch",
    y: "samples/s",
    build(d) {
      const rows = d.epochs;
      if (!rows.length) return null;
      const series = [];
      for (let r = 0; r < d.worldSize; r++) {
        series.push({ label: rankName(d, r), col: rows.map((e) => gap((e.perRankThroughput?.[r] ?? NaN) * 1000)) });
      }
      return { x: rows.map((e) => e.epoch + 1), series }; // epochs counted from 1, as evals and the terminal
    },
  },
  {
    id: "batch-share",
    section: "Throughput",
    caption: "Batch share per rank per epoch",
    x: "epoch",
    y: "share",
    build(d) {
      const rows = d.epochs;
      if (!rows.length) return null;
      const series = [];
      for (let r = 0; r < d.worldSize; r++) {
        series.push({
          label: rankName(d, r),
          col: rows.map((e) => gap(e.perRankBatchShare?.[r])),
        });
      }
      return { x: rows.map((e) => e.epoch + 1), series }; // epochs counted from 1, as evals and the terminal
    },
  },
  {
    id: "reduce-timing",
    section: "Averaging",
    caption: "Reduce timings (ms) and ElChe anchor per reduce",
    x: "reduce",
    y: "ms",
    y2: "anchor",
    build(d) {
      const rows = d.reduces || [];
      if (!rows.length) return null;
      return {
        x: rows.map((e) => e.round),
        series: [
          { label: "reduce ms", col: rows.map((e) => gap(e.ms)) },
          { label: "CPU average ms", col: rows.map((e) => gap(e.averageMs)) },
          { label: "anchor", col: rows.map((e) => gap(e.anchor)), scale: "y2", dash: [6, 4] },
        ],
      };
    },
  },
  {
    id: "wire-bytes",
    section: "Averaging",
    caption: "Wire bytes per reduce (all ranks, up and down)",
    captionOf(d) {
      const rows = d.reduces || [];
      const same = rows.length > 0 && rows.every((e) => e.bytesUp === e.bytesDown);
      return same
        ? "Wire bytes per reduce (all ranks): up and down are equal, down drawn dashed on up"
        : "Wire bytes per reduce (all ranks, up and down)";
    },
    x: "reduce",
    y: "bytes",
    bytes: true,
    build(d) {
      const rows = d.reduces || [];
      if (!rows.length) return null;
      return {
        x: rows.map((e) => e.round),
        // Up and down are often equal (every rank sends and gets one full frame): up is the
        // wide pale line, down the dashed one on top, so both stay visible.
        series: [
          { label: "up: ranks → coordinator", col: rows.map((e) => gap(e.bytesUp)), width: 5, alpha: "66", pointSize: 9 },
          { label: "down: consensus → ranks", col: rows.map((e) => gap(e.bytesDown)), dash: [6, 4], pointSize: 4 },
        ],
      };
    },
  },
];

const SECTIONS = ["Loss", "Throughput", "Averaging"];

/** Lane colours of the swimlane, by what they show: [kind, legend, palette index]. */
/** Idle is drawn pale: it is the absence of work, not a kind of it. */
const IDLE_ALPHA = "59";
const LANE_KINDS = [
  ["compute", "rank: compute", 2],
  ["throttle", "rank: throttle (slowed down)", 3],
  ["sync", "reduce", 0],
  ["idle", "rank: idle", 7],
  ["avg", "coordinator: CPU average", 1],
  ["div", "divergence", 6],
  ["anchor", "anchor change", 4],
];

/**
 * Draw the timeline as lanes (coordinator, then one per rank) on a canvas: epoch bands,
 * reduce and CPU-average blocks, anchor changes, divergence dots, idle blocks, throttles.
 */
function drawSwimlane(canvas, data, colors, cssWidth) {
  const ev = data.timeline || [];
  const lanes = ["coordinator"];
  for (let r = 0; r < data.worldSize; r++) lanes.push(`rank ${r}`);
  const laneH = 26, labelW = 96, axisH = 22, top = 16;
  const h = top + lanes.length * laneH + axisH;
  const dpr = globalThis.devicePixelRatio || 1;
  canvas.width = Math.round(cssWidth * dpr);
  canvas.height = Math.round(h * dpr);
  canvas.style.width = `${cssWidth}px`;
  canvas.style.height = `${h}px`;
  const g = canvas.getContext("2d");
  if (!g) return;
  g.scale(dpr, dpr);
  g.clearRect(0, 0, cssWidth, h);
  g.font = "12px system-ui, sans-serif";
  const act = data.activity && data.activity.t0 !== undefined ? new RankActivity().load(data.activity) : undefined;
  const ts = ev.map((e) => e.ts_ms).filter(Number.isFinite);
  if (act) ts.push(act.t0, act.end ?? act.t0);
  const t0 = Math.min(...ts), t1 = Math.max(t0 + 1, ...ts);
  const plotW = Math.max(10, cssWidth - labelW - 8);
  const X = (t) => labelW + ((t - t0) / (t1 - t0)) * plotW;
  const laneY = (i) => top + i * laneH;
  // epoch bands
  const open = new Map();
  let band = 0;
  for (const e of ev) {
    if (e.kind === "EpochStart") open.set(e.epoch, e.ts_ms);
    if (e.kind === "EpochEnd" && open.has(e.epoch)) {
      const a = X(open.get(e.epoch)), b = X(e.ts_ms);
      if (band++ % 2 === 0) {
        g.fillStyle = colors.band;
        g.fillRect(a, top, Math.max(1, b - a), lanes.length * laneH);
      }
      g.fillStyle = colors.muted;
      g.fillText(`epoch ${e.epoch + 1}`, a + 2, top - 4);
    }
  }
  // lane labels and separators
  g.strokeStyle = colors.grid;
  lanes.forEach((name, i) => {
    g.fillStyle = colors.fg;
    g.fillText(name, 4, laneY(i) + laneH / 2 + 4);
    g.beginPath();
    g.moveTo(labelW, laneY(i) + laneH);
    g.lineTo(labelW + plotW, laneY(i) + laneH);
    g.stroke();
  });
  const color = (kind) => PALETTE[LANE_KINDS.find((k) => k[0] === kind)[2]];
  const block = (lane, from, to, kind, inset) => {
    const a = X(from), b = X(to);
    g.fillStyle = color(kind);
    g.fillRect(a, laneY(lane) + inset, Math.max(1.5, b - a), laneH - 2 * inset);
  };
  // Each rank's bins as full-height bands, split left to right in proportion to the bin's
  // compute, throttle, reduce and idle ms: a fine bin is all one kind, so the lane reads as
  // bands in time; a coarse one (a long run) shows the mix.
  const syncEvents = ev.some((e) => e.kind === "SyncEnd");
  if (act) {
    const w = (act.binMs / (t1 - t0)) * plotW;
    const order = ["compute", "throttle", "reduce", "idle"];
    for (let r = 0; r < Math.min(data.worldSize, act.ranks.length); r++) {
      const y = laneY(r + 1) + 3;
      for (let i = 0; i < act.length; i++) {
        const b = act.bin(r, i);
        let x = X(act.t0 + i * act.binMs);
        for (const k of order) {
          if (!(b[k] > 0)) continue;
          const bw = (b[k] / act.binMs) * w;
          g.fillStyle = k === "idle" ? color("idle") + IDLE_ALPHA : color(k === "reduce" ? "sync" : k);
          g.fillRect(x, y, Math.max(0.5, bw), laneH - 6);
          x += bw;
        }
      }
    }
    if (!syncEvents) {
      for (let i = 0; i < act.sync.length; i++) {
        if (!(act.sync[i] > 0)) continue;
        const inset = 4, hgt = (laneH - 2 * inset) * Math.min(1, act.sync[i] / act.binMs);
        g.fillStyle = color("sync");
        g.fillRect(X(act.t0 + i * act.binMs), laneY(0) + laneH - inset - hgt, Math.max(1, w), hgt);
      }
    }
  }
  // reduces first, so the CPU average inside each stays visible on top
  for (const e of ev) if (e.kind === "SyncEnd") block(0, e.ts_ms - e.duration, e.ts_ms, "sync", 4);
  for (const e of ev) {
    const rankLane = (r) => (Number.isInteger(r) && r >= 0 && r < data.worldSize ? r + 1 : -1);
    if (e.kind === "CpuAvgEnd") block(0, e.ts_ms - e.duration, e.ts_ms, "avg", 9);
    else if (e.kind === "Idle" && rankLane(e.device) > 0) {
      block(rankLane(e.device), e.ts_ms - e.duration, e.ts_ms, "idle", 6);
    } else if (e.kind === "AnchorChanged") {
      g.strokeStyle = color("anchor");
      g.beginPath();
      g.moveTo(X(e.ts_ms), laneY(0));
      g.lineTo(X(e.ts_ms), laneY(0) + laneH);
      g.stroke();
    } else if (e.kind === "Divergence") {
      g.fillStyle = color("div");
      g.beginPath();
      g.arc(X(e.ts_ms), laneY(0) + laneH - 5, 3, 0, 2 * Math.PI);
      g.fill();
    } else if (e.kind === "Throttle" && rankLane(e.rank) > 0) {
      const x = X(e.ts_ms), y = laneY(rankLane(e.rank));
      g.fillStyle = color("throttle");
      g.beginPath();
      g.moveTo(x - 5, y + 4);
      g.lineTo(x + 5, y + 4);
      g.lineTo(x, y + 12);
      g.fill();
    }
  }
  // time axis, seconds from the first event
  g.fillStyle = colors.muted;
  const y = top + lanes.length * laneH + 15;
  for (let i = 0; i <= 4; i++) {
    const t = t0 + ((t1 - t0) * i) / 4;
    const label = `${fmt((t - t0) / 1000, 3)} s`;
    g.fillText(label, Math.min(X(t), labelW + plotW - g.measureText(label).width), y);
  }
}

/**
 * The dashboard as a DOM view. `setData` renders at once; `append*` redraw on the next
 * animation frame. Pass uPlot in `options.uPlot` (else the global `uPlot` is used).
 */
export class DashboardView {
  #uPlot;
  #root;
  #theme;
  #title;
  #data;
  #series;
  #activity;
  #now;
  #charts = new Map();
  #figures = new Map();
  #nodes = {};
  #pending = false;
  #media;
  #onMedia;
  #resize;
  #width = 0;

  constructor(container, options = {}) {
    this.#uPlot = options.uPlot || globalThis.uPlot;
    if (typeof this.#uPlot !== "function") {
      throw new TypeError(
        "DashboardView: options.uPlot must be the uPlot constructor (or a global uPlot; dashboard_live.ts binds npm's), got " +
          typeof this.#uPlot,
      );
    }
    this.#title = options.title;
    this.#series = new BatchSeries(options.maxBatchPoints);
    this.#activity = new RankActivity();
    this.#now = options.now || Date.now;
    this.#data = { worldSize: 1, epochs: [], reduces: [], batches: [], evals: [], timeline: [], records: [] };
    const doc = container.ownerDocument;
    if (!doc.getElementById(STYLE_ID)) {
      const style = doc.createElement("style");
      style.id = STYLE_ID;
      style.textContent = CSS;
      doc.head.append(style);
    }
    this.#root = el("div", { class: "fd" });
    container.append(this.#root);
    this.#build();
    this.setTheme(options.theme || "auto");
    if (typeof ResizeObserver === "function") {
      this.#resize = new ResizeObserver(() => {
        const w = this.#root.clientWidth;
        if (Math.abs(w - this.#width) > 8) this.#schedule();
      });
      this.#resize.observe(this.#root);
    }
  }

  /** The data shown now (appends included). */
  get data() {
    return { ...this.#data, batches: this.#series.points(), activity: this.#activity.toJSON() };
  }

  /** The root element of the view. */
  get element() {
    return this.#root;
  }

  /** "light" | "dark" pin the theme; "auto" follows prefers-color-scheme. */
  setTheme(theme) {
    if (theme !== "light" && theme !== "dark" && theme !== "auto") {
      throw new RangeError(`DashboardView: theme must be "light", "dark" or "auto", got ${JSON.stringify(theme)}`);
    }
    this.#theme = theme;
    this.#root.dataset.theme = theme;
    if (this.#media && this.#onMedia) this.#media.removeEventListener("change", this.#onMedia);
    this.#media = undefined;
    if (theme === "auto" && typeof matchMedia === "function") {
      this.#media = matchMedia("(prefers-color-scheme: dark)");
      this.#onMedia = () => this.#rebuildCharts();
      this.#media.addEventListener("change", this.#onMedia);
    }
    this.#rebuildCharts();
  }

  /** Replace everything shown. */
  setData(data) {
    this.#data = {
      ...data,
      worldSize: data.worldSize || 1,
      epochs: [...(data.epochs || [])].sort((a, b) => a.epoch - b.epoch),
      reduces: [...(data.reduces || [])],
      evals: [...(data.evals || [])],
      timeline: [...(data.timeline || [])],
      records: [...(data.records || [])],
    };
    this.#series.load(data.batches);
    this.#activity = new RankActivity().load(data.activity);
    this.#render();
  }

  /** One epoch's metrics (the coordinator's RunEpochMetrics). */
  appendEpoch(row) {
    this.#data.epochs = [...this.#data.epochs.filter((e) => e.epoch !== row.epoch), row].sort((a, b) =>
      a.epoch - b.epoch
    );
    this.#data.worldSize = Math.max(this.#data.worldSize, row.perRankLoss?.length || 0);
    this.#schedule();
  }

  /** One reduce (the coordinator's ReduceEvent); its window loss comes from the batches since the last one. */
  appendReduce(ev) {
    const loss = ev.loss !== undefined ? ev.loss : this.#series.takeWindowLoss();
    this.#data.reduces.push(loss === undefined ? { ...ev } : { ...ev, loss });
    this.#activity.reduce(this.#now(), ev.ms, reduceRanks(ev));
    this.#schedule();
  }

  /** One batch (the coordinator's BatchEvent: rank, epoch, loss). */
  appendBatch(ev) {
    this.#series.add(ev);
    this.#activity.batch(ev.rank, this.#now(), ev.ms ?? ev.computeMs, this.#data.slowdown?.[ev.rank]);
    if (ev.rank >= this.#data.worldSize) this.#data.worldSize = ev.rank + 1;
    this.#schedule();
  }

  appendEval(epoch, value) {
    this.#data.evals = [...this.#data.evals.filter((e) => e.epoch !== epoch), { epoch, value }].sort((a, b) =>
      a.epoch - b.epoch
    );
    this.#schedule();
  }

  /** One timeline entry ({ kind, ts_ms, ... }). */
  appendEvent(entry) {
    this.#data.timeline.push(entry);
    this.#schedule();
  }

  /**
   * A rank joined or was lost ({ ts, rank, kind: "joined" | "lost", epoch, reason?, host?,
   * adapter?, transport? }); a joined rank's place goes into the rank table.
   */
  appendMembership(row) {
    this.#data.membership = [...(this.#data.membership || []), row];
    if (row.kind === "joined") {
      const ranks = [...(this.#data.ranks || [])];
      ranks[row.rank] = { rank: row.rank, host: row.host, adapter: row.adapter, transport: row.transport };
      this.#data.ranks = ranks;
    }
    if (row.rank >= this.#data.worldSize) this.#data.worldSize = row.rank + 1;
    this.#schedule();
  }

  /** One monitor record (alerts are listed; the last epoch rows fill the record-tree table). */
  appendRecord(record) {
    this.#data.records.push(record);
    this.#schedule();
  }

  destroy() {
    for (const u of this.#charts.values()) u.destroy();
    this.#charts.clear();
    if (this.#resize) this.#resize.disconnect();
    if (this.#media && this.#onMedia) this.#media.removeEventListener("change", this.#onMedia);
    this.#root.remove();
  }

  #schedule() {
    if (this.#pending) return;
    this.#pending = true;
    const run = () => {
      this.#pending = false;
      this.#render();
    };
    if (typeof requestAnimationFrame === "function") requestAnimationFrame(run);
    else setTimeout(run, 0);
  }

  #build() {
    const n = this.#nodes;
    n.h1 = el("h1", { id: "fd-title" });
    n.sub = el("p", { class: "fd-sub" });
    n.summary = el("table", { id: "fd-summary", "aria-labelledby": "fd-h-summary" });
    this.#root.append(n.h1, n.sub, el("h2", { id: "fd-h-summary" }, "Summary"), n.summary);
    for (const section of SECTIONS) {
      const hid = `fd-h-${section.toLowerCase()}`;
      const grid = el("div", { class: "fd-grid" });
      this.#root.append(el("section", { "aria-labelledby": hid }, el("h2", { id: hid }, section), grid));
      for (const c of CHARTS.filter((c) => c.section === section)) {
        const cap = el("figcaption", { id: `fd-cap-${c.id}` }, c.caption);
        const plot = el("div", { class: "fd-plot", role: "img", "aria-label": c.caption });
        const fig = el(
          "figure",
          { id: `fd-${c.id}`, class: "fd-chart", "data-chart": c.id, "aria-labelledby": cap.id },
          cap,
          plot,
        );
        fig.hidden = true;
        grid.append(fig);
        this.#figures.set(c.id, { fig, plot, cap });
      }
    }
    n.laneCanvas = el("canvas", { role: "img", class: "fd-swimlane", "aria-label": "Timeline swimlane" });
    n.laneLegend = el("ul", { class: "fd-lane-legend" });
    for (const [kind, label, p] of LANE_KINDS) {
      const bg = PALETTE[p] + (kind === "idle" ? IDLE_ALPHA : "");
      n.laneLegend.append(el("li", {}, el("span", { class: "fd-swatch", style: `background:${bg}` }), label));
    }
    n.laneFig = el(
      "figure",
      { id: "fd-timeline", "aria-labelledby": "fd-cap-timeline" },
      el("figcaption", { id: "fd-cap-timeline" }, "Timeline: coordinator and rank lanes"),
      n.laneCanvas,
      n.laneLegend,
    );
    n.laneSection = el(
      "section",
      { "aria-labelledby": "fd-h-timeline" },
      el("h2", { id: "fd-h-timeline" }, "Timeline"),
      n.laneFig,
    );
    n.tree = el("table", { id: "fd-tree", "aria-labelledby": "fd-h-tree" });
    n.treeSection = el(
      "section",
      { "aria-labelledby": "fd-h-tree" },
      el("h2", { id: "fd-h-tree" }, "Record tree (latest epoch)"),
      el("div", { class: "fd-scroll" }, n.tree),
    );
    n.data = el("table", { id: "fd-data", "aria-labelledby": "fd-h-data" });
    n.dataSection = el(
      "section",
      { "aria-labelledby": "fd-h-data" },
      el("h2", { id: "fd-h-data" }, "Data plane (latest epoch)"),
      el("div", { class: "fd-scroll" }, n.data),
    );
    n.ranks = el("table", { id: "fd-ranks", "aria-labelledby": "fd-h-ranks" });
    n.membership = el("table", { id: "fd-membership", "aria-label": "Ranks joined and lost" });
    n.ranksSection = el(
      "section",
      { "aria-labelledby": "fd-h-ranks" },
      el("h2", { id: "fd-h-ranks" }, "Ranks"),
      el("div", { class: "fd-scroll" }, n.ranks),
      el("div", { class: "fd-scroll" }, n.membership),
    );
    n.alerts = el("table", { id: "fd-alerts", "aria-labelledby": "fd-h-alerts" });
    n.alertSection = el(
      "section",
      { "aria-labelledby": "fd-h-alerts" },
      el("h2", { id: "fd-h-alerts" }, "Alerts"),
      n.alerts,
    );
    n.config = el("table", { id: "fd-config", "aria-labelledby": "fd-h-config" });
    n.configSection = el(
      "section",
      { "aria-labelledby": "fd-h-config" },
      el("h2", { id: "fd-h-config" }, "Configuration"),
      el("div", { class: "fd-scroll" }, n.config),
    );
    this.#root.append(n.laneSection, n.ranksSection, n.treeSection, n.dataSection, n.alertSection, n.configSection);
  }

  #colors() {
    const cs = getComputedStyle(this.#root);
    const v = (name, dflt) => cs.getPropertyValue(name).trim() || dflt;
    return {
      fg: v("--fd-fg", "#1b1f24"),
      bg: v("--fd-bg", "#ffffff"),
      muted: v("--fd-muted", "#57606a"),
      grid: v("--fd-grid", "rgba(0,0,0,.1)"),
      band: v("--fd-band", "rgba(0,0,0,.04)"),
    };
  }

  #rebuildCharts() {
    for (const u of this.#charts.values()) u.destroy();
    this.#charts.clear();
    this.#render();
  }

  #render() {
    const d = this.data;
    this.#width = this.#root.clientWidth;
    this.#renderHeader(d);
    this.#renderCharts(d);
    this.#renderSwimlane(d);
    this.#renderTables(d);
  }

  #renderHeader(d) {
    const n = this.#nodes;
    n.h1.textContent = d.title || this.#title || "flodl training run";
    const parts = [devicesLine(d)];
    if (d.startedAt) parts.push(`started ${fmtTime(d.startedAt)} UTC`);
    if (d.finishedAt) parts.push(`finished ${fmtTime(d.finishedAt)} UTC`);
    n.sub.textContent = parts.join(" · ");
    const epochs = d.epochs;
    const last = epochs[epochs.length - 1];
    const samples = epochs.reduce((a, e) => a + (e.perRankSamples || []).reduce((x, y) => x + y, 0), 0);
    const ms = epochs.reduce((a, e) => a + (e.epochMs || 0), 0);
    const reduces = d.reduces.length || epochs.reduce((a, e) => a + (e.reduces || 0), 0);
    const lastEval = d.evals[d.evals.length - 1];
    const rows = [
      ["epochs", "Epochs", epochs.length],
      ["final-loss", "Final loss (consensus)", last ? last.avgLoss : undefined],
      ["final-eval", `Final ${evalName(d)}`, lastEval ? lastEval.value : undefined],
      ["reduces", "Reduces", reduces],
      ["samples-per-s", "Samples/s", ms > 0 ? (samples / ms) * 1000 : undefined],
      ["samples", "Samples", samples],
      ["train-time", "Training time (s)", ms / 1000],
      ["world-size", "Ranks", d.worldSize],
    ];
    n.summary.replaceChildren(
      ...rows.map(([key, label, v]) =>
        el("tr", { "data-key": key }, el("th", { scope: "row" }, label), el("td", { class: "num" }, fmt(v)))
      ),
    );
  }

  #renderCharts(d) {
    const colors = this.#colors();
    for (const c of CHARTS) {
      const { fig, plot, cap } = this.#figures.get(c.id);
      const caption = c.captionOf ? c.captionOf(d) : c.caption;
      cap.textContent = caption;
      const built = c.build(d);
      if (!built) {
        fig.hidden = true;
        fig.dataset.points = "0";
        const old = this.#charts.get(c.id);
        if (old) old.destroy();
        this.#charts.delete(c.id);
        continue;
      }
      fig.hidden = false;
      fig.dataset.points = String(built.x.length);
      const lastVals = built.series.map((s) => `${s.label} ${fmt(s.col[s.col.length - 1])}`).join(", ");
      plot.setAttribute(
        "aria-label",
        `${caption}: ${built.series.length} series over ${built.x.length} points; last values ${lastVals}`,
      );
      const columns = [built.x, ...built.series.map((s) => s.col)];
      const width = Math.max(240, plot.clientWidth || 600);
      const yLabel = c.yOf ? c.yOf(d) : c.y;
      const sig = [yLabel, ...built.series.map((s) => s.label)].join("|");
      const u = this.#charts.get(c.id);
      if (u && u.fdSig === sig) {
        u.fdRange = built.yRange;
        u.setData(columns);
        if (Math.abs(u.width - width) > 4) u.setSize({ width, height: 240 });
        continue;
      }
      if (u) u.destroy();
      const axis = (label, extra) => ({
        label,
        stroke: colors.fg,
        grid: { stroke: colors.grid },
        ticks: { stroke: colors.grid },
        ...extra,
      });
      const value = (_u, v) => (v === null || v === undefined ? "–" : c.bytes ? fmtBytes(v) : fmt(v));
      let k = 0;
      const opts = {
        width,
        height: 240,
        // The y range drawn, on the figure (data-y-range), for tests and the curious.
        hooks: {
          setScale: [(uu, key) => {
            if (key === "y") fig.dataset.yRange = `${uu.scales.y.min},${uu.scales.y.max}`;
          }],
        },
        scales: {
          x: { time: false },
          // A fitted range (the eval's), read from the chart so setData keeps it current.
          ...("yRange" in built
            ? { y: { range: (uu, lo, hi) => (uu.fdRange === undefined ? built.yRange : uu.fdRange) || [lo, hi] } }
            : {}),
          ...(c.y2 ? { y2: {} } : {}),
        },
        series: [
          { label: c.x, value: (_u, v) => fmt(v) },
          ...built.series.map((s) => ({
            label: s.label,
            stroke: s.main ? colors.fg : PALETTE[k++ % PALETTE.length] + (s.alpha || ""),
            width: s.width || (s.main ? 2.5 : 1.5),
            spanGaps: !!s.spanGaps,
            dash: s.dash,
            scale: s.scale || "y",
            value,
            points: { show: built.x.length <= 60, fill: colors.bg, ...(s.pointSize ? { size: s.pointSize } : {}) },
          })),
        ],
        axes: [
          axis(c.x, { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 1e6] }),
          axis(yLabel, c.bytes ? { values: (_u, vals) => vals.map(fmtBytes), size: 70 } : {}),
          ...(c.y2 ? [axis(c.y2, { scale: "y2", side: 1, grid: { show: false } })] : []),
        ],
      };
      const chart = new this.#uPlot(opts, columns, plot);
      chart.fdSig = sig;
      chart.fdRange = built.yRange;
      this.#charts.set(c.id, chart);
    }
  }

  #renderSwimlane(d) {
    const n = this.#nodes;
    const shown = d.timeline.length > 0 || d.activity?.t0 !== undefined;
    n.laneSection.hidden = !shown;
    if (!shown) return;
    const width = Math.max(320, (n.laneFig.clientWidth || 800) - 18);
    drawSwimlane(n.laneCanvas, d, this.#colors(), width);
    const count = (k) => d.timeline.filter((e) => e.kind === k).length;
    n.laneCanvas.setAttribute(
      "aria-label",
      `Timeline swimlane, ${d.worldSize + 1} lanes (coordinator, then each rank's compute, throttle, reduce and idle time): ` +
        `${count("EpochEnd")} epochs, ` +
        `${count("SyncEnd")} reduces, ${count("CpuAvgEnd")} CPU averages, ${count("Idle")} idle periods, ` +
        `${count("Throttle")} throttles, ${count("AnchorChanged")} anchor changes`,
    );
  }

  /**
   * Where each rank runs (host, adapter, transport) and its membership: the epoch it joined
   * (elastic) and the epoch it was lost, with the reason; then every change in order.
   */
  #renderRanks(d, head) {
    const n = this.#nodes;
    const events = d.membership || [];
    const ranks = d.ranks || [];
    n.ranksSection.hidden = ranks.length === 0 && events.length === 0;
    if (n.ranksSection.hidden) return;
    const world = Math.max(d.worldSize, ranks.length);
    const status = (r) => {
      const mine = events.filter((e) => e.rank === r);
      const joined = mine.filter((e) => e.kind === "joined").map((e) => `joined for epoch ${e.epoch + 1}`);
      const lost = mine.filter((e) => e.kind === "lost").map((e) => `lost in epoch ${e.epoch + 1}: ${e.reason || ""}`);
      const vacant = !ranks[r]?.adapter && !mine.length;
      return [...joined, ...lost].join("; ") || (vacant ? "spare slot, never joined" : "from the start");
    };
    n.ranks.replaceChildren(
      head("rank", "host", "adapter", "transport", "membership"),
      ...Array.from({ length: world }, (_, r) => {
        const x = ranks[r] || {};
        return el(
          "tr",
          { "data-rank": String(r), "data-transport": x.transport || "" },
          el("th", { scope: "row" }, `rank ${r}`),
          el("td", {}, x.host || (x.transport === "remote" ? "?" : x.adapter ? "this host" : "–")),
          el("td", {}, x.adapter || "–"),
          el("td", {}, x.transport || "–"),
          el("td", {}, status(r)),
        );
      }),
    );
    n.membership.hidden = events.length === 0;
    n.membership.replaceChildren(
      head("time (UTC)", "rank", "event", "epoch", "detail"),
      ...events.map((e) =>
        el(
          "tr",
          { "data-kind": e.kind },
          el("td", {}, fmtTime(e.ts)),
          el("td", { class: "num" }, fmt(e.rank)),
          el("td", {}, e.kind),
          el("td", { class: "num" }, fmt(e.epoch + 1)),
          el("td", {}, e.kind === "joined" ? `${e.host || "?"}: ${e.adapter || "?"} (${e.transport || "?"})` : e.reason || ""),
        )
      ),
    );
  }

  #renderTables(d) {
    const n = this.#nodes;
    const head = (...cols) => el("tr", {}, ...cols.map((c) => el("th", { scope: "col" }, c)));
    const nodes = d.records.filter((r) => r.kind === "node" && r.epoch_complete);
    const lastEpoch = Math.max(-Infinity, ...nodes.map((r) => r.epoch));
    const latest = new Map();
    for (const r of nodes) if (r.epoch === lastEpoch) latest.set(r.path, r);
    n.treeSection.hidden = latest.size === 0;
    // The data plane's keys have their own table below.
    const keys = [...new Set([...latest.values()].flatMap((r) => Object.keys(r.metrics)))].filter((k) => !k.startsWith("data_"));
    const unit = (k) => RECORD_UNITS[k] || { label: k, scale: 1 };
    n.tree.replaceChildren(
      head("path", "epoch", "work", "alive", ...keys.map((k) => unit(k).label)),
      ...[...latest.values()].map((r) =>
        el(
          "tr",
          {},
          el("th", { scope: "row" }, r.path),
          el("td", { class: "num" }, fmt(r.epoch)),
          el("td", { class: "num" }, fmt(r.work)),
          el("td", {}, String(r.alive)),
          ...keys.map((k) => el("td", { class: "num", "data-key": k }, fmt(r.metrics[k] === undefined ? undefined : r.metrics[k] * unit(k).scale))),
        )
      ),
    );
    const planeRow = [...d.epochs].reverse().find((e) => (e.perRankData || []).some((x) => x && Object.keys(x).length));
    n.dataSection.hidden = !planeRow;
    if (planeRow) {
      const cols = DATA_COLUMNS.filter(([k]) => planeRow.perRankData.some((x) => x && x[k] !== undefined));
      n.data.replaceChildren(
        head("rank", ...cols.map(([, label]) => label)),
        ...planeRow.perRankData.map((x, r) =>
          el(
            "tr",
            {},
            el("th", { scope: "row" }, `rank ${r}`),
            ...cols.map(([k, , bytes]) =>
              el("td", { class: "num", "data-key": k }, x?.[k] === undefined ? "–" : bytes ? fmtBytes(x[k]) : fmt(x[k]))
            ),
          )
        ),
      );
    }
    this.#renderRanks(d, head);
    const alerts = d.records.filter((r) => r.sev && r.sev !== "info");
    n.alerts.replaceChildren(
      head("time (UTC)", "severity", "path", "epoch", "what"),
      ...(alerts.length
        ? alerts.map((r) =>
          el(
            "tr",
            { "data-sev": r.sev },
            el("td", {}, fmtTime(r.ts)),
            el("td", {}, r.sev),
            el("td", {}, r.path),
            el("td", { class: "num" }, fmt(r.epoch)),
            el("td", {}, r.label || ""),
          )
        )
        : [el("tr", {}, el("td", { colspan: 5 }, "No alerts"))]),
    );
    const cfg = Object.entries(d.config || {});
    n.configSection.hidden = cfg.length === 0;
    n.config.replaceChildren(
      head("knob", "value"),
      ...cfg.map(([k, v]) => el("tr", {}, el("th", { scope: "row" }, k), el("td", {}, fmt(v)))),
    );
  }
}
