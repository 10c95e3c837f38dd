/**
 * Hyperparameter checks shared by the optimizers. Each throws a RangeError naming where
 * (`Adam`, `Adam (param group 1)`), the option, the accepted range and the value received
 * (rejected, never clamped).
 */

/** A finite number >= 0 (lr, eps, weightDecay, momentum, ...). */
export function checkNonNegative(where: string, name: string, v: unknown): void {
  if (typeof v !== "number") throw new TypeError(`${where}: ${name} must be a number, got ${describe(v)}`);
  if (!(v >= 0 && Number.isFinite(v))) throw new RangeError(`${where}: ${name} must be a finite number >= 0, got ${v}`);
}

/** A number in [lo, hi) or [lo, hi] (`closed`). */
export function checkInRange(where: string, name: string, v: unknown, lo: number, hi: number, closed = false): void {
  if (typeof v !== "number") throw new TypeError(`${where}: ${name} must be a number, got ${describe(v)}`);
  const ok = v >= lo && (closed ? v <= hi : v < hi);
  if (!ok) throw new RangeError(`${where}: ${name} must be in [${lo}, ${hi}${closed ? "]" : ")"}, got ${v}`);
}

/** A boolean flag (nesterov, centered). */
export function checkBoolean(where: string, name: string, v: unknown): void {
  if (typeof v !== "boolean") throw new TypeError(`${where}: ${name} must be a boolean, got ${describe(v)}`);
}

function describe(v: unknown): string {
  return typeof v === "string"
    ? JSON.stringify(v)
    : v === null
    ? "null"
    : Array.isArray(v)
    ? `[${v}]`
    : typeof v === "object"
    ? "an object"
    : String(v);
}
