/**
 * What a walk-in's loaders check before anything of the run executes (walk_in_loader.ts in
 * Deno, walk_in_page.ts in a tab): the token's walk-in fields, the slot's one-use claim,
 * and every file's sha256 against the token's. Each failure is an {@link WalkInRefusal}: one
 * line, naming the file or the token. Imports nothing (it is built into each loader).
 */

/** A loader's one-line refusal; `code` is the Deno loader's exit status (2: bad token, 1: a file or the slot). */
export class WalkInRefusal extends Error {
  /** Exit status of the Deno loader. */
  readonly code: number;
  constructor(code: number, line: string) {
    super(line);
    this.code = code;
  }
}

/** The walk-in fields of a join token. */
export interface WalkInFields {
  /** The bundle's sha256 (hex). */
  bundle: string;
  /** Each pack's sha256 (hex) by name. */
  packs: Record<string, string>;
  /** The slot's one-use ticket (hex; absent in tokens of servers before tickets). */
  ticket?: string;
}

/** The token's JSON (base64url), with its walk-in fields checked. */
export function walkInOf(
  token: string | undefined,
  how: string,
): { fields: WalkInFields; rank: number; run: string; url: string } {
  if (!token) throw new WalkInRefusal(2, `no join token: ${how}`);
  const named = `the join token "${token.slice(0, 12)}…" (${token.length} characters)`;
  let v: { walkIn?: Partial<WalkInFields>; rank?: number; run?: string; url?: string };
  try {
    const b64 = token.replaceAll("-", "+").replaceAll("_", "/");
    v = JSON.parse(atob(b64 + "=".repeat((4 - b64.length % 4) % 4)));
  } catch {
    throw new WalkInRefusal(2, `${named} does not decode (cut short when copied?): copy it whole`);
  }
  const w = v?.walkIn;
  const hex = (s: unknown, n = 64) => typeof s === "string" && new RegExp(`^[0-9a-f]{${n}}$`).test(s);
  if (
    !w || !hex(w.bundle) || !w.packs || !Object.values(w.packs).every((p) => hex(p)) ||
    (w.ticket !== undefined && !hex(w.ticket, 32))
  ) {
    throw new WalkInRefusal(
      2,
      `${named} has no walk-in fields (bundle and packs sha256): it is for a checkout's --join, not for this command`,
    );
  }
  return { fields: w as WalkInFields, rank: Number(v.rank), run: String(v.run), url: String(v.url) };
}

/** Hex sha256 of `bytes`. */
export async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Claim the slot (`POST claim/<ticket>` beside `base`): the server answers once per slot;
 * a second claim is refused (409) with its one line, which this throws.
 */
export async function claimSlot(base: string | URL, ticket: string | undefined): Promise<void> {
  if (ticket === undefined) return;
  const url = new URL(`claim/${ticket}`, base);
  let res: Response;
  try {
    res = await fetch(url, { method: "POST" });
  } catch (e) {
    throw new WalkInRefusal(1, `cannot reach the coordinator at ${url.origin}: ${(e as Error).message}`);
  }
  const text = (await res.text()).trim();
  if (!res.ok) {
    throw new WalkInRefusal(1, text.replace(/^flodl walk-in: /, "") || `claiming the slot: HTTP ${res.status}`);
  }
}

/** One file of the run beside `base`, fetched whole and checked against its sha256. */
export async function fetchChecked(
  base: string | URL,
  item: string,
  file: string,
  want: string,
): Promise<Uint8Array<ArrayBuffer>> {
  const url = new URL(file, base);
  let res: Response;
  try {
    res = await fetch(url);
  } catch (e) {
    throw new WalkInRefusal(1, `cannot fetch the ${item} ${url.href}: ${(e as Error).message}`);
  }
  if (!res.ok) throw new WalkInRefusal(1, `the ${item} ${url.href}: HTTP ${res.status}: ${(await res.text()).trim()}`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  const got = await sha256Hex(bytes);
  if (got !== want) {
    throw new WalkInRefusal(
      1,
      `the ${item} ${url.href} has sha256 ${got}, the join token says ${want}: refused (a tampered or stale file); nothing was run`,
    );
  }
  return bytes;
}
