/**
 * The link's messages, typed once (as comlink's protocol.ts): what each side may send.
 * Each travels as one `encodeValue` body, chunked and signed by `wire.ts`.
 */

/** An error as it crosses the link: name, message and stack kept (the rank's own error). */
export interface WireError {
  name: string;
  message: string;
  stack?: string;
}

/** Coordinator → rank. */
export type ToRank =
  | { k: "call"; id: number; name: string; args: unknown[] }
  | { k: "beacon" }
  /** `refused`: the rank is turned away at join (its hello failed the run's checks), not the run's end. */
  | { k: "bye"; reason: string; refused?: boolean };

/** Rank → coordinator. */
export type FromRank =
  | { k: "hello"; info: unknown }
  | { k: "result"; id: number; value: unknown }
  | { k: "error"; id: number; error: WireError }
  | { k: "event"; event: unknown }
  | { k: "bye"; reason: string };

/** An error to its wire form. */
export function toWireError(e: unknown): WireError {
  if (e instanceof Error) return { name: e.name, message: e.message, stack: e.stack };
  return { name: "Error", message: String(e) };
}

/** A wire error back to an Error with the rank's name, message and stack. */
export function fromWireError(w: WireError): Error {
  const e = new Error(w.message);
  e.name = w.name;
  if (w.stack) e.stack = w.stack;
  return e;
}
