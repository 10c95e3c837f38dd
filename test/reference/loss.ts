/** Float64 references of the losses (PyTorch semantics) with their input gradients. Never imports src/. */

export type Reduction = "mean" | "sum" | "none";

/** Options of the class losses. */
export interface ClassRefOptions {
  reduction: Reduction;
  ignoreIndex?: number;
  labelSmoothing?: number;
}

/**
 * Cross entropy of logits x [n, c] against integer targets, as torch.nn.functional.cross_entropy
 * (label smoothing mixes the one-hot target with the uniform distribution; "mean" divides by
 * the number of rows not ignored). `dy` is [n] for "none", [1] otherwise. Targets must be valid.
 */
export function crossEntropyRef(
  x: ArrayLike<number>,
  n: number,
  c: number,
  target: ArrayLike<number>,
  opts: ClassRefOptions,
  dy: ArrayLike<number>,
): { y: Float64Array; dx: Float64Array } {
  const ignore = opts.ignoreIndex ?? -100, eps = opts.labelSmoothing ?? 0;
  const rows = new Float64Array(n), dx = new Float64Array(n * c);
  const logp = new Float64Array(n * c);
  let count = 0;
  for (let r = 0; r < n; r++) {
    let m = -Infinity;
    for (let j = 0; j < c; j++) m = Math.max(m, x[r * c + j]);
    let s = 0;
    for (let j = 0; j < c; j++) s += Math.exp(x[r * c + j] - m);
    for (let j = 0; j < c; j++) logp[r * c + j] = x[r * c + j] - m - Math.log(s);
    if (target[r] === ignore) continue;
    count++;
    let smooth = 0;
    for (let j = 0; j < c; j++) smooth -= logp[r * c + j];
    rows[r] = -(1 - eps) * logp[r * c + target[r]] + (eps / c) * smooth;
  }
  const y = reduce(rows, opts.reduction, count);
  for (let r = 0; r < n; r++) {
    if (target[r] === ignore) continue;
    const g = upstream(dy, r, opts.reduction, count);
    for (let j = 0; j < c; j++) {
      const q = (j === target[r] ? 1 - eps : 0) + eps / c;
      dx[r * c + j] = g * (Math.exp(logp[r * c + j]) - q);
    }
  }
  return { y, dx };
}

/** NLL of log-probabilities x [n, c] against integer targets, as torch.nn.functional.nll_loss. */
export function nllRef(
  x: ArrayLike<number>,
  n: number,
  c: number,
  target: ArrayLike<number>,
  opts: ClassRefOptions,
  dy: ArrayLike<number>,
): { y: Float64Array; dx: Float64Array } {
  const ignore = opts.ignoreIndex ?? -100;
  const rows = new Float64Array(n), dx = new Float64Array(n * c);
  let count = 0;
  for (let r = 0; r < n; r++) {
    if (target[r] === ignore) continue;
    count++;
    rows[r] = -x[r * c + target[r]];
  }
  const y = reduce(rows, opts.reduction, count);
  for (let r = 0; r < n; r++) {
    if (target[r] !== ignore) dx[r * c + target[r]] = -upstream(dy, r, opts.reduction, count);
  }
  return { y, dx };
}

function reduce(v: Float64Array, reduction: Reduction, count: number): Float64Array {
  if (reduction === "none") return v;
  let s = 0;
  for (const e of v) s += e;
  return Float64Array.of(reduction === "mean" ? s / count : s);
}

function upstream(dy: ArrayLike<number>, i: number, reduction: Reduction, count: number): number {
  return reduction === "none" ? dy[i] : reduction === "mean" ? dy[0] / count : dy[0];
}

/** Per-element loss and its partial derivatives in the prediction a and the target b. */
export interface ElementwiseRef {
  f: (a: number, b: number, k: number) => number;
  da: (a: number, b: number, k: number) => number;
  db: (a: number, b: number, k: number) => number;
}

const sigmoid = (v: number) => 1 / (1 + Math.exp(-v));

/**
 * The elementwise losses; `k` is the extra knob: beta for smoothL1, the positive weight for
 * bceWithLogits. bce follows PyTorch: logs clamped to >= -100, gradient denominator to >= 1e-12.
 */
export const ELEMENTWISE_REF: Record<string, ElementwiseRef> = {
  mse: { f: (a, b) => (a - b) ** 2, da: (a, b) => 2 * (a - b), db: (a, b) => 2 * (b - a) },
  l1: { f: (a, b) => Math.abs(a - b), da: (a, b) => Math.sign(a - b), db: (a, b) => Math.sign(b - a) },
  smoothL1: {
    f: (a, b, beta) => {
      const d = Math.abs(a - b);
      return d < beta ? (0.5 * d * d) / beta : d - 0.5 * beta;
    },
    da: (a, b, beta) => (Math.abs(a - b) < beta ? (a - b) / beta : Math.sign(a - b)),
    db: (a, b, beta) => (Math.abs(a - b) < beta ? (b - a) / beta : Math.sign(b - a)),
  },
  bce: {
    f: (p, t) => -(t * Math.max(Math.log(p), -100) + (1 - t) * Math.max(Math.log1p(-p), -100)),
    da: (p, t) => (p - t) / Math.max((1 - p) * p, 1e-12),
    db: (p) => Math.log1p(-p) - Math.log(p),
  },
  bceWithLogits: {
    // loss = w t softplus(-x) + (1 - t) softplus(x)
    f: (x, t, w) => w * t * softplus(-x) + (1 - t) * softplus(x),
    da: (x, t, w) => (1 - t) * sigmoid(x) - w * t * sigmoid(-x),
    db: (x, _t, w) => w * softplus(-x) - softplus(x),
  },
};

function softplus(v: number): number {
  return Math.max(v, 0) + Math.log1p(Math.exp(-Math.abs(v)));
}

/**
 * An elementwise loss over arrays: y (reduced unless "none") and both input gradients for
 * the output gradient `dy` ([n] for "none", [1] otherwise). `k(i)` gives the knob per element.
 */
export function elementwiseLossRef(
  name: string,
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  reduction: Reduction,
  dy: ArrayLike<number>,
  k: (i: number) => number = () => 1,
): { y: Float64Array; da: Float64Array; db: Float64Array } {
  const r = ELEMENTWISE_REF[name], n = a.length;
  const v = new Float64Array(n), da = new Float64Array(n), db = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    v[i] = r.f(a[i], b[i], k(i));
    const g = upstream(dy, i, reduction, n);
    da[i] = g * r.da(a[i], b[i], k(i));
    db[i] = g * r.db(a[i], b[i], k(i));
  }
  return { y: reduce(v, reduction, n), da, db };
}

/**
 * KL divergence as torch.nn.functional.kl_div over flat arrays: each term t·(log t − x)
 * (0 at t = 0) or, with logTarget, e^t·(t − x); reduced by 1 ("sum"), 1/n ("mean") or
 * 1/batch ("batchmean"). `dy` has one value per element for "none", one otherwise. The
 * target's gradient is NaN where t = 0 (PyTorch's).
 */
export function klDivRef(
  x: ArrayLike<number>,
  t: ArrayLike<number>,
  opts: { reduction: Reduction | "batchmean"; logTarget?: boolean; batch: number },
  dy: ArrayLike<number>,
): { y: Float64Array; dx: Float64Array; dt: Float64Array } {
  const n = x.length;
  const el = new Float64Array(n), dx = new Float64Array(n), dt = new Float64Array(n);
  const scale = opts.reduction === "mean" ? 1 / n : opts.reduction === "batchmean" ? 1 / opts.batch : 1;
  for (let i = 0; i < n; i++) {
    const g = opts.reduction === "none" ? dy[i] : dy[0] * scale;
    if (opts.logTarget) {
      const e = Math.exp(t[i]);
      el[i] = e * (t[i] - x[i]);
      dx[i] = -e * g;
      dt[i] = e * (t[i] - x[i] + 1) * g;
    } else {
      el[i] = t[i] === 0 ? 0 : t[i] * (Math.log(t[i]) - x[i]);
      dx[i] = -t[i] * g;
      dt[i] = t[i] === 0 ? NaN : (Math.log(t[i]) + 1 - x[i]) * g;
    }
  }
  if (opts.reduction === "none") return { y: el, dx, dt };
  return { y: Float64Array.of(el.reduce((s, v) => s + v, 0) * scale), dx, dt };
}

/**
 * torchvision.ops.sigmoid_focal_loss over flat arrays, written as torchvision writes it:
 * ce = BCE-with-logits, p_t = p t + (1 − p)(1 − t), loss = ce (1 − p_t)^gamma, times
 * alpha t + (1 − alpha)(1 − t) when alpha >= 0. dx by the chain rule through p and ce.
 */
export function focalRef(
  x: ArrayLike<number>,
  t: ArrayLike<number>,
  opts: { alpha: number; gamma: number; reduction: Reduction },
  dy: ArrayLike<number>,
): { y: Float64Array; dx: Float64Array } {
  const n = x.length, { alpha, gamma } = opts;
  const el = new Float64Array(n), dx = new Float64Array(n);
  const scale = opts.reduction === "mean" ? 1 / n : 1;
  for (let i = 0; i < n; i++) {
    const p = 1 / (1 + Math.exp(-x[i]));
    const ce = Math.max(x[i], 0) - x[i] * t[i] + Math.log1p(Math.exp(-Math.abs(x[i])));
    const pt = p * t[i] + (1 - p) * (1 - t[i]);
    const at = alpha >= 0 ? alpha * t[i] + (1 - alpha) * (1 - t[i]) : 1;
    const m = 1 - pt;
    el[i] = at * ce * m ** gamma;
    const dm = -p * (1 - p) * (2 * t[i] - 1);
    const dmg = gamma === 0 ? 0 : gamma * m ** (gamma - 1) * dm;
    const g = opts.reduction === "none" ? dy[i] : dy[0] * scale;
    dx[i] = at * ((p - t[i]) * m ** gamma + ce * dmg) * g;
  }
  if (opts.reduction === "none") return { y: el, dx };
  return { y: Float64Array.of(el.reduce((s, v) => s + v, 0) * scale), dx };
}
