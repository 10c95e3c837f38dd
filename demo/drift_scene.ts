/**
 * The animation behind the 3-D drift view, without the GPU: each reduce moves every rank
 * from where the last consensus left it to its own pre-average parameters (the spread),
 * then snaps it to the new consensus (fully, or by EASGD's α in cpu-async), while the
 * consensus point steps along its path. Coordinates are normalised every frame around
 * the consensus so the recent cloud stays in view however far training has travelled.
 */
import type { Vec3 } from "./projection.ts";

export type Rgba = [number, number, number, number];

/** What one frame draws, in normalised coordinates (the cloud fits the unit ball). */
export interface DriftFrame {
  points: { pos: Vec3; color: Rgba; size: number }[];
  lines: { a: Vec3; b: Vec3; ca: Rgba; cb: Rgba }[];
  /** Round of the reduce being animated (or the last shown), 0 before the first. */
  round: number;
}

/** One reduce, in projected (not normalised) coordinates. */
interface Step {
  round: number;
  from: Vec3[];
  pre: (Vec3 | null)[];
  post: Vec3[];
  consFrom: Vec3;
  cons: Vec3;
}

/** Rank colours: the dashboard's palette (Okabe–Ito), so rank k looks the same in both views. */
export const RANK_COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#8C564B", "#7F7F7F"];
const CONSENSUS: Rgba = [0.95, 0.96, 0.98, 1];

/** Milliseconds of the spread, the pause at the pre-average positions, and the snap. */
const SPREAD_MS = 700, HOLD_MS = 150, SNAP_MS = 300;
/** Reduces whose trails stay drawn. */
const TRAIL = 16;
/** Reduces whose spread decides the normalisation. */
const FIT = 3;
/** Queued reduces beyond this are shown without animation (training outran the view). */
const MAX_QUEUE = 12;
/** Smoothing time of the normalisation, ms. */
const FIT_MS = 300;

export function hexColor(hex: string, alpha = 1): Rgba {
  const n = parseInt(hex.slice(1), 16);
  return [((n >> 16) & 255) / 255, ((n >> 8) & 255) / 255, (n & 255) / 255, alpha];
}

const lerp = (
  a: Vec3,
  b: Vec3,
  t: number,
): Vec3 => [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t];
const dist = (a: Vec3, b: Vec3) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
const ease = (t: number) => (t <= 0 ? 0 : t >= 1 ? 1 : t * t * (3 - 2 * t));
const fade = (c: Rgba, a: number): Rgba => [c[0], c[1], c[2], c[3] * a];

/**
 * Reduce frames in, animated frames out.
 * @example
 * ```ts
 * const s = new DriftScene(2, 1);
 * s.push(1, [[1, 0, 0], [-1, 0, 0]], [0, 0, 0]);
 * s.frame(0).points.length; // ranks + consensus + past positions
 * ```
 */
export class DriftScene {
  readonly world: number;
  readonly alpha: number;
  #queue: Step[] = [];
  #done: Step[] = [];
  #current?: { step: Step; start: number; ms: number };
  /** Rank positions and consensus after the last pushed reduce. */
  #ranks?: Vec3[];
  #cons?: Vec3;
  #center: Vec3 = [0, 0, 0];
  #radius = 1;
  #lastFrame?: number;
  /** Reduces pushed so far. */
  reduces = 0;
  /** Once the run is over: fit the whole trail in view instead of the latest spread. */
  overview = false;

  /**
   * @param world Ranks.
   * @param alpha How far a rank moves to the consensus when it adopts it: 1 = replaced
   *   (cpu-sync, cpu-cadence), EASGD's α in cpu-async.
   */
  constructor(world: number, alpha: number) {
    this.world = world;
    this.alpha = alpha;
  }

  /** A reduce: each rank's projected parameters before averaging (null when absent) and the consensus. */
  push(round: number, pre: (Vec3 | null)[], cons: Vec3): void {
    const from = this.#ranks ?? pre.map(() => cons);
    const consFrom = this.#cons ?? cons;
    const post = from.map((f, r) => (pre[r] ? lerp(pre[r]!, cons, this.alpha) : f));
    this.#queue.push({ round, from, pre, post, consFrom, cons });
    this.#ranks = post;
    this.#cons = cons;
    this.reduces++;
    while (this.#queue.length > MAX_QUEUE) this.#finish(this.#queue.shift()!);
  }

  /** True while a reduce is animating or waiting to. */
  get busy(): boolean {
    return this.#current !== undefined || this.#queue.length > 0;
  }

  #finish(step: Step): void {
    this.#done.push(step);
    if (this.#done.length > TRAIL) this.#done.shift();
  }

  /** The frame at time `now` (ms, monotonic). */
  frame(now: number): DriftFrame {
    if (this.#current && now - this.#current.start >= this.#current.ms) {
      this.#finish(this.#current.step);
      this.#current = undefined;
    }
    if (!this.#current && this.#queue.length) {
      // A backlog plays faster, so the view keeps up with training.
      const ms = (SPREAD_MS + HOLD_MS + SNAP_MS) / this.#queue.length;
      this.#current = { step: this.#queue.shift()!, start: now, ms };
    }
    const cur = this.#current;
    const last = this.#done[this.#done.length - 1];
    let ranks: Vec3[] = [], cons: Vec3 | undefined, round = last?.round ?? 0;
    if (cur) {
      const s = cur.step, t = (now - cur.start) / cur.ms;
      const t1 = SPREAD_MS / (SPREAD_MS + HOLD_MS + SNAP_MS),
        t2 = (SPREAD_MS + HOLD_MS) / (SPREAD_MS + HOLD_MS + SNAP_MS);
      const snap = ease((t - t2) / (1 - t2));
      ranks = s.from.map((f, r) => {
        const p = s.pre[r];
        if (!p) return f;
        return t < t1 ? lerp(f, p, ease(t / t1)) : t < t2 ? p : lerp(p, s.post[r], snap);
      });
      cons = lerp(s.consFrom, s.cons, snap);
      round = s.round;
    } else if (last) {
      ranks = last.post;
      cons = last.cons;
    }
    if (!cons) return { points: [], lines: [], round };
    this.#fit(cons, now);
    return this.#draw(ranks, cons, round);
  }

  /**
   * Move the normalisation toward the latest reduces: centred on the consensus, scaled to
   * each reduce's own spread (ranks around the consensus they left and the one they
   * reach), so the spread fills the view however far the consensus has walked; older
   * trails may leave it. After the run (`overview`) the whole trail fits instead.
   */
  #fit(cons: Vec3, now: number): void {
    const [center, radius] = this.overview && !this.busy ? this.#wholeTrail() : this.#latestSpread(cons);
    const k = this.#lastFrame === undefined ? 1 : 1 - Math.exp(-(now - this.#lastFrame) / FIT_MS);
    this.#lastFrame = now;
    this.#center = lerp(this.#center, center, k);
    this.#radius = Math.exp(Math.log(this.#radius) + (Math.log(radius) - Math.log(this.#radius)) * k);
  }

  #latestSpread(cons: Vec3): [Vec3, number] {
    const recent = [...this.#done.slice(-FIT), ...(this.#current ? [this.#current.step] : [])];
    let r = 0;
    for (const s of recent) {
      r = Math.max(r, dist(s.cons, s.consFrom));
      s.pre.forEach((p, k) => {
        if (p) r = Math.max(r, dist(p, s.cons), dist(p, s.consFrom), dist(s.from[k], s.cons));
      });
    }
    return [cons, r > 0 && Number.isFinite(r) ? r * 1.2 : 1];
  }

  /** The box around every trail still drawn: the view after the run. */
  #wholeTrail(): [Vec3, number] {
    const pts = this.#done.flatMap((s) => [s.cons, s.consFrom, ...s.pre.filter((p): p is Vec3 => p !== null)]);
    const lo: Vec3 = [Infinity, Infinity, Infinity], hi: Vec3 = [-Infinity, -Infinity, -Infinity];
    for (const p of pts) {
      for (let i = 0; i < 3; i++) {
        lo[i] = Math.min(lo[i], p[i]);
        hi[i] = Math.max(hi[i], p[i]);
      }
    }
    const center = lerp(lo, hi, 0.5);
    let r = 0;
    for (const p of pts) r = Math.max(r, dist(p, center));
    return [center, r > 0 && Number.isFinite(r) ? r * 1.1 : 1];
  }

  #draw(ranks: Vec3[], cons: Vec3, round: number): DriftFrame {
    const n = (p: Vec3): Vec3 => [
      (p[0] - this.#center[0]) / this.#radius,
      (p[1] - this.#center[1]) / this.#radius,
      (p[2] - this.#center[2]) / this.#radius,
    ];
    const color = (r: number) => hexColor(RANK_COLORS[r % RANK_COLORS.length]);
    const frame: DriftFrame = { points: [], lines: [], round };
    const past = this.#done;
    past.forEach((s, i) => {
      const age = 1 - (past.length - 1 - i) / TRAIL;
      frame.lines.push({
        a: n(s.consFrom),
        b: n(s.cons),
        ca: fade(CONSENSUS, 0.9 * age),
        cb: fade(CONSENSUS, 0.9 * age),
      });
      s.pre.forEach((p, r) => {
        if (!p) return;
        frame.lines.push({ a: n(s.from[r]), b: n(p), ca: fade(color(r), 0.15 * age), cb: fade(color(r), 0.75 * age) });
        frame.points.push({ pos: n(p), color: fade(color(r), 0.6 * age), size: 5 });
      });
    });
    const cur = this.#current?.step;
    if (cur) {
      frame.lines.push({ a: n(cur.consFrom), b: n(cons), ca: fade(CONSENSUS, 0.9), cb: CONSENSUS });
      cur.pre.forEach((p, r) => {
        if (p) frame.lines.push({ a: n(cur.from[r]), b: n(ranks[r]), ca: fade(color(r), 0.2), cb: color(r) });
      });
    }
    ranks.forEach((p, r) => frame.points.push({ pos: n(p), color: color(r), size: 14 }));
    frame.points.push({ pos: n(cons), color: CONSENSUS, size: 18 });
    return frame;
  }
}
