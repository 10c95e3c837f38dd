/**
 * `recordScalar(name, value)` inside `trainFn`: a per-rank accumulator of (sum, count)
 * drained at the end of each chunk and rolled up by the coordinator.
 * Lives on `globalThis` so two copies of the library in one worker share it.
 */
const KEY = Symbol.for("flodl-webgpu.scalars");
const g = globalThis as { [k: symbol]: Map<string, { sum: number; count: number }> | undefined };

/**
 * Record a user scalar for this step (e.g. an accuracy, a token count). Rolled up per
 * epoch: mean over the rank's records, then work-weighted across ranks unless declared
 * otherwise with `.scalarReduction(key, Reduction)`.
 * @throws {TypeError} When `value` is not a number.
 */
export function recordScalar(name: string, value: number): void {
  if (typeof value !== "number") throw new TypeError(`recordScalar: value of "${name}" must be a number, got ${typeof value}`);
  const m = (g[KEY] ??= new Map());
  const e = m.get(name);
  if (e) {
    e.sum += value;
    e.count++;
  } else m.set(name, { sum: value, count: 1 });
}

/** Take every accumulated scalar and reset. */
export function drainScalars(): Record<string, { sum: number; count: number }> {
  const m = g[KEY];
  const out: Record<string, { sum: number; count: number }> = {};
  if (m) {
    for (const [k, v] of m) out[k] = { ...v };
    m.clear();
  }
  return out;
}
