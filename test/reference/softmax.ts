/** Float64 references of softmax and log-softmax along one dim, with their gradients. Never imports src/. */

/** [outer, len, inner] around `dim` (negative counts from the end). */
function around(shape: number[], dim: number): [number, number, number] {
  const d = dim < 0 ? dim + shape.length : dim;
  const prod = (s: number[]) => s.reduce((a, b) => a * b, 1);
  return [prod(shape.slice(0, d)), shape[d], prod(shape.slice(d + 1))];
}

/**
 * y = softmax(x) (or log_softmax) along `dim` of a row-major `shape`, and dx for the
 * output gradient `dy`, all in float64.
 */
export function softmaxRef(
  x: ArrayLike<number>,
  shape: number[],
  dim: number,
  dy: ArrayLike<number>,
  log = false,
): { y: Float64Array; dx: Float64Array } {
  const [outer, len, inner] = around(shape, dim);
  const y = new Float64Array(x.length), dx = new Float64Array(x.length);
  for (let o = 0; o < outer; o++) {
    for (let q = 0; q < inner; q++) {
      const at = (k: number) => (o * len + k) * inner + q;
      let m = -Infinity;
      for (let k = 0; k < len; k++) m = Math.max(m, x[at(k)]);
      let s = 0;
      for (let k = 0; k < len; k++) s += Math.exp(x[at(k)] - m);
      const lse = m + Math.log(s);
      // p_k = softmax; d log_softmax_k / dx_j = delta_kj - p_j; d softmax_k / dx_j = p_k (delta_kj - p_j).
      let sdy = 0, sdyp = 0;
      for (let k = 0; k < len; k++) {
        const pk = Math.exp(x[at(k)] - lse);
        y[at(k)] = log ? x[at(k)] - lse : pk;
        sdy += dy[at(k)];
        sdyp += dy[at(k)] * pk;
      }
      for (let k = 0; k < len; k++) {
        const pk = Math.exp(x[at(k)] - lse);
        dx[at(k)] = log ? dy[at(k)] - pk * sdy : pk * (dy[at(k)] - sdyp);
      }
    }
  }
  return { y, dx };
}
