/**
 * Float64 references of PyTorch's optimizer updates (torch/optim/sgd.py, adam.py,
 * rmsprop.py, single-tensor paths, amsgrad/maximize off) and of clip_grad_norm_ /
 * clip_grad_value_. Plain loops over Float64Array; never imports src/. Checked against
 * PyTorch itself by test/unit/optim/reference_test.ts (test/fixtures/optim_golden.json).
 */

/** Per-parameter state, PyTorch's names. Arrays are created on the first step. */
export interface RefState {
  step: number;
  momentum_buffer?: Float64Array;
  exp_avg?: Float64Array;
  exp_avg_sq?: Float64Array;
  square_avg?: Float64Array;
  grad_avg?: Float64Array;
}

export interface SgdRefOptions {
  lr: number;
  momentum: number;
  dampening: number;
  nesterov: boolean;
  weightDecay: number;
}

export interface AdamRefOptions {
  lr: number;
  betas: readonly [number, number];
  eps: number;
  weightDecay: number;
  /** AdamW: decay the parameter by 1 − lr·weightDecay instead of adding L2 to the gradient. */
  decoupled: boolean;
}

export interface RmspropRefOptions {
  lr: number;
  alpha: number;
  eps: number;
  momentum: number;
  centered: boolean;
  weightDecay: number;
}

/** The gradient with the L2 penalty (a fresh array). */
function withDecay(p: Float64Array, g: ArrayLike<number>, wd: number): Float64Array {
  const d = new Float64Array(p.length);
  for (let i = 0; i < p.length; i++) d[i] = g[i] + wd * p[i];
  return d;
}

/** One SGD step on `p` (in place) with gradient `g`. */
export function sgdStepRef(p: Float64Array, g: ArrayLike<number>, s: RefState, o: SgdRefOptions): void {
  s.step++;
  let d = withDecay(p, g, o.weightDecay);
  if (o.momentum !== 0) {
    if (!s.momentum_buffer) s.momentum_buffer = Float64Array.from(d);
    else {
      const b = s.momentum_buffer;
      for (let i = 0; i < p.length; i++) b[i] = o.momentum * b[i] + (1 - o.dampening) * d[i];
    }
    const b = s.momentum_buffer;
    if (o.nesterov) {
      const n = new Float64Array(p.length);
      for (let i = 0; i < p.length; i++) n[i] = d[i] + o.momentum * b[i];
      d = n;
    } else d = b;
  }
  for (let i = 0; i < p.length; i++) p[i] -= o.lr * d[i];
}

/** One Adam / AdamW step on `p` (in place). */
export function adamStepRef(p: Float64Array, g: ArrayLike<number>, s: RefState, o: AdamRefOptions): void {
  const [b1, b2] = o.betas;
  s.step++;
  const m = s.exp_avg ??= new Float64Array(p.length);
  const v = s.exp_avg_sq ??= new Float64Array(p.length);
  let d: ArrayLike<number> = g;
  if (o.decoupled) { for (let i = 0; i < p.length; i++) p[i] *= 1 - o.lr * o.weightDecay; }
  else d = withDecay(p, g, o.weightDecay);
  const bc1 = 1 - b1 ** s.step, bc2 = 1 - b2 ** s.step;
  for (let i = 0; i < p.length; i++) {
    m[i] = b1 * m[i] + (1 - b1) * d[i];
    v[i] = b2 * v[i] + (1 - b2) * d[i] * d[i];
    const denom = Math.sqrt(v[i]) / Math.sqrt(bc2) + o.eps;
    p[i] -= (o.lr / bc1) * m[i] / denom;
  }
}

/** One RMSprop step on `p` (in place). */
export function rmspropStepRef(p: Float64Array, g: ArrayLike<number>, s: RefState, o: RmspropRefOptions): void {
  s.step++;
  const d = withDecay(p, g, o.weightDecay);
  const sq = s.square_avg ??= new Float64Array(p.length);
  const ga = o.centered ? (s.grad_avg ??= new Float64Array(p.length)) : undefined;
  const buf = o.momentum > 0 ? (s.momentum_buffer ??= new Float64Array(p.length)) : undefined;
  for (let i = 0; i < p.length; i++) {
    sq[i] = o.alpha * sq[i] + (1 - o.alpha) * d[i] * d[i];
    let avg: number;
    if (ga) {
      ga[i] = o.alpha * ga[i] + (1 - o.alpha) * d[i];
      avg = Math.sqrt(sq[i] - ga[i] * ga[i]) + o.eps;
    } else avg = Math.sqrt(sq[i]) + o.eps;
    if (buf) {
      buf[i] = o.momentum * buf[i] + d[i] / avg;
      p[i] -= o.lr * buf[i];
    } else p[i] -= o.lr * d[i] / avg;
  }
}

/**
 * clip_grad_norm_: the total p-norm of all gradients (Infinity: largest |g|) and the
 * gradients scaled by min(1, maxNorm / (norm + 1e-6)) (new arrays).
 */
export function clipGradNormRef(
  grads: readonly ArrayLike<number>[],
  maxNorm: number,
  normType = 2,
): { norm: number; grads: Float64Array[] } {
  let acc = 0;
  for (const g of grads) {
    for (let i = 0; i < g.length; i++) {
      const a = Math.abs(g[i]);
      acc = normType === Infinity ? Math.max(acc, a) : acc + a ** normType;
    }
  }
  const norm = normType === Infinity ? acc : acc ** (1 / normType);
  const coef = Math.min(maxNorm / (norm + 1e-6), 1);
  return { norm, grads: grads.map((g) => Float64Array.from(g, (x) => x * coef)) };
}

/** clip_grad_value_: every gradient clamped into [−v, v] (new arrays). */
export function clipGradValueRef(grads: readonly ArrayLike<number>[], v: number): Float64Array[] {
  return grads.map((g) => Float64Array.from(g, (x) => Math.min(Math.max(x, -v), v)));
}
