/** Errors of the NATS link. Each names the rank whose link it concerns. */

/**
 * Why a link refused a message or went down:
 * - `refused`: a message failed a check (run id, sender, HMAC, sequence) and was dropped;
 * - `down`: the link is closed (connection lost, beacon lost, bye, close); pending calls reject with it;
 * - `rejected`: the coordinator turned the rank away at join (its hello did not verify, or
 *   failed the run's checks) and said why; the rank never served.
 */
export type RankLinkFault = "refused" | "down" | "rejected";

/** A fault of the link to one rank; callers catch it to treat the rank as lost. */
export class RankLinkError extends Error {
  override name = "RankLinkError";
  constructor(readonly rank: number, readonly fault: RankLinkFault, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}
