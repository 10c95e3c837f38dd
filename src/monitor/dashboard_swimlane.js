// @ts-check
/**
 * The dashboard's timeline swimlane, drawn on a canvas. Plain checked JavaScript, inlined
 * into the saved HTML with the rest of the view (dashboard_script.ts).
 */
import { fmt, PALETTE } from "./dashboard_format.js";
import { RankActivity } from "./rank_activity.js";
/** @import { Colors, ShownData } from "./dashboard_format.js" */

/** Idle is drawn pale (hex alpha): it is the absence of work, not a kind of it. */
export const IDLE_ALPHA = "59";

/**
 * What a swimlane block shows.
 * @typedef {"compute" | "throttle" | "sync" | "idle" | "avg" | "div" | "anchor"} LaneKind
 */

/**
 * Lane colours of the swimlane, by what they show: [kind, legend, palette index].
 * @type {readonly (readonly [LaneKind, string, number])[]}
 */
export const LANE_KINDS = [
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
 * @param {HTMLCanvasElement} canvas
 * @param {ShownData} data
 * @param {Colors} colors
 * @param {number} cssWidth Width in CSS px (the canvas gets devicePixelRatio times as many).
 */
export function drawSwimlane(canvas, data, colors, cssWidth) {
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
  // NOTE: load keeps t0, so the bins of an activity that has a t0 have one.
  const act = data.activity && data.activity.t0 !== undefined
    ? /** @type {RankActivity & { t0: number }} */ (new RankActivity().load(data.activity))
    : undefined;
  const ts = ev.map((e) => e.ts_ms).filter(Number.isFinite);
  if (act) ts.push(act.t0, act.end ?? act.t0);
  const t0 = Math.min(...ts), t1 = Math.max(t0 + 1, ...ts);
  const plotW = Math.max(10, cssWidth - labelW - 8);
  /** @param {number} t */
  const X = (t) => labelW + ((t - t0) / (t1 - t0)) * plotW;
  /** @param {number} i */
  const laneY = (i) => top + i * laneH;
  // epoch bands
  /** @type {Map<number, number>} */
  const open = new Map();
  let band = 0;
  for (const e of ev) {
    if (e.kind === "EpochStart") open.set(e.epoch, e.ts_ms);
    const start = e.kind === "EpochEnd" ? open.get(e.epoch) : undefined;
    if (e.kind === "EpochEnd" && start !== undefined) {
      const a = X(start), b = X(e.ts_ms);
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
  /** @param {LaneKind} kind */
  const color = (kind) =>
    PALETTE[/** @type {(typeof LANE_KINDS)[number]} */ (LANE_KINDS.find((k) => k[0] === kind))[2]];
  /**
   * @param {number} lane
   * @param {number} from
   * @param {number} to
   * @param {LaneKind} kind
   * @param {number} inset
   */
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
    const order = /** @type {const} */ (["compute", "throttle", "reduce", "idle"]);
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
    /** @param {number} r */
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
