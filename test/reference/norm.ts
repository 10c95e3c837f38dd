/** Float64 references of layer and batch normalization with their gradients. Never imports src/. */

/**
 * Layer norm of x [rows, len] over each row (biased variance), with optional weight and
 * bias [len], and the gradients of x, weight and bias for the output gradient `dy`.
 */
export function layerNormRef(
  x: ArrayLike<number>,
  rows: number,
  len: number,
  weight: ArrayLike<number> | undefined,
  bias: ArrayLike<number> | undefined,
  eps: number,
  dy: ArrayLike<number>,
): { y: Float64Array; dx: Float64Array; dw: Float64Array; db: Float64Array } {
  const y = new Float64Array(rows * len), dx = new Float64Array(rows * len);
  const dw = new Float64Array(len), db = new Float64Array(len);
  const w = (j: number) => (weight ? weight[j] : 1);
  for (let r = 0; r < rows; r++) {
    const at = (j: number) => r * len + j;
    let m = 0;
    for (let j = 0; j < len; j++) m += x[at(j)];
    m /= len;
    let v = 0;
    for (let j = 0; j < len; j++) v += (x[at(j)] - m) ** 2;
    v /= len;
    const rstd = 1 / Math.sqrt(v + eps);
    let mg = 0, mgx = 0;
    for (let j = 0; j < len; j++) {
      const xh = (x[at(j)] - m) * rstd;
      y[at(j)] = xh * w(j) + (bias ? bias[j] : 0);
      dw[j] += dy[at(j)] * xh;
      db[j] += dy[at(j)];
      mg += dy[at(j)] * w(j) / len;
      mgx += dy[at(j)] * w(j) * xh / len;
    }
    for (let j = 0; j < len; j++) {
      const xh = (x[at(j)] - m) * rstd;
      dx[at(j)] = rstd * (dy[at(j)] * w(j) - mg - xh * mgx);
    }
  }
  return { y, dx, dw, db };
}

/** Options of {@link batchNormRef}. */
export interface BatchNormRefOptions {
  training: boolean;
  momentum: number;
  eps: number;
}

/**
 * Batch norm of x [n, c, s] per channel, as torch.nn.functional.batch_norm: training uses
 * the batch mean and biased variance and returns the updated running statistics (momentum,
 * UNBIASED batch variance); eval uses the running statistics (returned unchanged). Gradients
 * of x, weight and bias for `dy`.
 */
export function batchNormRef(
  x: ArrayLike<number>,
  n: number,
  c: number,
  s: number,
  runningMean: ArrayLike<number>,
  runningVar: ArrayLike<number>,
  weight: ArrayLike<number> | undefined,
  bias: ArrayLike<number> | undefined,
  opts: BatchNormRefOptions,
  dy: ArrayLike<number>,
): {
  y: Float64Array;
  dx: Float64Array;
  dw: Float64Array;
  db: Float64Array;
  runningMean: Float64Array;
  runningVar: Float64Array;
} {
  const total = n * c * s, len = n * s;
  const y = new Float64Array(total), dx = new Float64Array(total);
  const dw = new Float64Array(c), db = new Float64Array(c);
  const rm = Float64Array.from(runningMean), rv = Float64Array.from(runningVar);
  for (let ch = 0; ch < c; ch++) {
    const at = (k: number) => (Math.floor(k / s) * c + ch) * s + (k % s);
    let m: number, v: number;
    if (opts.training) {
      m = 0;
      for (let k = 0; k < len; k++) m += x[at(k)];
      m /= len;
      let ss = 0;
      for (let k = 0; k < len; k++) ss += (x[at(k)] - m) ** 2;
      v = ss / len;
      rm[ch] = (1 - opts.momentum) * rm[ch] + opts.momentum * m;
      rv[ch] = (1 - opts.momentum) * rv[ch] + opts.momentum * ss / (len - 1);
    } else {
      m = runningMean[ch];
      v = runningVar[ch];
    }
    const rstd = 1 / Math.sqrt(v + opts.eps);
    const w = weight ? weight[ch] : 1;
    let sdy = 0, sdyx = 0;
    for (let k = 0; k < len; k++) {
      const xh = (x[at(k)] - m) * rstd;
      y[at(k)] = xh * w + (bias ? bias[ch] : 0);
      sdy += dy[at(k)];
      sdyx += dy[at(k)] * xh;
    }
    dw[ch] = sdyx;
    db[ch] = sdy;
    for (let k = 0; k < len; k++) {
      const xh = (x[at(k)] - m) * rstd;
      dx[at(k)] = opts.training ? w * rstd * (dy[at(k)] - sdy / len - xh * sdyx / len) : w * rstd * dy[at(k)];
    }
  }
  return { y, dx, dw, db, runningMean: rm, runningVar: rv };
}

/**
 * RMS norm of x [rows, len] over each row, y = x / sqrt(mean(x²) + eps) · weight (no centring,
 * no bias), and the gradients of x and weight for `dy`.
 */
export function rmsNormRef(
  x: ArrayLike<number>,
  rows: number,
  len: number,
  weight: ArrayLike<number> | undefined,
  eps: number,
  dy: ArrayLike<number>,
): { y: Float64Array; dx: Float64Array; dw: Float64Array } {
  const y = new Float64Array(rows * len), dx = new Float64Array(rows * len), dw = new Float64Array(len);
  const w = (j: number) => (weight ? weight[j] : 1);
  for (let r = 0; r < rows; r++) {
    let ms = 0;
    for (let j = 0; j < len; j++) ms += x[r * len + j] ** 2 / len;
    const rstd = 1 / Math.sqrt(ms + eps);
    let mgx = 0;
    for (let j = 0; j < len; j++) {
      const i = r * len + j, xh = x[i] * rstd;
      y[i] = xh * w(j);
      dw[j] += dy[i] * xh;
      mgx += dy[i] * w(j) * xh / len;
    }
    for (let j = 0; j < len; j++) {
      const i = r * len + j;
      dx[i] = rstd * (dy[i] * w(j) - x[i] * rstd * mgx);
    }
  }
  return { y, dx, dw };
}

/**
 * Group norm of x [n, c, s] (s: every spatial position) as torch.nn.functional.group_norm:
 * `groups` groups of c / groups channels, each normalized over its channels × s values
 * (biased variance), then weight and bias [c] per channel; gradients of x, weight and bias
 * for `dy`. A group is a row of {@link layerNormRef} with the per-channel weight folded in.
 */
export function groupNormRef(
  x: ArrayLike<number>,
  n: number,
  c: number,
  s: number,
  groups: number,
  weight: ArrayLike<number> | undefined,
  bias: ArrayLike<number> | undefined,
  eps: number,
  dy: ArrayLike<number>,
): { y: Float64Array; dx: Float64Array; dw: Float64Array; db: Float64Array } {
  const len = (c / groups) * s, channel = (i: number) => Math.floor(i / s) % c;
  const w = (i: number) => (weight ? weight[channel(i)] : 1);
  // The layer norm of each group without affine: its x̂, and dx for the gradient dy·w at x̂.
  const dyw = Float64Array.from({ length: n * c * s }, (_, i) => dy[i] * w(i));
  const plain = layerNormRef(x, n * groups, len, undefined, undefined, eps, dyw);
  const y = new Float64Array(n * c * s), dw = new Float64Array(c), db = new Float64Array(c);
  for (let i = 0; i < y.length; i++) {
    const xh = plain.y[i];
    y[i] = xh * w(i) + (bias ? bias[channel(i)] : 0);
    dw[channel(i)] += dy[i] * xh;
    db[channel(i)] += dy[i];
  }
  return { y, dx: plain.dx, dw, db };
}
