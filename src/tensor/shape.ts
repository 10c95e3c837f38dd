/** Pure shape rules shared by ops: no GPU, tested in test/unit. */

/** A tensor shape: sizes per dimension, outermost first. */
export type Shape = readonly number[];

/** Number of elements of a shape (1 for a scalar `[]`). */
export function numel(shape: Shape): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Row-major (contiguous) strides of a shape, in elements. */
export function stridesOf(shape: Shape): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

/** `[a,b]` printed as `[a,b]`, for messages. */
export function fmt(shape: Shape): string {
  return `[${shape.join(",")}]`;
}

/** A dimension index with negatives counted from the end; throws naming the op when out of range. */
export function normDim(dim: number, ndim: number, op: string): number {
  const d = dim < 0 ? dim + ndim : dim;
  if (!Number.isInteger(dim) || d < 0 || d >= ndim) {
    throw new RangeError(`${op}: dim ${dim} is out of range for a tensor of ${ndim} dimensions`);
  }
  return d;
}

/** Validate a shape given by a user: non-negative integers. */
export function checkShape(shape: Shape, op: string): void {
  if (!Array.isArray(shape) || shape.some((d) => !Number.isInteger(d) || d < 0)) {
    throw new TypeError(`${op}: shape must be an array of non-negative integers, got ${JSON.stringify(shape)}`);
  }
}

/**
 * NumPy broadcasting of two shapes: align from the right; sizes must match or be 1.
 * @throws {RangeError} Showing both shapes when they do not broadcast.
 */
export function broadcastShapes(a: Shape, b: Shape, op = "broadcast"): number[] {
  const n = Math.max(a.length, b.length);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const da = a[a.length - n + i] ?? 1;
    const db = b[b.length - n + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) {
      throw new RangeError(`${op}: shapes ${fmt(a)} and ${fmt(b)} do not broadcast (dim ${i}: ${da} vs ${db})`);
    }
    out[i] = da === 1 ? db : da;
  }
  return out;
}

/**
 * Strides that read a tensor of shape `from` as if it had the (broadcast) shape `to`:
 * 0 along broadcast dimensions.
 */
export function broadcastStrides(from: Shape, to: Shape): number[] {
  const s = stridesOf(from);
  const out = new Array<number>(to.length).fill(0);
  for (let i = 0; i < to.length; i++) {
    const j = from.length - to.length + i;
    if (j >= 0 && from[j] !== 1) out[i] = s[j];
  }
  return out;
}

/** Resolve one `-1` in a reshape target against `n` elements. */
export function inferShape(shape: Shape, n: number, op = "reshape"): number[] {
  const out = [...shape];
  const free = out.indexOf(-1);
  if (out.filter((d) => d === -1).length > 1) throw new RangeError(`${op}: at most one -1 in ${fmt(shape)}`);
  if (free >= 0) {
    const rest = numel(out.filter((d) => d !== -1));
    if (rest === 0 || n % rest !== 0) throw new RangeError(`${op}: cannot infer -1 in ${fmt(shape)} for ${n} elements`);
    out[free] = n / rest;
  }
  checkShape(out, op);
  if (numel(out) !== n) throw new RangeError(`${op}: cannot view ${n} elements as ${fmt(shape)}`);
  return out;
}

/** Equal shapes. */
export function sameShape(a: Shape, b: Shape): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}
