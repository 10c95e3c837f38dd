/**
 * Per-run credentials: one NATS user for the coordinator and one per rank slot, each with
 * a random password, plus a random run key from which each rank's HMAC key is derived
 * (`deriveRankKey`): rank k holds only its own key, so it cannot sign as rank j even
 * where permissions would let it publish. All randomness is WebCrypto's.
 *
 * The server side is an `authorization { users = [...] }` block (`serverAuthorization`)
 * that the coordinator (or whoever runs nats-server) includes in the server config. On
 * loopback the tests use plain `ws://`; on a real network put TLS in front: a `tls {}`
 * block in the server config (cert_file, key_file) and `websocket { tls {} }` for
 * browsers (`wss://`), so passwords and frames never cross a network in clear.
 */
import { castSubject, checkRunId, rankPublishPrefix, relaySubject, runPrefix, toRankSubject } from "./subjects.ts";

/** One NATS user of a run. */
export interface NatsUser {
  /** The NATS user name (`<run>-c` for the coordinator, `<run>-r<k>` for slot k). */
  user: string;
  /** Its password: 32 random characters of [a-z0-9]. */
  pass: string;
}

/** What a remote rank needs to join: given to it once (the join command or URL). */
export interface RankCredentials extends NatsUser {
  /** The run id (4–64 of [a-z0-9]): the NATS subjects' `flodl.<run>` prefix. */
  run: string;
  /** The rank slot these credentials are for. */
  rank: number;
  /** base64 of this rank's 32-byte HMAC key. */
  key: string;
  /**
   * base64 of the run's cast key (cast.ts): the chunks of values published once to every
   * rank are sealed with it. Every rank slot holds the same; a relay's token has none.
   */
  cast?: string;
  /**
   * A relay's slot: the ranks whose reduce frames it sums. The slot may then
   * also subscribe to their relay subjects (`serverAuthorization`). Set with {@link assignRelay}.
   */
  relayFor?: number[];
}

/** What a relay needs to run: its own slot's credentials, and the ranks it sums with their keys. */
export interface RelayCredentials extends RankCredentials {
  /** The member ranks and their HMAC keys (base64): the relay verifies their frames. */
  members: { rank: number; key: string }[];
}

/** Everything the coordinator holds for one run. */
export interface RunCredentials {
  /** The run id (4–64 of [a-z0-9]). */
  run: string;
  /** base64 of the 32-byte run key; rank keys derive from it. */
  runKey: string;
  /** The coordinator's NATS user: it publishes and subscribes under `flodl.<run>.>`. */
  coordinator: NatsUser;
  /** One entry per rank slot, slot k at index k. */
  ranks: RankCredentials[];
}

/** Random bytes from WebCrypto. */
function randomBytes(n: number): Uint8Array<ArrayBuffer> {
  return crypto.getRandomValues(new Uint8Array(n));
}

/** base64 of bytes (small values only: keys and passwords). */
export function toBase64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

/** bytes of base64. */
export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** Random token of lowercase letters and digits (~5.2 bits per character). */
function randomToken(n: number): string {
  const abc = "abcdefghijklmnopqrstuvwxyz0123456789";
  // NOTE: 252 = 7 * 36 is the largest multiple below 256: bytes above it are redrawn, so
  // every character is equally likely (a plain % 36 would favour the first 4).
  let out = "";
  while (out.length < n) for (const b of randomBytes(n)) if (b < 252 && out.length < n) out += abc[b % 36];
  return out;
}

/**
 * Derive rank k's HMAC key from the run key: HMAC-SHA256(runKey, "flodl rank <k>").
 * @returns base64 of 32 bytes.
 */
export async function deriveRankKey(runKey: string, rank: number): Promise<string> {
  const key = await crypto.subtle.importKey("raw", fromBase64(runKey), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`flodl rank ${rank}`));
  return toBase64(new Uint8Array(mac));
}

/** HMAC-SHA256(runKey, "flodl cast"), base64: the key cast chunks are sealed with (cast.ts). */
export async function deriveCastKey(runKey: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", fromBase64(runKey), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return toBase64(new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode("flodl cast"))));
}

/**
 * Make a run's credentials: run id, coordinator user, one user and key per rank slot.
 * @param slots Rank slots that may join (ranks 0..slots-1), at least 1.
 * @param run Run id to use (4–64 of [a-z0-9]); random (16 characters) when omitted.
 * @throws {RangeError} On a bad slot count or run id.
 * @example
 * ```ts
 * import { createRunCredentials } from "./credentials.ts";
 * const creds = await createRunCredentials(2);
 * if (creds.ranks[1].user === creds.ranks[0].user) throw new Error("users must differ");
 * ```
 */
export async function createRunCredentials(slots: number, run?: string): Promise<RunCredentials> {
  if (!Number.isInteger(slots) || slots < 1) {
    throw new RangeError(`createRunCredentials: slots must be an integer >= 1, got ${slots}`);
  }
  const id = checkRunId(run ?? randomToken(16));
  const runKey = toBase64(randomBytes(32));
  const cast = await deriveCastKey(runKey);
  const ranks: RankCredentials[] = [];
  for (let rank = 0; rank < slots; rank++) {
    ranks.push({
      run: id,
      rank,
      user: `${id}-r${rank}`,
      pass: randomToken(32),
      key: await deriveRankKey(runKey, rank),
      cast,
    });
  }
  return { run: id, runKey, coordinator: { user: `${id}-c`, pass: randomToken(32) }, ranks };
}

/**
 * The nats-server `authorization` block for a run: the coordinator publishes and
 * subscribes under `flodl.<run>.>`; rank k publishes only under `flodl.<run>.r<k>.>` and
 * subscribes only to `flodl.<run>.to.r<k>` and the run's cast subject (a relay slot: to its
 * members' relay subjects instead of the cast). Users and passwords are [a-z0-9-] (no quoting
 * issue). Keep the file that holds it readable by its owner only.
 */
export function serverAuthorization(creds: RunCredentials): string {
  const user = (u: NatsUser, pub: string[], sub: string[]) =>
    `    { user: "${u.user}", password: "${u.pass}", permissions: { publish: { allow: ${JSON.stringify(pub)} }, ` +
    `subscribe: { allow: ${JSON.stringify(sub)} } } }`;
  const lines = [user(creds.coordinator, [runPrefix(creds.run)], [runPrefix(creds.run)])];
  for (const r of creds.ranks) {
    const sub = [toRankSubject(r.run, r.rank), ...(r.relayFor ? r.relayFor.map((m) => relaySubject(r.run, m)) : [castSubject(r.run)])];
    lines.push(user(r, [rankPublishPrefix(r.run, r.rank)], sub));
  }
  return `authorization {\n  users = [\n${lines.join("\n")}\n  ]\n}\n`;
}

/**
 * Make slot `slot` the relay of `members` (it sums their reduce frames): call it
 * before `serverAuthorization`, which then lets the slot subscribe to their relay subjects.
 * @throws {RangeError} When the slot or a member is not a slot of the run, a member is the
 * relay itself, or a member already has a relay.
 */
export function assignRelay(creds: RunCredentials, slot: number, members: readonly number[]): void {
  const n = creds.ranks.length;
  const bad = (k: number) => !Number.isInteger(k) || k < 0 || k >= n;
  if (bad(slot)) throw new RangeError(`assignRelay: relay slot must be one of the run's ${n} slots, got ${slot}`);
  if (members.length < 1) throw new RangeError(`assignRelay: relay slot ${slot} needs at least one member rank, got none`);
  for (const k of members) {
    if (bad(k) || k === slot) throw new RangeError(`assignRelay: relay slot ${slot}: member rank ${k} is not another slot of the run (0..${n - 1})`);
    const other = creds.ranks.find((r) => r.relayFor?.includes(k));
    if (other) throw new RangeError(`assignRelay: rank ${k} already has a relay (slot ${other.rank}); a rank sends its frames to one relay`);
  }
  creds.ranks[slot].relayFor = [...members];
}

/** A relay's credentials (its slot's, with its members' keys) from the run's. */
export function relayCredentials(creds: RunCredentials, slot: number): RelayCredentials {
  const own = creds.ranks[slot];
  if (!own?.relayFor) throw new RangeError(`relayCredentials: slot ${slot} is not a relay (assignRelay first)`);
  const { cast: _, ...relay } = own; // a relay adopts nothing: no cast key, no cast subscription
  return { ...relay, members: own.relayFor.map((k) => ({ rank: k, key: creds.ranks[k].key })) };
}
