/**
 * Central differences, the independent check of every float64 reference's backward
 * (test/unit/reference/): (f(x + h) - f(x - h)) / 2h, in float64, never importing src/.
 */

/**
 * d/dx of one scalar function at `x`.
 * @param h Step; the error is O(h²) plus rounding of order ε·|f| / h.
 */
export function numDeriv(f: (x: number) => number, x: number, h = 1e-6): number {
  return (f(x + h) - f(x - h)) / (2 * h);
}

/**
 * Gradient of a scalar `loss()` that reads `v`, by central differences over every element:
 * each element is moved by ±h in place and restored, so `v` is unchanged on return.
 * For losses closing over several arrays (x, w, b; every weight of an RNN).
 * @example
 * ```ts
 * const w = Float64Array.of(1, 2);
 * const g = numGradInPlace(w, () => w[0] * w[1]); // ≈ [2, 1]
 * ```
 */
export function numGradInPlace(v: Float64Array, loss: () => number, h = 1e-6): Float64Array {
  return Float64Array.from(v, (_, i) => {
    const keep = v[i];
    v[i] = keep + h;
    const up = loss();
    v[i] = keep - h;
    const down = loss();
    v[i] = keep;
    return (up - down) / (2 * h);
  });
}

/**
 * Gradient of L(x) = Σ f(x)·dy with respect to every element of x, by central differences
 * on a float64 copy of `x` (which is left untouched): what a backward given upstream
 * gradient `dy` must return.
 * @param f The forward under test; its output has the length of `dy`.
 * @example
 * ```ts
 * const g = numGrad((v) => v.map((e) => e * e), Float64Array.of(3), [2]); // ≈ [12]
 * ```
 */
export function numGrad(
  f: (x: Float64Array) => ArrayLike<number>,
  x: ArrayLike<number>,
  dy: ArrayLike<number>,
  h = 1e-6,
): Float64Array {
  const v = Float64Array.from(x);
  return numGradInPlace(v, () => {
    const y = f(v);
    let s = 0;
    for (let i = 0; i < y.length; i++) s += y[i] * dy[i];
    return s;
  }, h);
}
