/**
 * Float64 references of the shape and indexing ops. Never imports src/.
 *
 * Every op here picks input elements: output element o copies input element `src(o)` (or
 * is 0 when `src(o)` is -1), so the gradient adds dy[o] into dx[src(o)]. Each reference
 * computes that source map with plain multi-index loops.
 */

const count = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);
const norm = (d: number, n: number) => (d < 0 ? d + n : d);

/** Multi-index of flat position i in a row-major shape. */
export function unravelAt(i: number, shape: readonly number[]): number[] {
  const c = new Array<number>(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    c[d] = i % shape[d];
    i = Math.floor(i / shape[d]);
  }
  return c;
}

/** Flat position of a multi-index in a row-major shape. */
export function ravelAt(c: readonly number[], shape: readonly number[]): number {
  let o = 0;
  for (let d = 0; d < shape.length; d++) o = o * shape[d] + c[d];
  return o;
}

/** Output y and gradient dx of a selection given its source map. */
function pick(x: ArrayLike<number>, outLen: number, src: (o: number) => number, dy: ArrayLike<number>) {
  const y = new Float64Array(outLen), dx = new Float64Array(x.length);
  for (let o = 0; o < outLen; o++) {
    const s = src(o);
    if (s < 0) continue;
    y[o] = x[s];
    dx[s] += dy[o];
  }
  return { y, dx };
}

/** permute: output dim k is input dim dims[k]. */
export function permuteRef(x: ArrayLike<number>, shape: number[], dims: number[], dy: ArrayLike<number>) {
  const ds = dims.map((d) => norm(d, shape.length));
  const out = ds.map((d) => shape[d]);
  return {
    shape: out,
    ...pick(x, count(out), (o) => {
      const c = unravelAt(o, out), ci = new Array<number>(shape.length);
      ds.forEach((d, k) => (ci[d] = c[k]));
      return ravelAt(ci, shape);
    }, dy),
  };
}

/** expand to `to` (already resolved, no -1): new leading dims and size-1 dims repeat. */
export function expandRef(x: ArrayLike<number>, from: number[], to: number[], dy: ArrayLike<number>) {
  const lead = to.length - from.length;
  return pick(x, count(to), (o) => {
    const c = unravelAt(o, to).slice(lead).map((v, i) => (from[i] === 1 ? 0 : v));
    return ravelAt(c, from);
  }, dy);
}

/** narrow: entries start..start+length along dim (start already non-negative). */
export function narrowRef(
  x: ArrayLike<number>,
  shape: number[],
  dim: number,
  start: number,
  length: number,
  dy: ArrayLike<number>,
) {
  const d = norm(dim, shape.length);
  const out = shape.map((n, i) => (i === d ? length : n));
  return {
    shape: out,
    ...pick(x, count(out), (o) => {
      const c = unravelAt(o, out);
      c[d] += start;
      return ravelAt(c, shape);
    }, dy),
  };
}

/** cat along dim: output y and one gradient per input. */
export function catRef(xs: ArrayLike<number>[], shapes: number[][], dim: number, dy: ArrayLike<number>) {
  const d = norm(dim, shapes[0].length);
  const out = shapes[0].map((n, i) => (i === d ? shapes.reduce((a, s) => a + s[d], 0) : n));
  const y = new Float64Array(count(out));
  const dxs = xs.map((x) => new Float64Array(x.length));
  for (let o = 0; o < y.length; o++) {
    const c = unravelAt(o, out);
    let k = 0;
    while (c[d] >= shapes[k][d]) c[d] -= shapes[k++][d];
    const s = ravelAt(c, shapes[k]);
    y[o] = xs[k][s];
    dxs[k][s] += dy[o];
  }
  return { y, dxs, shape: out };
}

/** stack along a new dim: output y and one gradient per input. */
export function stackRef(xs: ArrayLike<number>[], shape: number[], dim: number, dy: ArrayLike<number>) {
  const d = norm(dim, shape.length + 1);
  const out = [...shape.slice(0, d), xs.length, ...shape.slice(d)];
  const y = new Float64Array(count(out));
  const dxs = xs.map((x) => new Float64Array(x.length));
  for (let o = 0; o < y.length; o++) {
    const c = unravelAt(o, out);
    const k = c.splice(d, 1)[0];
    const s = ravelAt(c, shape);
    y[o] = xs[k][s];
    dxs[k][s] += dy[o];
  }
  return { y, dxs, shape: out };
}

/** index_select: out-of-range indices give 0 and no gradient (the engine's documented behaviour). */
export function indexSelectRef(
  x: ArrayLike<number>,
  shape: number[],
  dim: number,
  index: ArrayLike<number>,
  dy: ArrayLike<number>,
) {
  const d = norm(dim, shape.length);
  const out = shape.map((n, i) => (i === d ? index.length : n));
  return {
    shape: out,
    ...pick(x, count(out), (o) => {
      const c = unravelAt(o, out);
      const s = index[c[d]];
      if (s < 0 || s >= shape[d]) return -1;
      c[d] = s;
      return ravelAt(c, shape);
    }, dy),
  };
}

/** torch.gather: y[c] = x[c with c[dim] = index[c]]; y has the index's shape. */
export function gatherRef(
  x: ArrayLike<number>,
  shape: number[],
  dim: number,
  index: ArrayLike<number>,
  indexShape: number[],
  dy: ArrayLike<number>,
) {
  const d = norm(dim, shape.length);
  return pick(x, count(indexShape), (o) => {
    const c = unravelAt(o, indexShape);
    const s = index[o];
    if (s < 0 || s >= shape[d]) return -1;
    c[d] = s;
    return ravelAt(c, shape);
  }, dy);
}

/** One-hot rows; out-of-range indices give all-zero rows. */
export function oneHotRef(index: ArrayLike<number>, numClasses: number): Float64Array {
  const y = new Float64Array(index.length * numClasses);
  for (let r = 0; r < index.length; r++) {
    if (index[r] >= 0 && index[r] < numClasses) y[r * numClasses + index[r]] = 1;
  }
  return y;
}

/** embedding: rows of w [v, dd] per index; row paddingIdx (if given) gets no gradient. */
export function embeddingRef(
  w: ArrayLike<number>,
  v: number,
  dd: number,
  index: ArrayLike<number>,
  dy: ArrayLike<number>,
  paddingIdx?: number,
) {
  const r = indexSelectRef(w, [v, dd], 0, index, dy);
  if (paddingIdx !== undefined) r.dx.fill(0, norm(paddingIdx, v) * dd, (norm(paddingIdx, v) + 1) * dd);
  return { y: r.y, dx: r.dx };
}
