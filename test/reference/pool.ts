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
