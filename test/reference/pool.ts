/**
 * Float64 references of max, average and adaptive average 2-D pooling over [N, C, H, W]
 * (PyTorch semantics) with the input gradient for an output gradient dy. Plain loops over
 * Float64Array; never imports src/.
 */

export type Pair = [number, number];

export interface PoolRefOptions {
  kernel: Pair;
  stride: Pair;
  padding: Pair;
  dilation: Pair;
  ceilMode: boolean;
  /** avg only. */
  countIncludePad: boolean;
}

export interface PoolRefResult {
  y: Float64Array;
  dx: Float64Array;
  /** max only: index iy·W + ix of the chosen element within its plane. */
  idx?: Int32Array;
}

/** PyTorch's pooling_output_shape for one dim. */
function outSize(size: number, k: number, s: number, p: number, d: number, ceil: boolean): number {
  const num = size + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
  let out = Math.floor(num / s) + 1;
  if (ceil && (out - 1) * s >= size + p) out--;
  return out;
}

export function poolRefShape(xs: number[], o: PoolRefOptions): number[] {
  return [
    xs[0],
    xs[1],
    outSize(xs[2], o.kernel[0], o.stride[0], o.padding[0], o.dilation[0], o.ceilMode),
    outSize(xs[3], o.kernel[1], o.stride[1], o.padding[1], o.dilation[1], o.ceilMode),
  ];
}

/** Max over each window (the first maximum in row-major order wins); its gradient goes there. */
export function maxPool2dRef(
  x: ArrayLike<number>,
  xs: number[],
  o: PoolRefOptions,
  dy: ArrayLike<number>,
): PoolRefResult {
  const [N, C, H, W] = xs;
  const [, , HO, WO] = poolRefShape(xs, o);
  const y = new Float64Array(N * C * HO * WO), dx = new Float64Array(x.length), idx = new Int32Array(y.length);
  for (let pl = 0; pl < N * C; pl++) {
    for (let oy = 0; oy < HO; oy++) {
      for (let ox = 0; ox < WO; ox++) {
        let best = -Infinity, at = -1;
        for (let ky = 0; ky < o.kernel[0]; ky++) {
          const iy = oy * o.stride[0] - o.padding[0] + ky * o.dilation[0];
          if (iy < 0 || iy >= H) continue;
          for (let kx = 0; kx < o.kernel[1]; kx++) {
            const ix = ox * o.stride[1] - o.padding[1] + kx * o.dilation[1];
            if (ix < 0 || ix >= W) continue;
            const v = x[pl * H * W + iy * W + ix];
            if (at < 0 || v > best) {
              best = v;
              at = iy * W + ix;
            }
          }
        }
        const yi = (pl * HO + oy) * WO + ox;
        y[yi] = best;
        idx[yi] = at;
        if (at >= 0) dx[pl * H * W + at] += dy[yi];
      }
    }
  }
  return { y, dx, idx };
}

/** Mean over each window, divisor as PyTorch's avg_pool2d (no dilation). */
export function avgPool2dRef(
  x: ArrayLike<number>,
  xs: number[],
  o: PoolRefOptions,
  dy: ArrayLike<number>,
): PoolRefResult {
  const [N, C, H, W] = xs;
  const [, , HO, WO] = poolRefShape(xs, o);
  const y = new Float64Array(N * C * HO * WO), dx = new Float64Array(x.length);
  for (let pl = 0; pl < N * C; pl++) {
    for (let oy = 0; oy < HO; oy++) {
      for (let ox = 0; ox < WO; ox++) {
        const ys = oy * o.stride[0] - o.padding[0], xs0 = ox * o.stride[1] - o.padding[1];
        const ye = Math.min(ys + o.kernel[0], H + o.padding[0]), xe = Math.min(xs0 + o.kernel[1], W + o.padding[1]);
        const padded = (ye - ys) * (xe - xs0);
        const cells: number[] = [];
        for (let iy = Math.max(ys, 0); iy < Math.min(ye, H); iy++) {
          for (let ix = Math.max(xs0, 0); ix < Math.min(xe, W); ix++) cells.push(pl * H * W + iy * W + ix);
        }
        const divisor = o.countIncludePad ? padded : cells.length;
        const yi = (pl * HO + oy) * WO + ox;
        y[yi] = cells.reduce((s, i) => s + x[i], 0) / divisor;
        for (const i of cells) dx[i] += dy[yi] / divisor;
      }
    }
  }
  return { y, dx };
}

/** Adaptive mean: output o of n covers [⌊o·H/n⌋, ⌈(o+1)·H/n⌉). */
export function adaptiveAvgPool2dRef(
  x: ArrayLike<number>,
  xs: number[],
  out: Pair,
  dy: ArrayLike<number>,
): PoolRefResult {
  const [N, C, H, W] = xs;
  const [HO, WO] = out;
  const y = new Float64Array(N * C * HO * WO), dx = new Float64Array(x.length);
  for (let pl = 0; pl < N * C; pl++) {
    for (let oy = 0; oy < HO; oy++) {
      const y0 = Math.floor((oy * H) / HO), y1 = Math.ceil(((oy + 1) * H) / HO);
      for (let ox = 0; ox < WO; ox++) {
        const x0 = Math.floor((ox * W) / WO), x1 = Math.ceil(((ox + 1) * W) / WO);
        const count = (y1 - y0) * (x1 - x0);
        const yi = (pl * HO + oy) * WO + ox;
        let acc = 0;
        for (let iy = y0; iy < y1; iy++) {
          for (let ix = x0; ix < x1; ix++) {
            acc += x[pl * H * W + iy * W + ix];
            dx[pl * H * W + iy * W + ix] += dy[yi] / count;
          }
        }
        y[yi] = acc / count;
      }
    }
  }
  return { y, dx };
}

/** Options of the 1-D references, every value given explicitly. */
export interface Pool1dRefOptions {
  kernel: number;
  stride: number;
  padding: number;
  dilation: number;
  ceilMode: boolean;
  countIncludePad: boolean;
}

/** Output shape of 1-D pooling over [N, C, L]. */
export function pool1dRefShape(xs: number[], o: Pool1dRefOptions): number[] {
  return [xs[0], xs[1], outSize(xs[2], o.kernel, o.stride, o.padding, o.dilation, o.ceilMode)];
}

/**
 * Max and average pooling over [N, C, L], written in one dimension (not through the 2-D
 * references): the first maximum of a window wins and gets its gradient; an average divides
 * by the window clipped to the padded input (count_include_pad) or to the input.
 */
export function pool1dRef(
  kind: "max" | "avg",
  x: ArrayLike<number>,
  xs: number[],
  o: Pool1dRefOptions,
  dy: ArrayLike<number>,
): PoolRefResult {
  const [N, C, L] = xs;
  const LO = pool1dRefShape(xs, o)[2];
  const y = new Float64Array(N * C * LO), dx = new Float64Array(x.length), idx = new Int32Array(y.length);
  for (let pl = 0; pl < N * C; pl++) {
    for (let t = 0; t < LO; t++) {
      const yi = pl * LO + t, start = t * o.stride - o.padding;
      if (kind === "max") {
        let best = -Infinity, at = -1;
        for (let k = 0; k < o.kernel; k++) {
          const i = start + k * o.dilation;
          if (i >= 0 && i < L && (at < 0 || x[pl * L + i] > best)) [best, at] = [x[pl * L + i], i];
        }
        y[yi] = best;
        idx[yi] = at;
        dx[pl * L + at] += dy[yi];
      } else {
        const end = Math.min(start + o.kernel, L + o.padding);
        const lo = Math.max(start, 0), hi = Math.min(end, L);
        const div = o.countIncludePad ? end - start : hi - lo;
        let acc = 0;
        for (let i = lo; i < hi; i++) acc += x[pl * L + i];
        y[yi] = acc / div;
        for (let i = lo; i < hi; i++) dx[pl * L + i] += dy[yi] / div;
      }
    }
  }
  return kind === "max" ? { y, dx, idx } : { y, dx };
}
