/** Errors of the data-parallel tier that callers may catch by class. */

/** A rank failed (threw, lost its device, its worker died, or it went silent); carries the rank and the cause. */
export class RankLostError extends Error {
  override name = "RankLostError";
  /** The rank that was lost. */
  readonly rank: number;
  constructor(rank: number, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.rank = rank;
  }
}

/** Describe an unknown thrown value: `Name: message`. */
export function describeError(e: unknown): string {
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return String(e);
}
