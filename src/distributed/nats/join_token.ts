/**
 * Join tokens: what a remote rank (or a relay) needs to join a run, as one URL-safe
 * string the coordinator prints (base64url of a JSON object). A token is copied by hand
 * between machines, so a broken one is the usual bad input here: each way it can be
 * broken (empty, cut short, not base64url, not JSON, a field missing or of the wrong type)
 * is one `TypeError` line naming the token (its first characters and length: it carries a
 * password, so never all of it) and what was expected.
 */
import { fromBase64, type RankCredentials, type RelayCredentials, toBase64 } from "./credentials.ts";

/** The most server URLs a token lists (a cluster's nodes). */
export const MAX_TOKEN_URLS = 16;

/** Where a token's holder connects: one server (`url`), or every node of a cluster (`urls`, `url` its first). */
export interface TokenServers {
  /** The server's `ws://` or `wss://` URL; with `urls`, the first of them. */
  url: string;
  /** Every node of a cluster, `url` first (absent for one server): `connectLink` fails over among them. */
  urls?: string[];
}

/** The URLs to connect to: the token's `urls`, or its one `url`. */
export function serversOf(t: TokenServers): string[] {
  return t.urls ?? [t.url];
}

/**
 * A rank's join token: its credentials and the server URL(s), as one URL-safe string. One
 * URL (or a list of one) writes `url` alone, as before clusters; a list of several writes
 * `url` (the first) and `urls` (all of them, in order).
 */
export function encodeJoinToken(url: string | readonly string[], creds: RankCredentials): string {
  const list = typeof url === "string" ? [url] : [...url];
  const servers: TokenServers = list.length > 1 ? { url: list[0], urls: list } : { url: list[0] };
  return toBase64(new TextEncoder().encode(JSON.stringify({ ...servers, ...creds })))
    .replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
}

/** How many of a token's first characters an error shows (base64 of `{"url":"w`: no secret). */
const SHOWN = 12;

/** The token as an error names it: its first characters and its length. */
function named(kind: string, token: string): string {
  const head = token.length > SHOWN ? `${token.slice(0, SHOWN)}…` : token;
  return `${kind} "${head}" (${token.length} characters)`;
}

/** A value's type as an error shows it (never the value: it may be a password or a key). */
function typeOf(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "an array" : typeof v;
}

/** base64 of exactly 32 bytes (an HMAC key). */
function isKey(v: unknown): boolean {
  if (typeof v !== "string" || !/^[A-Za-z0-9+/]{43}=$/.test(v)) return false;
  return fromBase64(v).byteLength === 32;
}

/** The JSON object inside a token, or a TypeError naming the token and what broke. */
function objectOf(token: unknown, kind: string, fn: string): Record<string, unknown> {
  const what = "the string the coordinator printed, copied whole";
  if (typeof token !== "string" || token.length === 0) {
    throw new TypeError(`${fn}: the ${kind} is ${typeof token === "string" ? "empty" : typeOf(token)}; expected ${what}`);
  }
  const name = named(kind, token);
  const bad = /[^A-Za-z0-9_-]/.exec(token);
  if (bad) {
    throw new TypeError(
      `${fn}: ${name} is not base64url: ${JSON.stringify(bad[0])} at character ${bad.index + 1}; expected ${what}`,
    );
  }
  // NOTE: base64 never leaves one character over: a length of 4n + 1 is a token cut short.
  if (token.length % 4 === 1) throw new TypeError(`${fn}: ${name} is cut short (not whole base64); expected ${what}`);
  let v: unknown;
  try {
    const b64 = token.replaceAll("-", "+").replaceAll("_", "/");
    v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(fromBase64(b64 + "=".repeat((4 - b64.length % 4) % 4))));
  } catch (e) {
    throw new TypeError(`${fn}: ${name} does not decode to JSON (${(e as Error).message}): cut short? Expected ${what}`);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) {
    throw new TypeError(`${fn}: ${name} decodes to ${typeOf(v)}, not an object; expected ${what}`);
  }
  return v as Record<string, unknown>;
}

/** Check a token's credential fields; throws naming the first that is missing or of the wrong type. */
function checkFields(v: Record<string, unknown>, name: string, fn: string): void {
  const fail = (field: string, want: string, got: string) => {
    throw new TypeError(`${fn}: ${name}: "${field}" must be ${want}, got ${got}`);
  };
  const missing = (k: string) => k in v ? typeOf(v[k]) : "none";
  const isUrl = (u: unknown): u is string => typeof u === "string" && /^wss?:\/\/\S+$/.test(u);
  if (!isUrl(v.url)) {
    fail("url", "a ws:// or wss:// URL", typeof v.url === "string" ? JSON.stringify(v.url) : missing("url"));
  }
  if ("urls" in v) {
    const u = v.urls;
    const want = `an array of 2-${MAX_TOKEN_URLS} distinct ws:// or wss:// URLs whose first is "url"`;
    if (!Array.isArray(u)) fail("urls", want, typeOf(u));
    const list = u as unknown[];
    if (list.length < 2 || list.length > MAX_TOKEN_URLS) fail("urls", want, `${list.length} entries`);
    const bad = list.findIndex((x) => !isUrl(x));
    if (bad >= 0) fail("urls", want, `entry ${bad} ${typeof list[bad] === "string" ? JSON.stringify(list[bad]) : typeOf(list[bad])}`);
    const twice = list.findIndex((x, i) => list.indexOf(x) !== i);
    if (twice >= 0) fail("urls", want, `entry ${twice} ${JSON.stringify(list[twice])} twice`);
    if (list[0] !== v.url) fail("urls", want, `first ${JSON.stringify(list[0])}, "url" ${JSON.stringify(v.url)}`);
  }
  if (typeof v.run !== "string" || !/^[a-z0-9]{4,64}$/.test(v.run)) {
    fail("run", "4-64 of [a-z0-9]", typeof v.run === "string" ? JSON.stringify(v.run) : missing("run"));
  }
  if (!Number.isInteger(v.rank) || (v.rank as number) < 0) {
    fail("rank", "an integer >= 0", typeof v.rank === "number" ? String(v.rank) : missing("rank"));
  }
  for (const k of ["user", "pass"]) if (typeof v[k] !== "string" || v[k] === "") fail(k, "a non-empty string", missing(k));
  if (!isKey(v.key)) fail("key", "base64 of 32 bytes", typeof v.key === "string" ? `${v.key.length} characters` : missing("key"));
}

/**
 * Read a join token made by {@link encodeJoinToken}.
 * @throws {TypeError} One line naming the token (first characters, length) and what is
 * wrong: empty, not base64url, cut short, not JSON, or a field missing or of the wrong type
 * (`urls`, when present: 2-16 distinct ws(s) URLs, the first being `url`).
 * @example
 * ```ts
 * import { decodeJoinToken } from "./join_token.ts";
 * try {
 *   decodeJoinToken("eyJ1cmwiOiJ3cz");
 * } catch (e) {
 *   if (!(e as Error).message.includes("does not decode to JSON")) throw e;
 * }
 * ```
 */
export function decodeJoinToken(token: string): TokenServers & RankCredentials {
  const v = objectOf(token, "join token", "decodeJoinToken");
  checkFields(v, named("join token", token), "decodeJoinToken");
  return v as unknown as TokenServers & RankCredentials;
}

/**
 * Read a relay's token ({@link encodeJoinToken} of `relayCredentials`).
 * @throws {TypeError} As {@link decodeJoinToken}, naming the relay token; also when
 * "members" is not a non-empty array of `{ rank, key }` (a rank's token given to a relay).
 */
export function decodeRelayToken(token: string): TokenServers & RelayCredentials {
  const fn = "decodeRelayToken", name = named("relay token", token);
  const v = objectOf(token, "relay token", fn);
  checkFields(v, name, fn);
  const m = v.members;
  if (m === undefined) {
    throw new TypeError(`${fn}: ${name} has no "members" (a rank's join token, not a relay's?); expected the relay token the coordinator printed`);
  }
  const ok = (e: unknown) => {
    const x = e as { rank?: unknown; key?: unknown } | null;
    return x !== null && typeof x === "object" && Number.isInteger(x.rank) && (x.rank as number) >= 0 && isKey(x.key);
  };
  if (!Array.isArray(m) || m.length < 1 || !m.every(ok)) {
    const got = Array.isArray(m) ? (m.length ? `an array whose entry ${m.findIndex((e) => !ok(e))} is not` : "an empty array") : typeOf(m);
    throw new TypeError(`${fn}: ${name}: "members" must be a non-empty array of { rank: integer >= 0, key: base64 of 32 bytes }, got ${got}`);
  }
  return v as unknown as TokenServers & RelayCredentials;
}
