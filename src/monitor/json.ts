/**
 * JSON for monitor outputs. JSON has no NaN or ±Infinity (`JSON.stringify(NaN)` is
 * `null`), yet a NaN loss must reach every consumer as NaN, never hidden. The monitor
 * therefore writes a non-finite number as one of the strings `"NaN"`, `"Infinity"`,
 * `"-Infinity"`, and its readers ({@link parseRecord}, the dashboard) turn them back.
 */

/** The strings that stand for non-finite numbers in monitor JSON. */
export const NON_FINITE_STRINGS: readonly string[] = Object.freeze(["NaN", "Infinity", "-Infinity"]);

/**
 * A number as it is written to monitor JSON: finite numbers unchanged, NaN and ±Infinity
 * as their string names.
 * @example
 * ```ts
 * import { encodeNumber } from "./json.ts";
 * encodeNumber(NaN); // "NaN"
 * encodeNumber(1.5); // 1.5
 * ```
 */
export function encodeNumber(v: number): number | string {
  return Number.isFinite(v) ? v : String(v);
}

/**
 * Inverse of {@link encodeNumber}: a number stays, `"NaN"`/`"Infinity"`/`"-Infinity"`
 * become numbers again; anything else is returned unchanged.
 * @example
 * ```ts
 * import { decodeNumber } from "./json.ts";
 * Number.isNaN(decodeNumber("NaN")); // true
 * ```
 */
export function decodeNumber(v: unknown): unknown {
  return typeof v === "string" && NON_FINITE_STRINGS.includes(v) ? Number(v) : v;
}

/** `JSON.stringify` replacer writing non-finite numbers as strings. */
function replacer(_key: string, value: unknown): unknown {
  return typeof value === "number" && !Number.isFinite(value) ? String(value) : value;
}

/**
 * `JSON.stringify` that keeps NaN and ±Infinity as the strings `"NaN"`, `"Infinity"`,
 * `"-Infinity"` (at any depth).
 * @example
 * ```ts
 * import { stringifyFinite } from "./json.ts";
 * stringifyFinite({ loss: NaN }); // '{"loss":"NaN"}'
 * ```
 */
export function stringifyFinite(value: unknown, space?: number): string {
  return JSON.stringify(value, replacer, space);
}
