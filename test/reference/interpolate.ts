/** Float64 reference of torch.nn.functional.interpolate and its input gradient. Never imports src/. */

/** The options the reference understands (the same names as F.interpolate's). */
export interface InterpolateRefOptions {
  size?: number | number[];
  scaleFactor?: number | number[];
  mode: "nearest" | "linear" | "bilinear" | "trilinear";
  alignCorners?: boolean;
}

/**
 * y = interpolate(x) for x of `shape` [N, C, *spatial], and dx for `dy`: every output element
 * is a weighted sum over the 2^d corners of its source cell (one corner, weight 1, for
 * "nearest"), each corner's index and weight per spatial dim from PyTorch's source-index rule.
 */
export function interpolateRef(
  x: ArrayLike<number>,
  shape: number[],
  o: InterpolateRefOptions,
  dy?: ArrayLike<number>,
): { y: Float64Array; shape: number[]; dx: Float64Array } {
  const sp = shape.slice(2), d = sp.length;
  const list = (v: number | number[]) => (typeof v === "number" ? Array(d).fill(v) : v);
  const out = o.size !== undefined ? list(o.size) : list(o.scaleFactor!).map((f, k) => Math.floor(sp[k] * f));
  // Per spatial dim and output index: the corners' indices and weights.
  const taps = sp.map((len, k) => {
    const n = out[k];
    const scale = o.scaleFactor !== undefined ? 1 / list(o.scaleFactor)[k] : len / n;
    return Array.from({ length: n }, (_, i) => {
      if (o.mode === "nearest") return [[Math.min(Math.floor(i * scale), len - 1), 1]];
      const src = o.alignCorners ? (n > 1 ? (i * (len - 1)) / (n - 1) : 0) : Math.max((i + 0.5) * scale - 0.5, 0);
      const i0 = Math.min(Math.floor(src), len - 1), i1 = Math.min(i0 + 1, len - 1), l = src - i0;
      return [[i0, 1 - l], [i1, l]];
    });
  });
  const planes = shape[0] * shape[1];
  const inPlane = sp.reduce((a, b) => a * b, 1), outPlane = out.reduce((a, b) => a * b, 1);
  const y = new Float64Array(planes * outPlane), dx = new Float64Array(planes * inPlane);
  const at = new Array<number>(d);
  for (let q = 0; q < outPlane; q++) {
    let r = q;
    for (let k = d - 1; k >= 0; k--) {
      at[k] = r % out[k];
      r = Math.floor(r / out[k]);
    }
    // Every combination of one tap per dim.
    const combos: [number, number][] = [[0, 1]];
    for (let k = 0; k < d; k++) {
      const next: [number, number][] = [];
      for (const [idx, w] of combos) for (const [i, wk] of taps[k][at[k]]) next.push([idx * sp[k] + i, w * wk]);
      combos.splice(0, combos.length, ...next);
    }
    for (let p = 0; p < planes; p++) {
      let s = 0;
      for (const [idx, w] of combos) {
        s += w * x[p * inPlane + idx];
        if (dy) dx[p * inPlane + idx] += w * dy[p * outPlane + q];
      }
      y[p * outPlane + q] = s;
    }
  }
  return { y, shape: [shape[0], shape[1], ...out], dx };
}
