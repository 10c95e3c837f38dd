// @ts-check
/**
 * The dashboard's charts: what each one draws (its series and aligned columns, built from
 * the data) and the uPlot options that draw it. Plain checked JavaScript, inlined into the
 * saved HTML with the rest of the view (dashboard_script.ts).
 */
import { fitRange, fmt, fmtBytes, gap, PALETTE } from "./dashboard_format.js";
/** @import { Colors, ShownData } from "./dashboard_format.js" */

/**
 * One series of a chart: legend label, column aligned with the x values, how it is drawn.
 * @typedef {object} ChartSeries
 * @property {string} label Legend label.
 * @property {(number | null)[]} col One value per x; null is a gap.
 * @property {boolean} [main] The headline series (the consensus): thick, in the foreground colour.
 * @property {boolean} [spanGaps] Join the line across gaps.
 * @property {string} [scale] The y scale: "y" (default) or "y2" (the right axis).
 * @property {number[]} [dash] Canvas dash pattern.
 * @property {number} [width] Line width, px.
 * @property {string} [alpha] Hex alpha appended to the palette colour ("66").
 * @property {number} [pointSize] Point diameter, px.
 */

/**
 * A chart's content: x values, series, and a fitted y range where uPlot's own is poor.
 * @typedef {object} BuiltChart
 * @property {number[]} x
 * @property {ChartSeries[]} series
 * @property {[number, number] | null} [yRange] Present: the y range to draw (null: uPlot's).
 */

/**
 * One chart of the page.
 * @typedef {object} ChartDef
 * @property {string} id Element id suffix (`fd-<id>`) and `data-chart`.
 * @property {string} section The section heading it sits under ({@link SECTIONS}).
 * @property {string} caption Caption, unless `captionOf` gives one from the data.
 * @property {(d: ShownData) => string} [captionOf]
 * @property {string} x X axis label.
 * @property {string} y Y axis label, unless `yOf` gives one from the data.
 * @property {(d: ShownData) => string} [yOf]
 * @property {string} [y2] Right axis label, for series on scale "y2".
 * @property {boolean} [bytes] Values are bytes (axis and legend in KiB, MiB, …).
 * @property {(d: ShownData) => BuiltChart | null} build The content, or null when the data has none.
 */

/** Whether an eval metric's name says it is a fraction in [0, 1]. */
const UNIT_METRIC = /acc|precision|recall|f1|iou|auc/i;

/**
 * A rank's legend label. Legends say "rank r" only: the adapters are named once, in the subtitle.
 * @param {ShownData} _data
 * @param {number} r
 */
const rankName = (_data, r) => `rank ${r}`;

/**
 * One series per rank over the epochs, `value(epoch row, rank)` each point (a missing one is
 * a gap); x counts epochs from 1, as evals and the terminal do.
 * @param {ShownData} d
 * @param {(e: ShownData["epochs"][number], r: number) => number | undefined} value
 * @returns {{ x: number[], series: ChartSeries[] }}
 */
function perRankByEpoch(d, value) {
  const rows = d.epochs, series = [];
  for (let r = 0; r < d.worldSize; r++) series.push({ label: rankName(d, r), col: rows.map((e) => gap(value(e, r))) });
  return { x: rows.map((e) => e.epoch + 1), series };
}

/**
 * The eval metric's name ("accuracy"), or "eval metric" when the run did not say.
 * @param {ShownData} d
 */
export const evalName = (d) => d.evalLabel || "eval metric";

/** @type {readonly ChartDef[]} */
export const CHARTS = [
  {
    id: "loss-epoch",
    section: "Loss",
    caption: "Loss per epoch: each rank and the consensus",
    x: "epoch",
    y: "loss",
    build(d) {
      if (!d.epochs.length) return null;
      const chart = perRankByEpoch(d, (e, r) => e.perRankLoss?.[r]);
      chart.series.push({ label: "consensus", col: d.epochs.map((e) => gap(e.avgLoss)), main: true });
      return chart;
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
        /** @type {(number | null)[]} */
        const col = xs.map(() => null);
        // NOTE: every index is in `at`: the x values are the points' own indices.
        for (const p of pts) if (p.rank === r) col[/** @type {number} */ (at.get(p.index))] = gap(p.loss);
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
      if (!d.epochs.length) return null;
      return perRankByEpoch(d, (e, r) => (e.perRankThroughput?.[r] ?? NaN) * 1000);
    },
  },
  {
    id: "batch-share",
    section: "Throughput",
    caption: "Batch share per rank per epoch",
    x: "epoch",
    y: "share",
    build(d) {
      if (!d.epochs.length) return null;
      return perRankByEpoch(d, (e, r) => e.perRankBatchShare?.[r]);
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
          {
            label: "up: ranks → coordinator",
            col: rows.map((e) => gap(e.bytesUp)),
            width: 5,
            alpha: "66",
            pointSize: 9,
          },
          { label: "down: consensus → ranks", col: rows.map((e) => gap(e.bytesDown)), dash: [6, 4], pointSize: 4 },
        ],
      };
    },
  },
];

/** The chart sections, in page order. */
export const SECTIONS = ["Loss", "Throughput", "Averaging"];

/**
 * A uPlot chart as the view keeps it: what uPlot's hooks and range callbacks are handed,
 * plus the view's own fields.
 * @typedef {object} ChartState
 * @property {Record<string, { min?: number, max?: number }>} scales uPlot's scales, with their drawn range.
 * @property {[number, number] | null} [fdRange] The fitted y range now (updated on setData).
 * @property {string} [fdSig] Axis label and series labels: a chart with another one is rebuilt.
 */

/**
 * uPlot's options for chart `c` drawing `built`, `width` px wide, 240 high, in `colors`.
 * The y range drawn goes on `fig` (`data-y-range`), for tests and the curious.
 * @param {ChartDef} c
 * @param {BuiltChart} built
 * @param {string} yLabel The y axis label.
 * @param {Colors} colors
 * @param {number} width
 * @param {HTMLElement} fig
 * @returns {object} uPlot's `Options`.
 */
export function chartOptions(c, built, yLabel, colors, width, fig) {
  /**
   * @param {string} label
   * @param {object} [extra]
   */
  const axis = (label, extra) => ({
    label,
    stroke: colors.fg,
    grid: { stroke: colors.grid },
    ticks: { stroke: colors.grid },
    ...extra,
  });
  /**
   * @param {unknown} _u
   * @param {number | null | undefined} v
   */
  const value = (_u, v) => (v === null || v === undefined ? "–" : c.bytes ? fmtBytes(v) : fmt(v));
  let k = 0;
  return {
    width,
    height: 240,
    hooks: {
      setScale: [
        /**
         * @param {ChartState} uu
         * @param {string} key
         */
        (uu, key) => {
          if (key === "y") fig.dataset.yRange = `${uu.scales.y.min},${uu.scales.y.max}`;
        },
      ],
    },
    scales: {
      x: { time: false },
      // A fitted range (the eval's), read from the chart so setData keeps it current.
      ...("yRange" in built
        ? {
          y: {
            /**
             * @param {ChartState} uu
             * @param {number} lo
             * @param {number} hi
             */
            range: (uu, lo, hi) => (uu.fdRange === undefined ? built.yRange : uu.fdRange) || [lo, hi],
          },
        }
        : {}),
      ...(c.y2 ? { y2: {} } : {}),
    },
    series: [
      { label: c.x, value: /** @param {unknown} _u @param {unknown} v */ (_u, v) => fmt(v) },
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
      axis(
        yLabel,
        c.bytes
          ? { values: /** @param {unknown} _u @param {number[]} vals */ (_u, vals) => vals.map(fmtBytes), size: 70 }
          : {},
      ),
      ...(c.y2 ? [axis(c.y2, { scale: "y2", side: 1, grid: { show: false } })] : []),
    ],
  };
}
