/**
 * One direction of a link on one subject: messages split into chunks below the server's
 * max_payload, each chunk sequenced and signed (HMAC-SHA256, WebCrypto), and on the other
 * side verified, checked for replay and loss, and reassembled.
 *
 * Chunk layout: "FLN1", u32 meta length (LE), meta JSON ({@link ChunkMeta}), data bytes,
 * then 32 bytes of HMAC over everything before it. The meta names run and subject, so a
 * chunk cannot be moved to another subject or run. Sequence numbers count chunks per
 * direction from 1 with no gaps: NATS keeps a connection's messages in order and, with
 * reconnect off, loses none without closing, so a gap means a chunk was refused or lost
 * and the message it belonged to can never complete.
 */
import { RankLinkError } from "./errors.ts";
import { fromBase64 } from "./credentials.ts";

/** Header of one chunk. */
export interface ChunkMeta {
  run: string;
  /** The subject it was published on (signed, so a chunk cannot be moved). */
  subject: string;
  /** Sender: "c" (coordinator) or "r<k>". */
  from: string;
  /** Chunk sequence number of this direction, from 1, no gaps. */
  seq: number;
  /** Part index and count of the message this chunk belongs to. */
  part: number;
  parts: number;
  /** Total bytes of the message (checked on reassembly). */
  bytes: number;
}

const MAGIC = 0x314e4c46; // "FLN1" little-endian
const MAC_BYTES = 32;
/** Room kept in each chunk for magic, meta and MAC (meta JSON is under 200 bytes). */
export const CHUNK_OVERHEAD = 512;
/** A message may not claim more parts than this (a bound on what a receiver buffers). */
const MAX_PARTS = 1 << 16;

const utf8 = new TextEncoder();

/** Import a base64 HMAC-SHA256 key for signing and verifying. */
export function importLinkKey(key: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", fromBase64(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}

/** Build one signed chunk. */
export async function sealChunk(
  key: CryptoKey,
  subject: string,
  meta: Omit<ChunkMeta, "subject">,
  data: Uint8Array,
): Promise<Uint8Array<ArrayBuffer>> {
  const m = utf8.encode(JSON.stringify({ ...meta, subject }));
  const out = new Uint8Array(8 + m.byteLength + data.byteLength + MAC_BYTES);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, MAGIC, true);
  dv.setUint32(4, m.byteLength, true);
  out.set(m, 8);
  out.set(data, 8 + m.byteLength);
  const body = out.subarray(0, out.byteLength - MAC_BYTES);
  out.set(new Uint8Array(await crypto.subtle.sign("HMAC", key, body)), body.byteLength);
  return out;
}

/** Sends messages on one subject: chunked, sequenced, signed, in call order. */
export class WireSender {
  #seq = 0;
  #bytes = 0;
  #tail: Promise<void> = Promise.resolve();
  readonly #chunk: number;

  /**
   * @param publish Publishes one NATS message (the connection's `publish`).
   * @param maxPayload The server's max_payload in bytes (from the connection's server info).
   */
  constructor(
    private readonly publish: (subject: string, data: Uint8Array<ArrayBuffer>) => void,
    private readonly subject: string,
    private readonly run: string,
    private readonly from: string,
    private readonly key: CryptoKey,
    maxPayload: number,
  ) {
    if (!(maxPayload > 2 * CHUNK_OVERHEAD)) {
      throw new RangeError(`NATS link: server max_payload must exceed ${2 * CHUNK_OVERHEAD} bytes, got ${maxPayload}`);
    }
    this.#chunk = maxPayload - CHUNK_OVERHEAD;
  }

  /** Bytes of chunks published so far (headers and MACs included). */
  get bytesSent(): number {
    return this.#bytes;
  }

  /** Bytes of message data per chunk. */
  get chunkBytes(): number {
    return this.#chunk;
  }

  /** Queue a message; resolves once all its chunks are handed to the connection. */
  send(message: Uint8Array): Promise<void> {
    const run = async () => {
      const parts = Math.max(1, Math.ceil(message.byteLength / this.#chunk));
      for (let part = 0; part < parts; part++) {
        const data = message.subarray(part * this.#chunk, Math.min(message.byteLength, (part + 1) * this.#chunk));
        const meta: Omit<ChunkMeta, "subject"> = {
          run: this.run,
          from: this.from,
          seq: ++this.#seq,
          part,
          parts,
          bytes: message.byteLength,
        };
        const chunk = await sealChunk(this.key, this.subject, meta, data);
        this.publish(this.subject, chunk);
        this.#bytes += chunk.byteLength;
      }
    };
    const done = this.#tail.then(run);
    this.#tail = done.catch(() => {});
    return done;
  }
}

/** What a receiver concluded about one chunk. */
export type Received =
  | { kind: "partial" }
  | { kind: "message"; bytes: Uint8Array<ArrayBuffer> }
  /** `why`: what failed, without who and where (the coordinator tells a refused rank). */
  | { kind: "refused"; error: RankLinkError; why: string }
  | { kind: "lost"; error: RankLinkError };

/**
 * Receives one subject's chunks, in arrival order (the caller serializes `accept`).
 * `rank` names the rank in every error, whichever side receives.
 */
export class WireReceiver {
  #last = 0;
  #parts: Uint8Array[] = [];
  #expect?: { parts: number; bytes: number };

  constructor(
    private readonly subject: string,
    private readonly run: string,
    private readonly from: string,
    private readonly key: CryptoKey,
    private readonly rank: number,
    /**
     * Take the first chunk's sequence number as the start (the coordinator's side: a rank
     * resends its hello until answered, and hellos sent before the coordinator subscribed
     * are gone). The rank's side is strict: the coordinator speaks only after a hello.
     */
    private readonly lenientStart = false,
  ) {}

  #refuse(why: string): Received {
    const who = this.from === "c"
      ? `a message from the coordinator to rank ${this.rank}`
      : `a message from rank ${this.rank}`;
    return {
      kind: "refused",
      error: new RankLinkError(this.rank, "refused", `rank ${this.rank}: refused ${who} on ${this.subject}: ${why}`),
      why,
    };
  }

  /** Check one chunk and add it to the message being assembled. */
  async accept(chunk: Uint8Array<ArrayBuffer>): Promise<Received> {
    if (chunk.byteLength < 8 + MAC_BYTES) return this.#refuse(`${chunk.byteLength} bytes, too short for a chunk`);
    const dv = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (dv.getUint32(0, true) !== MAGIC) return this.#refuse("not a flodl chunk (bad magic)");
    const metaLen = dv.getUint32(4, true);
    if (8 + metaLen + MAC_BYTES > chunk.byteLength) {
      return this.#refuse(`meta of ${metaLen} bytes in a chunk of ${chunk.byteLength}`);
    }
    let meta: ChunkMeta;
    try {
      meta = JSON.parse(new TextDecoder().decode(chunk.subarray(8, 8 + metaLen)));
    } catch {
      return this.#refuse("unreadable chunk header");
    }
    if (meta.run !== this.run) return this.#refuse(`run id "${meta.run}", expected "${this.run}"`);
    if (meta.from !== this.from) return this.#refuse(`sender "${meta.from}", expected "${this.from}"`);
    if (meta.subject !== this.subject) return this.#refuse(`signed for subject "${meta.subject}"`);
    const body = chunk.subarray(0, chunk.byteLength - MAC_BYTES);
    const mac = chunk.slice(chunk.byteLength - MAC_BYTES);
    if (!await crypto.subtle.verify("HMAC", this.key, mac, body)) {
      return this.#refuse(`HMAC does not match (forged or tampered; seq ${meta.seq})`);
    }
    if (!Number.isSafeInteger(meta.seq) || meta.seq <= this.#last) {
      return this.#refuse(`replayed: seq ${meta.seq}, last accepted ${this.#last}`);
    }
    const starting = this.lenientStart && this.#last === 0 && meta.part === 0;
    if (meta.seq !== this.#last + 1 && !starting) {
      const error = new RankLinkError(
        this.rank,
        "down",
        `rank ${this.rank}: chunks lost on ${this.subject}: seq ${meta.seq} after ${this.#last}; a message cannot complete`,
      );
      return { kind: "lost", error };
    }
    this.#last = meta.seq;
    if (!(meta.parts >= 1 && meta.parts <= MAX_PARTS && meta.part >= 0 && meta.part < meta.parts)) {
      return this.#refuse(`part ${meta.part} of ${meta.parts}`);
    }
    if (meta.part === 0) {
      this.#parts = [];
      this.#expect = { parts: meta.parts, bytes: meta.bytes };
    } else if (!this.#expect || meta.part !== this.#parts.length || meta.parts !== this.#expect.parts) {
      return this.#refuse(`part ${meta.part} of ${meta.parts} out of order`);
    }
    this.#parts.push(chunk.subarray(8 + metaLen, chunk.byteLength - MAC_BYTES));
    if (this.#parts.length < meta.parts) return { kind: "partial" };
    const total = this.#parts.reduce((a, p) => a + p.byteLength, 0);
    if (total !== this.#expect.bytes) {
      return this.#refuse(`message of ${total} bytes, header said ${this.#expect.bytes}`);
    }
    const bytes = new Uint8Array(total);
    let at = 0;
    for (const p of this.#parts) {
      bytes.set(p, at);
      at += p.byteLength;
    }
    this.#parts = [];
    this.#expect = undefined;
    return { kind: "message", bytes };
  }
}
