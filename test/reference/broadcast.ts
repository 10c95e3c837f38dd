/** Float64 references of broadcasting binary ops and reductions. Never imports src/. */

export function bshape(a: number[], b: number[]): number[] {
  const n = Math.max(a.length, b.length), out: number[] = [];
  for (let i = 0; i < n; i++) {
    const da = a[a.length - n + i] ?? 1, db = b[b.length - n + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) throw new Error("no broadcast");
    out.push(Math.max(da, db));
  }
  return out;
}

/** Index into an operand of `shape` for the multi-index `idx` of the (broadcast) output. */
export function bindex(shape: number[], idx: number[]): number {
  let off = 0, stride = 1;
  for (let i = shape.length - 1, j = idx.length - 1; i >= 0; i--, j--) {
    const k = shape[i] === 1 ? 0 : idx[j];
    off += k * stride;
    stride *= shape[i];
  }
  return off;
}

export function unravel(i: number, shape: number[]): number[] {
  const idx = new Array(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    idx[d] = i % shape[d];
    i = Math.floor(i / shape[d]);
  }
  return idx;
}

const count = (s: number[]) => s.reduce((x, y) => x * y, 1);

export interface BinaryRef {
  f: (a: number, b: number) => number;
  da: (a: number, b: number) => number;
  db: (a: number, b: number) => number;
}

export const BINARY_REF: Record<string, BinaryRef> = {
  add: { f: (a, b) => a + b, da: () => 1, db: () => 1 },
  sub: { f: (a, b) => a - b, da: () => 1, db: () => -1 },
  mul: { f: (a, b) => a * b, da: (_a, b) => b, db: (a) => a },
  div: { f: (a, b) => a / b, da: (_a, b) => 1 / b, db: (a, b) => -a / (b * b) },
  pow: { f: (a, b) => a ** b, da: (a, b) => (b === 0 ? 0 : b * a ** (b - 1)), db: (a, b) => (a === 0 && b >= 0 ? 0 : a ** b * Math.log(a)) },
  maximum: { f: Math.max, da: (a, b) => (a > b ? 1 : a === b ? 0.5 : 0), db: (a, b) => (b > a ? 1 : a === b ? 0.5 : 0) },
  minimum: { f: Math.min, da: (a, b) => (a < b ? 1 : a === b ? 0.5 : 0), db: (a, b) => (b < a ? 1 : a === b ? 0.5 : 0) },
};

/** Forward and input gradients of a broadcasting binary op. */
export function binaryRef(name: string, a: ArrayLike<number>, sa: number[], b: ArrayLike<number>, sb: number[], dy: ArrayLike<number>) {
  const r = BINARY_REF[name];
  const so = bshape(sa, sb);
  const n = count(so);
  const y = new Float64Array(n), da = new Float64Array(count(sa)), db = new Float64Array(count(sb));
  for (let i = 0; i < n; i++) {
    const idx = unravel(i, so);
    const ia = bindex(sa, idx), ib = bindex(sb, idx);
    y[i] = r.f(a[ia], b[ib]);
    da[ia] += r.da(a[ia], b[ib]) * dy[i];
    db[ib] += r.db(a[ia], b[ib]) * dy[i];
  }
  return { y, da, db, shape: so };
}

/** Reduction over `dims` (sorted) of a row-major tensor: sum, mean, var (with correction), max, min. */
export function reduceRef(kind: "sum" | "mean" | "var" | "max" | "min", x: ArrayLike<number>, shape: number[], dims: number[], dy: ArrayLike<number>, correction = 1) {
  const outShape = shape.map((d, i) => (dims.includes(i) ? 1 : d));
  const nOut = count(outShape), len = count(dims.map((d) => shape[d]));
  const groups: number[][] = Array.from({ length: nOut }, () => []);
  for (let i = 0; i < x.length; i++) groups[bindex(outShape, unravel(i, shape))].push(i);
  const y = new Float64Array(nOut), dx = new Float64Array(x.length), arg = new Int32Array(nOut);
  groups.forEach((g, o) => {
    if (kind === "sum" || kind === "mean") {
      const s = kind === "mean" ? 1 / len : 1;
      y[o] = g.reduce((acc, i) => acc + x[i], 0) * s;
      for (const i of g) dx[i] = dy[o] * s;
    } else if (kind === "var") {
      const m = g.reduce((acc, i) => acc + x[i], 0) / len;
      y[o] = g.reduce((acc, i) => acc + (x[i] - m) ** 2, 0) / (len - correction);
      for (const i of g) dx[i] = dy[o] * 2 * (x[i] - m) / (len - correction);
    } else {
      let best = 0;
      for (let k = 1; k < g.length; k++) {
        if (kind === "max" ? x[g[k]] > x[g[best]] : x[g[k]] < x[g[best]]) best = k;
      }
      y[o] = x[g[best]];
      arg[o] = best;
      dx[g[best]] = dy[o];
    }
  });
  return { y, dx, arg };
}
