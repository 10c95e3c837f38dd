/**
 * One value to every rank, published once: the consensus of a reduce goes to W ranks, and
 * sending it on each rank's own subject made the coordinator's outbound bytes and CPU (one
 * encode, W × chunk MACs) grow with W. A cast is published once on `flodl.<run>.cast`
 * (subjects.ts), which only the coordinator may publish on and every rank slot subscribes
 * to; the NATS server fans it out. A call that needs the value carries a {@link Cast} in
 * its arguments instead: its id, byte count and SHA-256. The call travels on the rank's own
 * signed link, so the digest is the coordinator's word: the rank swaps in the cast whose
 * bytes hash to it, and a forged, stale or replayed cast can only fail to match.
 *
 * The cast's chunks are sealed like the link's (wire.ts), with a key every rank holds
 * (`RankCredentials.cast`, credentials.ts `deriveCastKey`): they are checked on arrival, but it
 * is the digest that makes a cast the coordinator's. Core NATS is at most once, and a rank
 * that subscribed after a cast began sees its tail only: an incomplete cast is dropped,
 * and a call whose cast has not arrived within `CAST_WAIT_MS` fails with {@link CAST_MISSED},
 * which the coordinator answers by sending the value inline on the rank's link.
 */
import type { NatsConnection } from "./connect.ts";
import { toBase64 } from "./credentials.ts";
import { castSubject } from "./subjects.ts";
import { type Received, WireReceiver, WireSender } from "./wire.ts";

/** A value published once, as a call argument names it. */
export class Cast {
  /**
   * @param id The cast's number in the run (from 1).
   * @param bytes Encoded size (codec.ts).
   * @param digest SHA-256 of the encoded bytes, base64.
   */
  constructor(readonly id: number, readonly bytes: number, readonly digest: string) {}
}

/** The error name of a call whose cast did not arrive (the coordinator resends inline). */
export const CAST_MISSED = "CastMissed";

/** How long a rank waits for a call's cast after the call arrived, ms. */
export const CAST_WAIT_MS = 10_000;

/** How many completed casts a rank keeps for calls still to come. */
const KEPT = 3;

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return toBase64(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
}

/** The coordinator's side: publishes each value once, however many links name it. */
export class CastSender {
  #sender: WireSender;
  #next = 1;
  readonly #sent = new WeakMap<object, Promise<Cast>>();

  constructor(nc: NatsConnection, run: string, key: CryptoKey, maxPayload: number) {
    this.#sender = new WireSender((s, d) => nc.publish(s, d), castSubject(run), run, "c", key, maxPayload);
  }

  /** Bytes of cast chunks published so far. */
  get bytesSent(): number {
    return this.#sender.bytesSent;
  }

  /**
   * Publish `value` (as `encode` gives its bytes) unless this very object was published
   * before; resolves with the {@link Cast} that names it once its chunks are handed to the
   * connection.
   */
  publish(value: object, encode: () => Uint8Array<ArrayBuffer>): Promise<Cast> {
    let cast = this.#sent.get(value);
    if (!cast) {
      const id = this.#next++;
      cast = (async () => {
        const bytes = encode();
        const digest = await sha256(bytes);
        await this.#sender.send(frameCast(id, bytes));
        return new Cast(id, bytes.byteLength, digest);
      })();
      this.#sent.set(value, cast);
    }
    return cast;
  }
}

/** A cast on the wire: its id (u32 LE) before the encoded bytes, so a rank can name what it holds. */
function frameCast(id: number, bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(4 + bytes.byteLength);
  new DataView(out.buffer).setUint32(0, id, true);
  out.set(bytes, 4);
  return out;
}

/** A rank's side: receives the run's casts and hands each call the one its digest names. */
export class CastInbox {
  #receiver: WireReceiver;
  #kept: { id: number; bytes: Uint8Array<ArrayBuffer> }[] = [];
  #waiting = new Set<() => void>();
  #chain: Promise<void> = Promise.resolve();
  #closed = false;

  /**
   * @param rank Names the rank in messages.
   * @param onRefused A chunk that does not verify (dropped).
   */
  constructor(
    private readonly run: string,
    private readonly key: CryptoKey,
    private readonly rank: number,
    private readonly onRefused?: (r: Extract<Received, { kind: "refused" }>) => void,
  ) {
    this.#receiver = this.#fresh();
  }

  /** A receiver that takes the next first part as the start (a rank may subscribe mid-cast). */
  #fresh(): WireReceiver {
    return new WireReceiver(castSubject(this.run), this.run, "c", this.key, this.rank, true);
  }

  /** One chunk from the cast subject, in arrival order. */
  receive(chunk: Uint8Array<ArrayBuffer>): void {
    this.#chain = this.#chain.then(async () => {
      if (this.#closed) return;
      let r = await this.#receiver.accept(chunk);
      if (r.kind === "lost") {
        // A gap: the cast in progress can never complete. Start again at the next one.
        this.#receiver = this.#fresh();
        r = await this.#receiver.accept(chunk);
      }
      if (r.kind === "refused") this.onRefused?.(r);
      else if (r.kind === "message" && r.bytes.byteLength >= 4) {
        const id = new DataView(r.bytes.buffer).getUint32(0, true);
        this.#kept.push({ id, bytes: r.bytes.slice(4) });
        if (this.#kept.length > KEPT) this.#kept.shift();
        for (const wake of this.#waiting) wake();
      }
    }).catch(() => {});
  }

  /**
   * The encoded bytes of `cast`, once a cast with its id arrived and its bytes hash to its
   * digest.
   * @throws {Error} Named {@link CAST_MISSED} when it has not arrived within `waitMs` or
   * its bytes do not match (the coordinator then sends the value inline).
   */
  async take(cast: Cast, waitMs = CAST_WAIT_MS): Promise<Uint8Array<ArrayBuffer>> {
    const missed = (why: string) => Object.assign(new Error(`rank ${this.rank}: cast ${cast.id} ${why}`), { name: CAST_MISSED });
    const deadline = Date.now() + waitMs;
    for (;;) {
      const bytes = this.#kept.find((k) => k.id === cast.id)?.bytes;
      if (bytes) {
        if (bytes.byteLength !== cast.bytes || await sha256(bytes) !== cast.digest) {
          throw missed(`arrived with other bytes than the call names (${bytes.byteLength} B, ${cast.bytes} B named): stale or tampered`);
        }
        return bytes;
      }
      const left = deadline - Date.now();
      if (this.#closed || left <= 0) throw missed(`did not arrive within ${waitMs} ms`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.#waiting.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, left);
        this.#waiting.add(wake);
      });
    }
  }

  /** Stop: pending and later takes fail. */
  close(): void {
    this.#closed = true;
    this.#kept = [];
    for (const wake of this.#waiting) wake();
  }
}
