// @ts-check
/**
 * The dashboard's page skeleton: its stylesheet and the elements every render fills
 * (headings, chart figures, swimlane canvas, tables). Plain checked JavaScript, inlined
 * into the saved HTML with the rest of the view (dashboard_script.ts).
 */
import { CHARTS, SECTIONS } from "./dashboard_charts.js";
import { el, PALETTE } from "./dashboard_format.js";
import { IDLE_ALPHA, LANE_KINDS } from "./dashboard_swimlane.js";

/**
 * The elements a render fills, by part of the page.
 * @typedef {object} ViewNodes
 * @property {HTMLHeadingElement} h1
 * @property {HTMLParagraphElement} sub
 * @property {HTMLTableElement} summary
 * @property {HTMLCanvasElement} laneCanvas
 * @property {HTMLUListElement} laneLegend
 * @property {HTMLElement} laneFig
 * @property {HTMLElement} laneSection
 * @property {HTMLTableElement} tree
 * @property {HTMLElement} treeSection
 * @property {HTMLTableElement} data
 * @property {HTMLElement} dataSection
 * @property {HTMLTableElement} ranks
 * @property {HTMLTableElement} membership
 * @property {HTMLElement} ranksSection
 * @property {HTMLTableElement} alerts
 * @property {HTMLElement} alertSection
 * @property {HTMLTableElement} config
 * @property {HTMLElement} configSection
 */

/**
 * One chart's figure: the figure, uPlot's target inside it, and its caption.
 * @typedef {{ fig: HTMLElement, plot: HTMLDivElement, cap: HTMLElement }} ChartFigure
 */

const STYLE_ID = "flodl-dashboard-style";
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
 * Add the dashboard's stylesheet to `doc`, once (a second view shares it).
 * @param {Document} doc
 */
export function installStyle(doc) {
  if (doc.getElementById(STYLE_ID)) return;
  const style = doc.createElement("style");
  style.id = STYLE_ID;
  style.textContent = CSS;
  doc.head.append(style);
}

/**
 * Build the page in `root`: header, one figure per chart (hidden until it has data), the
 * swimlane and the tables.
 * @param {HTMLElement} root
 * @returns {{ nodes: ViewNodes, figures: Map<string, ChartFigure> }} The elements, and each chart's figure by chart id.
 */
export function buildPage(root) {
  // NOTE: filled field by field below; ViewNodes lists every one.
  const n = /** @type {ViewNodes} */ ({});
  /** @type {Map<string, ChartFigure>} */
  const figures = new Map();
  n.h1 = el("h1", { id: "fd-title" });
  n.sub = el("p", { class: "fd-sub" });
  n.summary = el("table", { id: "fd-summary", "aria-labelledby": "fd-h-summary" });
  root.append(n.h1, n.sub, el("h2", { id: "fd-h-summary" }, "Summary"), n.summary);
  for (const section of SECTIONS) {
    const hid = `fd-h-${section.toLowerCase()}`;
    const grid = el("div", { class: "fd-grid" });
    root.append(el("section", { "aria-labelledby": hid }, el("h2", { id: hid }, section), grid));
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
      figures.set(c.id, { fig, plot, cap });
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
  root.append(n.laneSection, n.ranksSection, n.treeSection, n.dataSection, n.alertSection, n.configSection);
  return { nodes: n, figures };
}
