// @ts-check
/**
 * The dashboard's DOM view: summary table, uPlot charts, timeline swimlane, config and
 * alerts. This module and the ones it imports (dashboard_format, batch_series,
 * rank_activity, dashboard_charts, dashboard_swimlane, dashboard_dom, dashboard_tables:
 * the `.js` files of this folder) are the ONLY copy of the chart code. They are plain,
 * checked JavaScript (`// @ts-check`, types in JSDoc) because they are used twice:
 *
 * - the live demo imports this file as an ES module (through `dashboard_live.ts`, which
 *   passes npm's uPlot in), and
 * - `renderDashboardHtml` inlines their text into the saved HTML as one
 *   `<script type="module">`, after uPlot's IIFE build has defined the global `uPlot`:
 *   dashboard_script.ts joins them, each after the modules it imports, and drops those
 *   import lines.
 *
 * So: no TypeScript syntax; between these files only `import { a, b } from "./x.js";`
 * (nothing renamed, no other module), and top-level names unique across all of them (the
 * inlined script is one scope); types from .ts files only through one-line JSDoc import
 * tags; and neither a closing script tag nor an HTML comment opener anywhere
 * (renderDashboardHtml escapes the first and refuses the second). Non-finite
 * numbers arrive as numbers (the saved page revives "NaN"/"Infinity" strings with
 * {@link reviveNonFinite}); uPlot draws them as gaps while tables print them as "NaN", so a
 * NaN loss is visible, never hidden.
 */
import { BatchSeries } from "./batch_series.js";
import { chartOptions, CHARTS } from "./dashboard_charts.js";
import { buildPage, installStyle } from "./dashboard_dom.js";
import { el, fmt } from "./dashboard_format.js";
import { drawSwimlane } from "./dashboard_swimlane.js";
import { renderHeader, renderTables } from "./dashboard_tables.js";
import { RankActivity } from "./rank_activity.js";
/** @import { BatchRow, DashboardData, DashboardTheme, EpochRow, EvalPoint, MembershipRow, ReduceRow } from "./dashboard_data.ts" */
/** @import { MonitorRecord } from "./record.ts" */
/** @import { TimelineEntry } from "./timeline.ts" */
/** @import { ChartState } from "./dashboard_charts.js" */
/** @import { ChartFigure, ViewNodes } from "./dashboard_dom.js" */
/** @import { Colors, ShownData } from "./dashboard_format.js" */

/**
 * A uPlot chart, as much of it as the view uses.
 * @typedef {object} UPlotChart
 * @property {number} width Width drawn, CSS px.
 * @property {(data: unknown[]) => void} setData Replace the aligned columns (x first) and redraw.
 * @property {(size: { width: number, height: number }) => void} setSize Resize, CSS px.
 * @property {() => void} destroy Remove the chart from the page.
 */

/**
 * The uPlot constructor, as much of it as the view uses: uPlot's options, its aligned
 * columns (x first) and the element to draw in.
 * @typedef {new (opts: object, data: unknown[], target: HTMLElement) => UPlotChart} UPlotConstructor
 */

/**
 * Options of {@link DashboardView}.
 * @typedef {object} DashboardViewOptions
 * @property {DashboardTheme} [theme] "light" | "dark" pin the theme; "auto" (the default) follows `prefers-color-scheme`.
 * @property {string} [title] Heading when the data has no title.
 * @property {UPlotConstructor} [uPlot] uPlot's constructor; default the global `uPlot` (the saved HTML defines it).
 * @property {number} [maxBatchPoints] Batch-loss points kept per rank before pairs merge (default 2000).
 * @property {() => number} [now] Clock (ms since the Unix epoch) stamping appended batches and reduces; default `Date.now`.
 */

/**
 * The data as the view holds it: a {@link DashboardData} whose appendable lists are present.
 * @typedef {DashboardData & {
 *   reduces: ReduceRow[],
 *   evals: EvalPoint[],
 *   timeline: TimelineEntry[],
 *   records: MonitorRecord[],
 * }} HeldData
 */

/**
 * The ranks that took part in a reduce (steps or counts > 0), or undefined (all) when not said.
 * @param {ReduceRow} ev
 * @returns {number[] | undefined}
 */
function reduceRanks(ev) {
  const per = ev.steps || ev.counts;
  return per ? per.flatMap((n, r) => (n > 0 ? [r] : [])) : undefined;
}

/**
 * The dashboard in a container element: summary table, uPlot charts (loss per epoch /
 * batch / reduce, eval, throughput, batch share, reduce timings and anchor, wire bytes),
 * timeline swimlane, record tree, alerts, configuration. `setData` renders at once;
 * `append*` redraw on the next animation frame. Pass uPlot in `options.uPlot` (else the
 * global `uPlot` is used).
 */
export class DashboardView {
  /** @type {UPlotConstructor} */
  #uPlot;
  /** @type {HTMLDivElement} */
  #root;
  /** @type {DashboardTheme | undefined} */
  #theme;
  /** @type {string | undefined} */
  #title;
  /** @type {HeldData} */
  #data;
  /** @type {BatchSeries} */
  #series;
  /** @type {RankActivity} */
  #activity;
  /** @type {() => number} */
  #now;
  /** @type {Map<string, UPlotChart & ChartState>} */
  #charts = new Map();
  /** @type {Map<string, ChartFigure>} */
  #figures;
  /** @type {ViewNodes} */
  #nodes;
  #pending = false;
  /** @type {MediaQueryList | undefined} */
  #media;
  /** @type {(() => void) | undefined} */
  #onMedia;
  /** @type {ResizeObserver | undefined} */
  #resize;
  #width = 0;

  /**
   * A view appended to `container` (its stylesheet goes into the document's head, once).
   * @param {HTMLElement} container
   * @param {DashboardViewOptions} [options]
   * @throws {TypeError} When no uPlot constructor is given or global.
   * @throws {RangeError} For a theme other than "light", "dark", "auto".
   */
  constructor(container, options = {}) {
    const uPlot = options.uPlot || /** @type {{ uPlot?: UPlotConstructor }} */ (globalThis).uPlot;
    if (typeof uPlot !== "function") {
      throw new TypeError(
        "DashboardView: options.uPlot must be the uPlot constructor (or a global uPlot; dashboard_live.ts binds npm's), got " +
          typeof uPlot,
      );
    }
    this.#uPlot = uPlot;
    this.#title = options.title;
    this.#series = new BatchSeries(options.maxBatchPoints);
    this.#activity = new RankActivity();
    this.#now = options.now || Date.now;
    this.#data = { worldSize: 1, epochs: [], reduces: [], batches: [], evals: [], timeline: [], records: [] };
    installStyle(container.ownerDocument);
    this.#root = el("div", { class: "fd" });
    container.append(this.#root);
    const page = buildPage(this.#root);
    this.#nodes = page.nodes;
    this.#figures = page.figures;
    this.setTheme(options.theme || "auto");
    if (typeof ResizeObserver === "function") {
      this.#resize = new ResizeObserver(() => {
        const w = this.#root.clientWidth;
        if (Math.abs(w - this.#width) > 8) this.#schedule();
      });
      this.#resize.observe(this.#root);
    }
  }

  /**
   * The data shown now (appends included).
   * @returns {ShownData}
   */
  get data() {
    return { ...this.#data, batches: this.#series.points(), activity: this.#activity.toJSON() };
  }

  /**
   * The root element of the view.
   * @returns {HTMLElement}
   */
  get element() {
    return this.#root;
  }

  /**
   * "light" | "dark" pin the theme; "auto" follows prefers-color-scheme.
   * @param {DashboardTheme} theme
   * @throws {RangeError} For a theme other than "light", "dark", "auto".
   */
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

  /**
   * Replace everything shown (renders at once).
   * @param {DashboardData} data
   */
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

  /**
   * One epoch's metrics (the coordinator's RunEpochMetrics).
   * @param {EpochRow} row
   */
  appendEpoch(row) {
    this.#data.epochs = [...this.#data.epochs.filter((e) => e.epoch !== row.epoch), row].sort((a, b) =>
      a.epoch - b.epoch
    );
    this.#data.worldSize = Math.max(this.#data.worldSize, row.perRankLoss?.length || 0);
    this.#schedule();
  }

  /**
   * One reduce (the coordinator's ReduceEvent); its window loss comes from the batches since the last one.
   * @param {ReduceRow} ev
   */
  appendReduce(ev) {
    const loss = ev.loss !== undefined ? ev.loss : this.#series.takeWindowLoss();
    this.#data.reduces.push(loss === undefined ? { ...ev } : { ...ev, loss });
    this.#activity.reduce(this.#now(), ev.ms, reduceRanks(ev));
    this.#schedule();
  }

  /**
   * One batch (the coordinator's BatchEvent: rank, epoch, loss; ms or computeMs for the lanes).
   * @param {BatchRow} ev
   */
  appendBatch(ev) {
    this.#series.add(ev);
    // NOTE: a batch without ms is NaN here, which RankActivity.batch ignores (as the recorder does).
    this.#activity.batch(ev.rank, this.#now(), ev.ms ?? ev.computeMs ?? NaN, this.#data.slowdown?.[ev.rank]);
    if (ev.rank >= this.#data.worldSize) this.#data.worldSize = ev.rank + 1;
    this.#schedule();
  }

  /**
   * The eval metric after `epoch` (replaces an earlier value of the same epoch).
   * @param {number} epoch
   * @param {number} value
   */
  appendEval(epoch, value) {
    this.#data.evals = [...this.#data.evals.filter((e) => e.epoch !== epoch), { epoch, value }].sort((a, b) =>
      a.epoch - b.epoch
    );
    this.#schedule();
  }

  /**
   * One timeline entry ({ kind, ts_ms, ... }).
   * @param {TimelineEntry} entry
   */
  appendEvent(entry) {
    this.#data.timeline.push(entry);
    this.#schedule();
  }

  /**
   * A rank joined or was lost ({ ts, rank, kind: "joined" | "lost", epoch, reason?, host?,
   * adapter?, transport? }); a joined rank's place goes into the rank table.
   * @param {MembershipRow} row
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

  /**
   * One monitor record (alerts are listed; the last epoch rows fill the record-tree table).
   * @param {MonitorRecord} record
   */
  appendRecord(record) {
    this.#data.records.push(record);
    this.#schedule();
  }

  /** Remove the view: its charts, observers and elements (the shared stylesheet stays). */
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

  /** @returns {Colors} */
  #colors() {
    const cs = getComputedStyle(this.#root);
    /**
     * @param {string} name
     * @param {string} dflt
     */
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
    renderHeader(this.#nodes, d, this.#title);
    this.#renderCharts(d);
    this.#renderSwimlane(d);
    renderTables(this.#nodes, d);
  }

  /** @param {ShownData} d */
  #renderCharts(d) {
    const colors = this.#colors();
    for (const c of CHARTS) {
      // NOTE: buildPage made a figure for every chart.
      const { fig, plot, cap } = /** @type {ChartFigure} */ (this.#figures.get(c.id));
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
      const opts = chartOptions(c, built, yLabel, colors, width, fig);
      const chart = /** @type {UPlotChart & ChartState} */ (new this.#uPlot(opts, columns, plot));
      chart.fdSig = sig;
      chart.fdRange = built.yRange;
      this.#charts.set(c.id, chart);
    }
  }

  /** @param {ShownData} d */
  #renderSwimlane(d) {
    const n = this.#nodes;
    const shown = d.timeline.length > 0 || d.activity?.t0 !== undefined;
    n.laneSection.hidden = !shown;
    if (!shown) return;
    const width = Math.max(320, (n.laneFig.clientWidth || 800) - 18);
    drawSwimlane(n.laneCanvas, d, this.#colors(), width);
    /** @param {TimelineEntry["kind"]} k */
    const count = (k) => d.timeline.filter((e) => e.kind === k).length;
    n.laneCanvas.setAttribute(
      "aria-label",
      `Timeline swimlane, ${
        d.worldSize + 1
      } lanes (coordinator, then each rank's compute, throttle, reduce and idle time): ` +
        `${count("EpochEnd")} epochs, ` +
        `${count("SyncEnd")} reduces, ${count("CpuAvgEnd")} CPU averages, ${count("Idle")} idle periods, ` +
        `${count("Throttle")} throttles, ${count("AnchorChanged")} anchor changes`,
    );
  }
}
