import { fmt, type Tensor } from "../tensor/mod.ts";

/**
 * State-dict validation: what a module expects against what a file or map offers. Apart
 * from `state.ts` (file I/O over a module) so that `module.ts` can check a load without
 * importing the file that imports it.
 */

/** What {@link Module.loadStateDict} reports with `strict: false` (PyTorch's `_IncompatibleKeys`). */
export interface LoadResult {
  /** Keys the module has that the state did not give. */
  missing: string[];
  /** Keys the state gave that the module does not have. */
  unexpected: string[];
}

/** What validation needs to know of one state tensor, on either side. */
export interface StateEntry {
  /** The tensor's shape, compared exactly. */
  shape: readonly number[];
  /** Dtype as shown in messages ("f32", or a file's "BF16"). */
  dtype: string;
  /** The tensor dtype it can be stored in. */
  base: "f32" | "i32" | "u32";
}

/** The entry of a tensor. */
export function tensorEntry(t: Tensor): StateEntry {
  return { shape: t.shape, dtype: t.dtype, base: t.dtype };
}

/** Options of {@link checkStateDict}. */
export interface CheckOptions {
  /** Refuse missing and unexpected keys. */
  strict: boolean;
  /** Where the state comes from (file name), for the message. */
  source: string;
  /** What it is loaded into (class name), for the message. */
  into: string;
  /** A further problem with a key present on both sides, or undefined. */
  extra?: (key: string) => string | undefined;
}

/**
 * Compare the state a module expects with the state offered, and throw ONE error listing
 * every problem: shape and dtype mismatches (always), missing and unexpected keys (when
 * strict). Pure: callers change nothing until it returns.
 * @returns The missing and unexpected keys (what a non-strict load skipped).
 * @throws {Error} `Cannot load "<source>" into <into> (k problems):` then one line per problem.
 */
export function checkStateDict(
  expected: ReadonlyMap<string, StateEntry>,
  offered: ReadonlyMap<string, StateEntry>,
  options: CheckOptions,
): LoadResult {
  const problems: string[] = [];
  const missing: string[] = [], unexpected: string[] = [];
  for (const [k, want] of expected) {
    const got = offered.get(k);
    if (!got) {
      missing.push(k);
      if (options.strict) problems.push(`missing "${k}" (model expects ${fmt(want.shape)})`);
      continue;
    }
    if (!sameShape(got.shape, want.shape)) {
      problems.push(`"${k}" is ${fmt(got.shape)}, model expects ${fmt(want.shape)}`);
    } else if (got.base !== want.base) {
      problems.push(`"${k}" is ${got.dtype}, model expects ${want.dtype}`);
    } else {
      const e = options.extra?.(k);
      if (e) problems.push(e);
    }
  }
  for (const [k, got] of offered) {
    if (expected.has(k)) continue;
    unexpected.push(k);
    if (options.strict) problems.push(`unexpected "${k}" ${fmt(got.shape)}`);
  }
  if (problems.length > 0) {
    const n = problems.length === 1 ? "1 problem" : `${problems.length} problems`;
    throw new Error(`Cannot load "${options.source}" into ${options.into} (${n}):\n  ${problems.join("\n  ")}`);
  }
  return { missing, unexpected };
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}
