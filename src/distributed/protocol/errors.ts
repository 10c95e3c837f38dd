/** Errors of the data-parallel tier that callers may catch by class. */

/** A rank failed (threw, lost its device, its worker died, or it went silent); carries the rank and the cause. */
export class RankLostError extends Error {
  /** Always `"RankLostError"`, so the class reads in messages and logs. */
  override name = "RankLostError";
  /** The rank that was lost. */
  readonly rank: number;
  /**
   * An error for the loss of `rank`.
   * @param rank The lost rank.
   * @param message What happened, for the error's message.
   * @param options `cause`: the underlying failure.
   */
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
