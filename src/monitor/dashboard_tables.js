// @ts-check
/**
 * The dashboard's tables: header and summary, record tree, data plane, ranks and
 * membership, alerts, configuration. Plain checked JavaScript, inlined into the saved HTML
 * with the rest of the view (dashboard_script.ts).
 */
import { evalName } from "./dashboard_charts.js";
import { el, fmt, fmtBytes, fmtTime } from "./dashboard_format.js";
/** @import { NodeRecord, MonitorRecord } from "./record.ts" */
/** @import { ShownData } from "./dashboard_format.js" */
/** @import { ViewNodes } from "./dashboard_dom.js" */

/**
 * The ranks' adapters for the subtitle: "2 ranks on X", or each rank's when they differ.
 * @param {ShownData} d
 */
function devicesLine(d) {
  const devs = d.devices || [];
  const ranks = `${d.worldSize} rank${d.worldSize === 1 ? "" : "s"}`;
  if (!devs.length) return ranks;
  if (devs.every((x) => x === devs[0])) return `${ranks} on ${devs[0]}`;
  return `${ranks}: ${devs.map((x, r) => `rank ${r} on ${x}`).join(", ")}`;
}

/**
 * Units of the record tree's columns: flodl writes throughput in samples per ms; the table
 * shows samples/s, as the charts do.
 * @type {Record<string, { label: string, scale: number } | undefined>}
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
 * @type {readonly (readonly [key: string, label: string, bytes?: boolean])[]}
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

/**
 * The title, subtitle (ranks, adapters, start and end) and the summary table.
 * @param {ViewNodes} n
 * @param {ShownData} d
 * @param {string | undefined} title The heading when the data has no title.
 */
export function renderHeader(n, d, title) {
  n.h1.textContent = d.title || title || "flodl training run";
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
  /** @type {[key: string, label: string, value: number | undefined][]} */
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

/**
 * Where each rank runs (host, adapter, transport) and its membership: the epoch it joined
 * (elastic) and the epoch it was lost, with the reason; then every change in order.
 * @param {ViewNodes} n
 * @param {ShownData} d
 * @param {(...cols: string[]) => HTMLTableRowElement} head
 */
function renderRanks(n, d, head) {
  const events = d.membership || [];
  const ranks = d.ranks || [];
  n.ranksSection.hidden = ranks.length === 0 && events.length === 0;
  if (n.ranksSection.hidden) return;
  const world = Math.max(d.worldSize, ranks.length);
  /** @param {number} r */
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
        el(
          "td",
          {},
          e.kind === "joined" ? `${e.host || "?"}: ${e.adapter || "?"} (${e.transport || "?"})` : e.reason || "",
        ),
      )
    ),
  );
}

/**
 * The record tree (latest epoch), data plane, ranks, alerts and configuration tables; a
 * table with nothing to show hides its section.
 * @param {ViewNodes} n
 * @param {ShownData} d
 */
export function renderTables(n, d) {
  /** @param {...string} cols */
  const head = (...cols) => el("tr", {}, ...cols.map((c) => el("th", { scope: "col" }, c)));
  const nodes = d.records.filter(
    /**
     * @param {MonitorRecord} r
     * @returns {r is NodeRecord}
     */
    (r) => r.kind === "node" && !!r.epoch_complete,
  );
  const lastEpoch = Math.max(-Infinity, ...nodes.map((r) => r.epoch));
  /** @type {Map<string, NodeRecord>} */
  const latest = new Map();
  for (const r of nodes) if (r.epoch === lastEpoch) latest.set(r.path, r);
  n.treeSection.hidden = latest.size === 0;
  // The data plane's keys have their own table below.
  const keys = [...new Set([...latest.values()].flatMap((r) => Object.keys(r.metrics)))].filter((k) =>
    !k.startsWith("data_")
  );
  /** @param {string} k */
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
        ...keys.map((k) =>
          el(
            "td",
            { class: "num", "data-key": k },
            fmt(r.metrics[k] === undefined ? undefined : r.metrics[k] * unit(k).scale),
          )
        ),
      )
    ),
  );
  const plane = [...d.epochs].reverse().find((e) => (e.perRankData || []).some((x) => x && Object.keys(x).length))
    ?.perRankData;
  n.dataSection.hidden = !plane;
  if (plane) {
    const cols = DATA_COLUMNS.filter(([k]) => plane.some((x) => x && x[k] !== undefined));
    n.data.replaceChildren(
      head("rank", ...cols.map(([, label]) => label)),
      ...plane.map((x, r) =>
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
  renderRanks(n, d, head);
  const alerts = d.records.filter(
    /**
     * NOTE: only node records are alerts: the meta record's severity is always "info".
     * @param {MonitorRecord} r
     * @returns {r is NodeRecord}
     */
    (r) => !!r.sev && r.sev !== "info",
  );
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
