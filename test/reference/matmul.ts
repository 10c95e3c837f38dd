/** Float64 references of batched matmul (with transposes and broadcast batch dims) and linear. Never imports src/. */

import { bindex, bshape, unravel } from "./broadcast.ts";

const count = (s: number[]) => s.reduce((x, y) => x * y, 1);

/**
 * C = op(A)·op(B) with NumPy batch broadcasting, and the gradients of L = Σ C·dC:
 * dA, dB at A's and B's own shapes (summed over the batch dims they were broadcast along).
 */
export function matmulRef(
  a: ArrayLike<number>,
  sa: number[],
  b: ArrayLike<number>,
  sb: number[],
  dc: ArrayLike<number>,
  transA = false,
  transB = false,
) {
  const m = transA ? sa[sa.length - 1] : sa[sa.length - 2];
  const k = transA ? sa[sa.length - 2] : sa[sa.length - 1];
  const n = transB ? sb[sb.length - 2] : sb[sb.length - 1];
  if ((transB ? sb[sb.length - 1] : sb[sb.length - 2]) !== k) throw new Error("inner dims differ");
  const ba = sa.slice(0, -2), bb = sb.slice(0, -2), bo = bshape(ba, bb);
  // Element offsets of op(A)[i, p] and op(B)[p, j] inside one matrix.
  const ia = (i: number, p: number) => (transA ? p * m + i : i * k + p);
  const ib = (p: number, j: number) => (transB ? j * k + p : p * n + j);
  const nb = count(bo);
  const c = new Float64Array(nb * m * n), da = new Float64Array(a.length), db = new Float64Array(b.length);
  for (let z = 0; z < nb; z++) {
    const idx = unravel(z, bo);
    const oa = bindex(ba, idx) * m * k, ob = bindex(bb, idx) * k * n;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        const at = z * m * n + i * n + j;
        let s = 0;
        for (let p = 0; p < k; p++) {
          s += a[oa + ia(i, p)] * b[ob + ib(p, j)];
          da[oa + ia(i, p)] += dc[at] * b[ob + ib(p, j)];
          db[ob + ib(p, j)] += dc[at] * a[oa + ia(i, p)];
        }
        c[at] = s;
      }
    }
  }
  return { c, da, db, shape: [...bo, m, n] };
}

/** y = x·wᵀ + b for x [..., in], w [out, in], b [out] (or none), with dx, dw, db for L = Σ y·dy. */
export function linearRef(
  x: ArrayLike<number>,
  sx: number[],
  w: ArrayLike<number>,
  sw: number[],
  b: ArrayLike<number> | undefined,
  dy: ArrayLike<number>,
) {
  const [out, inp] = sw, rows = count(sx.slice(0, -1));
  const y = new Float64Array(rows * out), dx = new Float64Array(x.length), dw = new Float64Array(w.length);
  const db = new Float64Array(out);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < out; o++) {
      let s = b ? b[o] : 0;
      const g = dy[r * out + o];
      for (let i = 0; i < inp; i++) {
        s += x[r * inp + i] * w[o * inp + i];
        dx[r * inp + i] += g * w[o * inp + i];
        dw[o * inp + i] += g * x[r * inp + i];
      }
      y[r * out + o] = s;
      db[o] += g;
    }
  }
  return { y, dx, dw, db, shape: [...sx.slice(0, -1), out] };
}
