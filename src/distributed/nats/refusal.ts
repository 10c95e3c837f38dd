/**
 * The coordinator's answer to a hello it cannot accept because the hello does not verify
 * (the rank's token carries another key: a token of another run, or altered). The link's
 * own chunks cannot carry it: they are signed with the rank's key, the very thing the
 * two sides disagree on. The one secret they still share is the rank's NATS password (the
 * server checked it at connect), so the notice is signed with it: HMAC-SHA256 keyed by the
 * password's UTF-8 bytes over "FLNR", run, rank and reason. It travels on the rank's own
 * subject (`to.r<k>`), which only the coordinator may publish on.
 *
 * Layout: "FLNR" (u32 LE), then the JSON `{ run, rank, reason }`, then the 32-byte MAC.
 */
const MAGIC = 0x524e4c46; // "FLNR" little-endian
const MAC_BYTES = 32;

function passKey(pass: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", new TextEncoder().encode(pass), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
    "verify",
  ]);
}

/** Whether `bytes` claim to be a refusal notice (its magic; not yet verified). */
export function isRefusal(bytes: Uint8Array): boolean {
  return bytes.byteLength > 4 + MAC_BYTES && new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true) === MAGIC;
}

/** A refusal notice for rank slot `rank` of `run`, signed with that slot's NATS password. */
export async function sealRefusal(pass: string, run: string, rank: number, reason: string): Promise<Uint8Array<ArrayBuffer>> {
  const body = new TextEncoder().encode(JSON.stringify({ run, rank, reason }));
  const out = new Uint8Array(4 + body.byteLength + MAC_BYTES);
  new DataView(out.buffer).setUint32(0, MAGIC, true);
  out.set(body, 4);
  const mac = await crypto.subtle.sign("HMAC", await passKey(pass), out.subarray(0, 4 + body.byteLength));
  out.set(new Uint8Array(mac), 4 + body.byteLength);
  return out;
}

/**
 * The reason of a refusal notice meant for this rank: undefined unless the MAC verifies
 * with the slot's password and the notice names this run and rank.
 */
export async function openRefusal(pass: string, run: string, rank: number, bytes: Uint8Array): Promise<string | undefined> {
  if (!isRefusal(bytes)) return undefined;
  const end = bytes.byteLength - MAC_BYTES;
  if (!await crypto.subtle.verify("HMAC", await passKey(pass), bytes.slice(end), bytes.slice(0, end))) return undefined;
  try {
    const v = JSON.parse(new TextDecoder().decode(bytes.subarray(4, end)));
    return v?.run === run && v?.rank === rank && typeof v?.reason === "string" ? v.reason : undefined;
  } catch {
    return undefined;
  }
}
