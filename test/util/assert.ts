/**
 * Assertions for tests, shared by Deno and the browser runner (no dependency: only the
 * npm registry is reachable, so `jsr:@std/assert` is not an option).
 */

/** Thrown by failed assertions. */
export class AssertionError extends Error {
  override name = "AssertionError";
}

export function assert(cond: unknown, msg = "assertion failed"): asserts cond {
  if (!cond) throw new AssertionError(msg);
}

export function assertEquals<T>(got: T, want: T, label = "value"): void {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  if (g !== w) throw new AssertionError(`${label}: got ${g}, want ${w}`);
}

/**
 * Element-wise relative closeness: |got - want| <= tol * max(|want|, floor), where
 * floor = 1e-2 * max|want| (so values that cancel to near zero are judged against the
 * scale of the result, not against themselves). NaN must match NaN, ±Inf must match.
 * The message names the worst index with both values.
 */
export function assertRelClose(
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  tol: number,
  label = "values",
): void {
  if (got.length !== want.length) throw new AssertionError(`${label}: length ${got.length}, want ${want.length}`);
  let scale = 0;
  for (let i = 0; i < want.length; i++) if (Number.isFinite(want[i])) scale = Math.max(scale, Math.abs(want[i]));
  const floor = Math.max(scale * 1e-2, 1e-30);
  let worst = -1, worstErr = 0;
  for (let i = 0; i < want.length; i++) {
    const g = got[i], w = want[i];
    if (Number.isNaN(w) || !Number.isFinite(w)) {
      if (!Object.is(g, w) && !(Number.isNaN(g) && Number.isNaN(w)) && g !== w) {
        throw new AssertionError(`${label}[${i}]: got ${g}, want ${w}`);
      }
      continue;
    }
    const err = Math.abs(g - w) / Math.max(Math.abs(w), floor);
    if (!(err <= worstErr)) {
      worstErr = err;
      worst = i;
    }
  }
  if (worst >= 0 && !(worstErr <= tol)) {
    throw new AssertionError(
      `${label}: relative error ${worstErr.toExponential(2)} > ${tol} at [${worst}]: got ${got[worst]}, want ${want[worst]}`,
    );
  }
}

/** fn throws an instance of `cls` whose message contains every fragment. */
export function assertThrows(fn: () => unknown, cls: abstract new (...a: any[]) => Error, ...fragments: string[]): Error {
  try {
    fn();
  } catch (e) {
    return checkError(e, cls, fragments);
  }
  throw new AssertionError(`expected ${cls.name} containing ${JSON.stringify(fragments)}, nothing was thrown`);
}

/** The promise rejects with an instance of `cls` whose message contains every fragment. */
export async function assertRejects(
  fn: () => Promise<unknown>,
  cls: abstract new (...a: any[]) => Error,
  ...fragments: string[]
): Promise<Error> {
  try {
    await fn();
  } catch (e) {
    return checkError(e, cls, fragments);
  }
  throw new AssertionError(`expected rejection with ${cls.name} containing ${JSON.stringify(fragments)}, it resolved`);
}

function checkError(e: unknown, cls: abstract new (...a: any[]) => Error, fragments: string[]): Error {
  if (!(e instanceof cls)) {
    throw new AssertionError(`expected ${cls.name}, got ${(e as Error)?.name}: ${(e as Error)?.message ?? e}`);
  }
  for (const f of fragments) {
    if (!e.message.includes(f)) throw new AssertionError(`error message ${JSON.stringify(e.message)} lacks ${JSON.stringify(f)}`);
  }
  return e;
}

/** What `fn` throws, as `Name: message`, or "accepted" when it returns: for tables of bad inputs and their one-line errors. */
export function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return `${(e as Error).name}: ${(e as Error).message}`;
  }
  return "accepted";
}
