// @ts-check
/**
 * What every part of the dashboard view shares: the data as the view holds it, the theme's
 * colours, the palette, number and time formatting, and the one DOM helper. Plain checked
 * JavaScript, inlined into the saved HTML with the rest of the view (dashboard_script.ts).
 */
/** @import { BatchPoint, DashboardData, EvalPoint, RankActivityData, ReduceRow } from "./dashboard_data.ts" */
/** @import { MonitorRecord } from "./record.ts" */
/** @import { TimelineEntry } from "./timeline.ts" */

/**
 * The data a view shows (`DashboardView.data`): a {@link DashboardData} whose lists are all
 * present, with the batch points and activity bins as the view keeps them now.
 * @typedef {DashboardData & {
 *   reduces: ReduceRow[],
 *   evals: EvalPoint[],
 *   timeline: TimelineEntry[],
 *   records: MonitorRecord[],
 *   batches: BatchPoint[],
 *   activity: RankActivityData,
 * }} ShownData
 */

/**
 * The theme's colours as the stylesheet resolved them (CSS colour strings).
 * @typedef {{ fg: string, bg: string, muted: string, grid: string, band: string }} Colors
 */

/** Series colours: six of the Okabe–Ito palette (colour-blind safe), then brown and grey. */
export const PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#8C564B", "#7F7F7F"];

/**
 * `JSON.parse` reviver turning the strings "NaN", "Infinity", "-Infinity" (how the
 * monitor writes non-finite numbers) back into numbers.
 * @param {string} _key The property name (unused).
 * @param {unknown} value The parsed value.
 * @returns {unknown} `value`, or the number a non-finite string stands for.
 */
export function reviveNonFinite(_key, value) {
  return value === "NaN" || value === "Infinity" || value === "-Infinity" ? Number(value) : value;
}

/**
 * A y range that fits `values` (non-finite ones ignored) with a margin; for a metric known
 * to live in [0, 1] (an accuracy) the range stays inside [0, 1]. With one value (or all
 * equal) the range still has a height.
 * @param {readonly (number | null)[]} values The values to fit; null and non-finite ones are skipped.
 * @param {boolean} [unit] Whether the metric is a fraction in [0, 1] (default false).
 * @returns {[number, number] | null} [min, max], or null when no value is finite.
 */
export function fitRange(values, unit = false) {
  const xs = values.filter(
    /**
     * @param {number | null} v
     * @returns {v is number}
     */
    (v) => typeof v === "number" && Number.isFinite(v),
  );
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

/**
 * A value for a table cell: "–" when absent, integers as they are, other numbers to
 * `digits` significant digits, non-finite ones as "NaN" / "Infinity".
 * @param {unknown} v
 * @param {number} [digits]
 * @returns {string}
 */
export function fmt(v, digits = 5) {
  if (v === undefined || v === null) return "–";
  if (typeof v !== "number") return String(v);
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v)) return String(v);
  return Number(v.toPrecision(digits)).toString();
}

/**
 * Bytes in binary units, 3 significant digits ("1.5 KiB").
 * @param {number} v
 * @returns {string}
 */
export function fmtBytes(v) {
  if (!Number.isFinite(v)) return String(v);
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${Number(v.toPrecision(3))} ${units[i]}`;
}

/**
 * Ms since the Unix epoch as "YYYY-MM-DD hh:mm:ss" (UTC), or "–".
 * @param {unknown} ms
 * @returns {string}
 */
export function fmtTime(ms) {
  return typeof ms === "number" && Number.isFinite(ms)
    ? new Date(ms).toISOString().replace("T", " ").slice(0, 19)
    : "–";
}

/**
 * A chart value: finite numbers as they are, anything else null (uPlot draws a gap).
 * @param {unknown} v
 * @returns {number | null}
 */
export const gap = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);

/**
 * A new element with attributes (undefined ones skipped) and children.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, string | number | boolean | undefined> | null} [attrs]
 * @param {...(Node | string)} kids
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined) e.setAttribute(k, String(v));
  for (const k of kids) e.append(k);
  return e;
}
