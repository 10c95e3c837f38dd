/** Float64 reference of rotary position embedding (RoPE) with its gradient. Never imports src/. */

/**
 * Rotate x [rows, t, d] (rows = every leading dim) by position: pair (a, b) of row position
 * p = offset + (row index mod t) turns by angle p · base^(-2i/d), i = pair index. Pairs are
 * (i, i + d/2) ("rotate half", GPT-NeoX / LLaMA) or (2i, 2i + 1) when `interleaved` (GPT-J).
 * The gradient of a rotation is the rotation by the opposite angle.
 */
export function ropeRef(
  x: ArrayLike<number>,
  t: number,
  d: number,
  opts: { base: number; offset: number; interleaved: boolean },
  dy: ArrayLike<number>,
): { y: Float64Array; dx: Float64Array } {
  const y = new Float64Array(x.length), dx = new Float64Array(x.length);
  const half = d / 2;
  for (let row = 0; row < x.length / d; row++) {
    const pos = opts.offset + (row % t);
    for (let i = 0; i < half; i++) {
      const theta = pos * Math.pow(opts.base, -2 * i / d);
      const c = Math.cos(theta), s = Math.sin(theta);
      const a = row * d + (opts.interleaved ? 2 * i : i);
      const b = row * d + (opts.interleaved ? 2 * i + 1 : i + half);
      y[a] = x[a] * c - x[b] * s;
      y[b] = x[a] * s + x[b] * c;
      dx[a] = dy[a] * c + dy[b] * s;
      dx[b] = -dy[a] * s + dy[b] * c;
    }
  }
  return { y, dx };
}
