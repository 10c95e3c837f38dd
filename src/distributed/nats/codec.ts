/**
 * Structured values to bytes and back, for the NATS link: the value's shape travels as
 * JSON, typed arrays travel beside it as raw bytes (no base64: a 4 MiB frame stays 4 MiB).
 * Covers what the coordinator–rank protocol sends: plain objects, arrays, strings,
 * booleans, null, undefined, numbers including NaN, ±Infinity and -0, typed arrays and
 * ArrayBuffers, and a {@link Cast} (a value published once, cast.ts: it travels as its name and
 * comes back as a `Cast` for the rank to swap in). Anything else (functions, Maps, class instances) is refused by name:
 * no functions cross the seam.
 *
 * Layout: u32 JSON length (little-endian), the JSON text, zero padding to a multiple of 8,
 * then each attachment at a multiple of 8 in the order the JSON references them.
 */

import { Cast } from "./cast.ts";

/** The typed arrays that travel as attachments, by constructor name. */
const TYPED = {
  Float32Array,
  Float64Array,
  Int8Array,
  Int16Array,
  Int32Array,
  Uint8Array,
  Uint8ClampedArray,
  Uint16Array,
  Uint32Array,
} as const;
type TypedName = keyof typeof TYPED;

/** Marker key of a placeholder object in the JSON (a user key of this name is refused). */
const MARK = "§flodl";

/** Attachment alignment in bytes: the widest element (f64) can view it in place. */
const ALIGN = 8;

const align = (n: number) => Math.ceil(n / ALIGN) * ALIGN;
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/**
 * Encode a structured value as one byte array.
 * @param value What `call`/`emit` carry: objects, arrays, primitives, typed arrays.
 * @returns The JSON shape followed by the typed arrays' bytes.
 * @throws {TypeError} On a function, symbol, bigint, Map or other class instance, naming its path.
 * @example
 * ```ts
 * import { decodeValue, encodeValue } from "./codec.ts";
 * const back = decodeValue(encodeValue({ w: new Float32Array([1, NaN]), n: -0 })) as any;
 * if (!Number.isNaN(back.w[1]) || !Object.is(back.n, -0)) throw new Error("codec lost a value");
 * ```
 */
export function encodeValue(value: unknown): Uint8Array<ArrayBuffer> {
  const blobs: Uint8Array[] = [];
  let at = 0;
  const walk = (v: unknown, path: string): unknown => {
    switch (typeof v) {
      case "string":
      case "boolean":
        return v;
      case "number":
        if (Number.isNaN(v)) return { [MARK]: "NaN" };
        if (v === Infinity) return { [MARK]: "Inf" };
        if (v === -Infinity) return { [MARK]: "-Inf" };
        if (Object.is(v, -0)) return { [MARK]: "-0" };
        return v;
      case "undefined":
        return { [MARK]: "undef" };
      case "object": {
        if (v === null) return null;
        if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
          const name = v.constructor.name as TypedName;
          if (!(name in TYPED)) {
            throw new TypeError(`encodeValue: ${path} is a ${name}, which the NATS link does not carry`);
          }
          const bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
          const ref = { [MARK]: "ta", t: name, o: at, n: v.byteLength / TYPED[name].BYTES_PER_ELEMENT };
          blobs.push(bytes);
          at = align(at + bytes.byteLength);
          return ref;
        }
        if (v instanceof Cast) return { [MARK]: "cast", i: v.id, b: v.bytes, d: v.digest };
        if (v instanceof ArrayBuffer) {
          const ref = { [MARK]: "ab", o: at, b: v.byteLength };
          blobs.push(new Uint8Array(v));
          at = align(at + v.byteLength);
          return ref;
        }
        if (Array.isArray(v)) return v.map((x, i) => walk(x, `${path}[${i}]`));
        const proto = Object.getPrototypeOf(v);
        if (proto !== Object.prototype && proto !== null) {
          throw new TypeError(
            `encodeValue: ${path} is a ${proto?.constructor?.name ?? "class instance"}, send plain objects`,
          );
        }
        const out: Record<string, unknown> = {};
        for (const [k, x] of Object.entries(v)) {
          if (k === MARK) throw new TypeError(`encodeValue: ${path} uses the reserved key "${MARK}"`);
          out[k] = walk(x, `${path}.${k}`);
        }
        return out;
      }
      default:
        throw new TypeError(`encodeValue: ${path} is a ${typeof v}, which the NATS link does not carry`);
    }
  };
  const json = utf8.encode(JSON.stringify(walk(value, "value")));
  const head = align(4 + json.byteLength);
  const out = new Uint8Array(head + at);
  new DataView(out.buffer).setUint32(0, json.byteLength, true);
  out.set(json, 4);
  let o = head;
  for (const b of blobs) {
    out.set(b, o);
    o = align(o + b.byteLength);
  }
  return out;
}

/**
 * Decode bytes made by {@link encodeValue}. Each typed array gets its own ArrayBuffer
 * (a copy), so a receiver may transfer `array.buffer` without taking the message with it.
 * @throws {RangeError} When the bytes are shorter than the JSON says (a truncated message).
 */
export function decodeValue(bytes: Uint8Array): unknown {
  if (bytes.byteLength < 4) throw new RangeError(`decodeValue: ${bytes.byteLength} bytes, need at least 4`);
  const len = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true);
  if (4 + len > bytes.byteLength) {
    throw new RangeError(`decodeValue: JSON of ${len} bytes in a message of ${bytes.byteLength}`);
  }
  const body = align(4 + len);
  const slice = (o: number, n: number) => {
    if (body + o + n > bytes.byteLength) {
      throw new RangeError(`decodeValue: attachment [${o}, ${o + n}) beyond the ${bytes.byteLength - body} bytes sent`);
    }
    return bytes.slice(body + o, body + o + n).buffer;
  };
  const revive = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(revive);
    if (v === null || typeof v !== "object") return v;
    const r = v as Record<string, unknown>;
    if (MARK in r) {
      switch (r[MARK]) {
        case "NaN":
          return NaN;
        case "Inf":
          return Infinity;
        case "-Inf":
          return -Infinity;
        case "-0":
          return -0;
        case "undef":
          return undefined;
        case "cast":
          return new Cast(r.i as number, r.b as number, r.d as string);
        case "ab":
          return slice(r.o as number, r.b as number);
        case "ta": {
          const C = TYPED[r.t as TypedName];
          if (!C) throw new TypeError(`decodeValue: unknown typed array "${r.t}"`);
          return new C(slice(r.o as number, (r.n as number) * C.BYTES_PER_ELEMENT));
        }
        default:
          throw new TypeError(`decodeValue: unknown marker "${r[MARK]}"`);
      }
    }
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(r)) out[k] = revive(x);
    return out;
  };
  return revive(JSON.parse(fromUtf8.decode(bytes.subarray(4, 4 + len))));
}
