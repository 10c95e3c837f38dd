/**
 * One direction of a link on one subject: messages split into chunks below the server's
 * max_payload, each chunk sequenced and signed (HMAC-SHA256, WebCrypto), and on the other
 * side verified, checked for replay and loss, and reassembled.
 *
 * Chunk layout: "FLN1", u32 meta length (LE), meta JSON ({@link ChunkMeta}), data bytes,
 * then 32 bytes of HMAC over everything before it. The meta names run and subject, so a
 * chunk cannot be moved to another subject or run. Sequence numbers count chunks per
 * direction from 1 with no gaps: NATS keeps a connection's messages in order, and loses
 * some only when a connection drops.
 *
 * A link's two directions resume across such a drop (`resumable`): each chunk's meta carries
 * the highest sequence number its sender has received from the other direction (`ack`); the
 * sender keeps every chunk until it is acknowledged; a receiver that sees a gap drops what
 * comes after it and asks for everything after its last chunk with a control chunk
 * (`resume`, sequence 0), which the other side answers by sending its kept chunks again.
 * Chunks seen before are dropped without a word. Without `resumable` (a rank's frames to its
 * relay: no way back), a gap takes the direction down and a chunk seen before is refused as
 * a replay.
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
  /** The highest sequence number the sender had received from the other direction (resumable links). */
  ack?: number;
  /** A control chunk (`seq` 0, no data): send again every chunk after this sequence number. */
  resume?: number;
  /**
   * The sending side's session: random, one per sender (a rank process, a rank's rejoin, a
   * coordinator's life). A coordinator's receiver that has not yet heard the rank's hello
   * takes a new session as a new start (`WireReceiver.pin`).
   */
  session?: string;
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

/** What a sender keeps for a resumable direction. */
export interface ResumeOptions {
  /** The highest sequence number received from the other direction, stamped on each chunk as its `ack`. */
  received: () => number;
  /**
   * Bytes of unacknowledged chunks kept at most; past it `send` rejects (the other side has
   * been away too long to resume). Default 256 MiB.
   */
  maxKeptBytes?: number;
}

/** Sends messages on one subject: chunked, sequenced, signed, in call order. */
export class WireSender {
  #seq = 0;
  /** This sender's session (ChunkMeta.session). */
  readonly session = [...crypto.getRandomValues(new Uint8Array(8))].map((b) => b.toString(16).padStart(2, "0")).join("");
  #bytes = 0;
  #tail: Promise<void> = Promise.resolve();
  readonly #chunk: number;
  /** Chunks not yet acknowledged, in sequence order (resumable only). */
  #kept: { seq: number; chunk: Uint8Array<ArrayBuffer> }[] = [];
  #keptBytes = 0;

  /**
   * @param publish Publishes one NATS message (the connection's `publish`).
   * @param maxPayload The server's max_payload in bytes (from the connection's server info).
   * @param resume Keep chunks until acknowledged and stamp acknowledgements (a resumable link).
   */
  constructor(
    private readonly publish: (subject: string, data: Uint8Array<ArrayBuffer>) => void,
    private readonly subject: string,
    private readonly run: string,
    private readonly from: string,
    private readonly key: CryptoKey,
    maxPayload: number,
    private readonly resume?: ResumeOptions,
  ) {
    if (!(maxPayload > 2 * CHUNK_OVERHEAD)) {
      throw new RangeError(`NATS link: server max_payload must exceed ${2 * CHUNK_OVERHEAD} bytes, got ${maxPayload}`);
    }
    this.#chunk = maxPayload - CHUNK_OVERHEAD;
  }

  /** Bytes of chunks published so far (headers and MACs included; resent chunks too). */
  get bytesSent(): number {
    return this.#bytes;
  }

  /** Bytes of message data per chunk. */
  get chunkBytes(): number {
    return this.#chunk;
  }

  /** Bytes of chunks kept until the other side acknowledges them. */
  get keptBytes(): number {
    return this.#keptBytes;
  }

  #queue(run: () => Promise<void>): Promise<void> {
    const done = this.#tail.then(run);
    this.#tail = done.catch(() => {});
    return done;
  }

  #put(chunk: Uint8Array<ArrayBuffer>): void {
    this.publish(this.subject, chunk);
    this.#bytes += chunk.byteLength;
  }

  /** Queue a message; resolves once all its chunks are handed to the connection. */
  send(message: Uint8Array): Promise<void> {
    return this.#queue(async () => {
      const parts = Math.max(1, Math.ceil(message.byteLength / this.#chunk));
      const max = this.resume?.maxKeptBytes ?? 256 * 1024 * 1024;
      if (this.resume && this.#keptBytes + message.byteLength > max) {
        throw new RangeError(`NATS link: ${this.subject}: ${this.#keptBytes} bytes unacknowledged, more than the ${max} kept to resume`);
      }
      for (let part = 0; part < parts; part++) {
        const data = message.subarray(part * this.#chunk, Math.min(message.byteLength, (part + 1) * this.#chunk));
        const meta: Omit<ChunkMeta, "subject"> = {
          run: this.run,
          from: this.from,
          seq: ++this.#seq,
          part,
          parts,
          bytes: message.byteLength,
          session: this.session,
          ...(this.resume ? { ack: this.resume.received() } : {}),
        };
        const chunk = await sealChunk(this.key, this.subject, meta, data);
        if (this.resume) {
          this.#kept.push({ seq: meta.seq, chunk });
          this.#keptBytes += chunk.byteLength;
        }
        this.#put(chunk);
      }
    });
  }

  /** The other side has every chunk up to `seq`: stop keeping them. */
  acknowledged(seq: number): void {
    let n = 0;
    while (n < this.#kept.length && this.#kept[n].seq <= seq) this.#keptBytes -= this.#kept[n++].chunk.byteLength;
    if (n) this.#kept.splice(0, n);
  }

  /** Send again every kept chunk after `seq` (the other side asked, or this side reconnected), in order. */
  resend(seq = 0): Promise<void> {
    return this.#queue(() => {
      for (const k of this.#kept) if (k.seq > seq) this.#put(k.chunk);
      return Promise.resolve();
    });
  }

  /** Ask the other side for every chunk after `seq` (a control chunk: not sequenced, not kept). */
  askResume(seq: number): Promise<void> {
    return this.#queue(async () => {
      const meta = { run: this.run, from: this.from, seq: 0, part: 0, parts: 1, bytes: 0, resume: seq };
      this.#put(await sealChunk(this.key, this.subject, meta, new Uint8Array(0)));
    });
  }
}

/** What a receiver concluded about one chunk. */
export type Received =
  | { kind: "partial" }
  | { kind: "message"; bytes: Uint8Array<ArrayBuffer> }
  /** Resumable: a chunk seen before (sent again), dropped. */
  | { kind: "duplicate" }
  /** Resumable: chunks are missing before this one; it was dropped, ask for everything after `have`. */
  | { kind: "gap"; have: number }
  /** Resumable: the other side asks for every chunk after `have`. */
  | { kind: "resume"; have: number }
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
  #session?: string;
  #pinned = false;

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
    /** Resume across lost chunks (module doc) instead of going down. */
    private readonly resumable = false,
  ) {}

  /**
   * The sender's session is the one to keep (the coordinator heard the rank's hello on it):
   * from now on a chunk of another session is dropped, not a new start. Until then a lenient
   * receiver starts again on each new session it hears: the rank's chunks it took for the
   * start may be an old session's (a rank that held on while its coordinator died and one
   * started again, or a stopped rank's last chunks), after which the new session's hello
   * would look already seen.
   */
  pin(): void {
    this.#pinned = true;
  }

  /** The highest sequence number accepted so far (what this side acknowledges). */
  get last(): number {
    return this.#last;
  }

  /** The other direction's acknowledgement carried by the last chunk accepted (resumable links). */
  ack = 0;

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
    if (this.resumable && meta.seq === 0 && Number.isSafeInteger(meta.resume)) return { kind: "resume", have: meta.resume! };
    if (this.lenientStart && meta.session !== this.#session) {
      if (this.#pinned) return { kind: "duplicate" }; // an old session's chunk, or another process on the slot
      this.#session = meta.session;
      this.#last = 0;
      this.#parts = [];
      this.#expect = undefined;
    }
    if (!Number.isSafeInteger(meta.seq) || meta.seq <= this.#last) {
      if (this.resumable && meta.seq > 0) return { kind: "duplicate" };
      return this.#refuse(`replayed: seq ${meta.seq}, last accepted ${this.#last}`);
    }
    const starting = this.lenientStart && this.#last === 0 && meta.part === 0;
    if (meta.seq !== this.#last + 1 && !starting && this.resumable) return { kind: "gap", have: this.#last };
    if (meta.seq !== this.#last + 1 && !starting) {
      const error = new RankLinkError(
        this.rank,
        "down",
        `rank ${this.rank}: chunks lost on ${this.subject}: seq ${meta.seq} after ${this.#last}; a message cannot complete`,
      );
      return { kind: "lost", error };
    }
    this.#last = meta.seq;
    if (Number.isSafeInteger(meta.ack) && meta.ack! > this.ack) this.ack = meta.ack!;
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
