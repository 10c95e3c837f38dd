/**
 * The safetensors file format, pure TypeScript (no GPU): what our checkpoints are, so PyTorch
 * reads our weights and we read theirs.
 *
 * Layout: an 8-byte little-endian u64 `N`, then `N` bytes of UTF-8 JSON
 * `{ "__metadata__"?: {string: string}, "<name>": { "dtype", "shape", "data_offsets": [begin, end] } }`,
 * then the raw little-endian tensor bytes; offsets count from the start of that data section.
 * Spec: https://github.com/huggingface/safetensors (README "Format").
 *
 * It lives in io/ (the lowest layer) so that nn/, optim/ and distributed/ all read and write
 * the same format: models, optimizer state and checkpoint bundles ("a type
 * a lower layer needs moves down").
 *
 * Over ~400 lines on purpose: the writer, the reader and the header's validation (every
 * offset, size and dtype checked before anything is allocated, also for streaming readers
 * that parse the header alone) are one format's rules, kept where they can be read together.
 */

/**
 * Element types we read and write. F16 and BF16 keep their raw 16-bit patterns in a Uint16Array;
 * I64 (PyTorch's torch.long, e.g. BatchNorm's `num_batches_tracked`) is a BigInt64Array, exact.
 */
export type SafetensorsDType = "F32" | "F16" | "BF16" | "I32" | "U32" | "I64";

/** One tensor of a safetensors file, on the host. */
export interface SafeTensor {
  /** Element type as spelled in the file header. */
  dtype: SafetensorsDType;
  /** Sizes per dimension, outermost first (`[]` for a scalar). */
  shape: number[];
  /**
   * Values: Float32Array (F32), Uint16Array bit patterns (F16, BF16), Int32Array (I32),
   * Uint32Array (U32), BigInt64Array (I64; see {@link int64ToNumbers}).
   */
  data: Float32Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array;
}

/** What {@link decodeSafetensors} returns. */
export interface DecodedSafetensors {
  /** Tensors by name, in header order. */
  tensors: Record<string, SafeTensor>;
  /** The `__metadata__` map (empty when absent). */
  metadata: Record<string, string>;
}

/** Bytes per element and the typed array each dtype is held in. */
const DTYPES = {
  F32: { bytes: 4, array: Float32Array },
  F16: { bytes: 2, array: Uint16Array },
  BF16: { bytes: 2, array: Uint16Array },
  I32: { bytes: 4, array: Int32Array },
  U32: { bytes: 4, array: Uint32Array },
  I64: { bytes: 8, array: BigInt64Array },
} as const;

/**
 * Largest header we accept, as the reference implementation (`MAX_HEADER_SIZE`): a length
 * field claiming more is a corrupt or hostile file, refused before anything is allocated.
 */
export const MAX_HEADER_BYTES = 100_000_000;

const METADATA_KEY = "__metadata__";
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function isDType(d: unknown): d is SafetensorsDType {
  return typeof d === "string" && Object.hasOwn(DTYPES, d);
}

/**
 * Serialize tensors into one safetensors file. Keys keep the order given, data follows
 * in the same order with no gaps, and the header is padded with spaces to a multiple of
 * 8 bytes as the reference implementation does (so the data section starts 8-aligned).
 * @param tensors Tensors by name; `data` must be the typed array of its dtype with shape-many elements.
 * @param metadata Optional string-to-string map stored as `__metadata__`.
 * @returns The file bytes.
 * @throws {TypeError} For a bad name, an unknown dtype, a typed array of the wrong kind or a bad shape.
 * @throws {RangeError} When the element count does not match the shape.
 * @example
 * ```ts
 * import { decodeSafetensors, encodeSafetensors } from "./safetensors.ts";
 * const bytes = encodeSafetensors({ w: { dtype: "F32", shape: [2], data: new Float32Array([1, 2]) } });
 * const back = decodeSafetensors(bytes);
 * if (back.tensors.w.data[1] !== 2) throw new Error("round trip");
 * ```
 */
export function encodeSafetensors(tensors: Record<string, SafeTensor>, metadata?: Record<string, string>): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length > 0) {
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== "string") {
        throw new TypeError(`encodeSafetensors: metadata values must be strings, got ${typeof v} for "${k}"`);
      }
    }
    header[METADATA_KEY] = metadata;
  }
  let offset = 0;
  const parts: Uint8Array[] = [];
  for (const [name, t] of Object.entries(tensors)) {
    if (name === "" || name === METADATA_KEY) {
      throw new TypeError(`encodeSafetensors: tensor name must be non-empty and not "${METADATA_KEY}", got "${name}"`);
    }
    if (!isDType(t.dtype)) {
      throw new TypeError(
        `encodeSafetensors: tensor "${name}" has dtype ${JSON.stringify(t.dtype)}, expected one of ${
          Object.keys(DTYPES).join(", ")
        }`,
      );
    }
    const spec = DTYPES[t.dtype];
    if (!(t.data instanceof spec.array)) {
      throw new TypeError(
        `encodeSafetensors: tensor "${name}" (${t.dtype}) needs a ${spec.array.name}, got ${t.data?.constructor?.name}`,
      );
    }
    if (!Array.isArray(t.shape) || t.shape.some((d) => !Number.isInteger(d) || d < 0)) {
      throw new TypeError(
        `encodeSafetensors: tensor "${name}" shape must be non-negative integers, got ${JSON.stringify(t.shape)}`,
      );
    }
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length) {
      throw new RangeError(
        `encodeSafetensors: tensor "${name}" shape [${t.shape}] has ${n} elements, data has ${t.data.length}`,
      );
    }
    const bytes = n * spec.bytes;
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    parts.push(littleEndianBytes(t.data));
    offset += bytes;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const headerLen = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + headerLen + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerLen), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.length, 8 + headerLen);
  let at = 8 + headerLen;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The bytes of a typed array in little-endian order (a view when the platform is little-endian). */
function littleEndianBytes(a: SafeTensor["data"]): Uint8Array {
  if (LITTLE_ENDIAN) return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const out = new Uint8Array(a.byteLength);
  const v = new DataView(out.buffer);
  for (let i = 0; i < a.length; i++) {
    if (a instanceof Uint16Array) v.setUint16(i * 2, a[i], true);
    else if (a instanceof Float32Array) v.setFloat32(i * 4, a[i], true);
    else if (a instanceof Int32Array) v.setInt32(i * 4, a[i], true);
    else if (a instanceof BigInt64Array) v.setBigInt64(i * 8, a[i], true);
    else v.setUint32(i * 4, a[i], true);
  }
  return out;
}

/** A typed array of `dtype` copied out of `bytes[begin, end)` (copied: the file's offsets need not be aligned). */
function readArray(bytes: Uint8Array, begin: number, end: number, dtype: SafetensorsDType): SafeTensor["data"] {
  const spec = DTYPES[dtype];
  const copy = bytes.slice(begin, end);
  if (LITTLE_ENDIAN) return new spec.array(copy.buffer, 0, (end - begin) / spec.bytes);
  const n = (end - begin) / spec.bytes, v = new DataView(copy.buffer);
  if (dtype === "I64") {
    const out = new BigInt64Array(n);
    for (let i = 0; i < n; i++) out[i] = v.getBigInt64(i * 8, true);
    return out;
  }
  const out = new (spec.array as Float32ArrayConstructor | Uint16ArrayConstructor | Int32ArrayConstructor | Uint32ArrayConstructor)(n);
  for (let i = 0; i < n; i++) {
    out[i] = spec.bytes === 2
      ? v.getUint16(i * 2, true)
      : dtype === "F32"
      ? v.getFloat32(i * 4, true)
      : dtype === "I32"
      ? v.getInt32(i * 4, true)
      : v.getUint32(i * 4, true);
  }
  return out;
}

/**
 * Parse a safetensors file. Everything is validated before any tensor is allocated: the
 * file length, the header length (it must fit in the file and stay under
 * {@link MAX_HEADER_BYTES}), the JSON, each dtype, shape and offset pair, that shape × dtype
 * size equals the byte range, and that the ranges tile the data section exactly (no overlap,
 * no gap, nothing after the last tensor).
 * @param bytes The whole file.
 * @param source Name used in error messages (the file name).
 * @returns Tensors by name in header order (F16/BF16 as raw Uint16Array bits) and the metadata.
 * @throws {RangeError} For lengths, offsets and sizes that do not add up (names the file and the tensor).
 * @throws {TypeError} For a header that is not JSON of the right kind, an unknown dtype or a bad shape.
 * @example
 * ```ts
 * import { decodeSafetensors, encodeSafetensors } from "./safetensors.ts";
 * const bytes = encodeSafetensors({ b: { dtype: "I32", shape: [], data: new Int32Array([7]) } }, { format: "pt" });
 * const { tensors, metadata } = decodeSafetensors(bytes, "b.safetensors");
 * if (tensors.b.data[0] !== 7 || metadata.format !== "pt") throw new Error("round trip");
 * ```
 */
export function decodeSafetensors(bytes: Uint8Array, source = "<bytes>"): DecodedSafetensors {
  const where = `safetensors "${source}"`;
  if (!(bytes instanceof Uint8Array)) {
    throw new TypeError(`${where}: expected a Uint8Array, got ${(bytes as object)?.constructor?.name}`);
  }
  const { entries, metadata, dataStart } = parseSafetensorsHeader(bytes, bytes.length, source);
  // A null prototype keeps a tensor named "__proto__" an ordinary entry.
  const tensors: Record<string, SafeTensor> = Object.create(null);
  for (const e of entries) {
    tensors[e.name] = {
      dtype: e.dtype,
      shape: e.shape,
      data: readArray(bytes, dataStart + e.begin, dataStart + e.end, e.dtype),
    };
  }
  return { tensors, metadata };
}

/** One tensor's place in a safetensors file: `begin`/`end` are byte offsets in the data section. */
export interface SafetensorsEntry {
  name: string;
  dtype: SafetensorsDType;
  shape: number[];
  begin: number;
  end: number;
}

/** What the header of a safetensors file says, without reading any tensor data. */
export interface SafetensorsHeader {
  /** Tensors in header order. */
  entries: SafetensorsEntry[];
  metadata: Record<string, string>;
  /** Byte offset of the data section in the file (8 + the header length). */
  dataStart: number;
}

/**
 * Bytes a reader needs before it can parse the header: 8, then {@link safetensorsHeaderBytes}
 * of those 8 says how many more.
 * @throws {RangeError} When the header length exceeds {@link MAX_HEADER_BYTES}.
 */
export function safetensorsHeaderBytes(first8: Uint8Array, source = "<bytes>"): number {
  const where = `safetensors "${source}"`;
  if (first8.length < 8) {
    throw new RangeError(`${where}: file is ${first8.length} bytes, shorter than the 8-byte header length`);
  }
  const headerLen = new DataView(first8.buffer, first8.byteOffset, 8).getBigUint64(0, true);
  if (headerLen > BigInt(MAX_HEADER_BYTES)) {
    throw new RangeError(`${where}: header length ${headerLen} exceeds the limit of ${MAX_HEADER_BYTES} bytes`);
  }
  return 8 + Number(headerLen);
}

/**
 * Parse and validate a safetensors header from the file's first bytes (at least
 * {@link safetensorsHeaderBytes}) and the file's total length: the JSON, each dtype, shape
 * and offset pair, that shape × dtype size equals the byte range, and that the ranges tile
 * the data section exactly. Streaming readers call this with the header alone.
 * @throws {RangeError} For lengths, offsets and sizes that do not add up (names the file and the tensor).
 * @throws {TypeError} For a header that is not JSON of the right kind, an unknown dtype or a bad shape.
 */
export function parseSafetensorsHeader(prefix: Uint8Array, fileLength: number, source = "<bytes>"): SafetensorsHeader {
  const where = `safetensors "${source}"`;
  if (fileLength < 8) {
    throw new RangeError(`${where}: file is ${fileLength} bytes, shorter than the 8-byte header length`);
  }
  const dataStart = safetensorsHeaderBytes(prefix, source);
  const n = dataStart - 8;
  if (dataStart > fileLength) {
    throw new RangeError(`${where}: header length ${n} runs past the end of the file (${fileLength} bytes)`);
  }
  if (prefix.length < dataStart) {
    throw new RangeError(`${where}: ${prefix.length} bytes given, the header needs ${dataStart}`);
  }
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(prefix.subarray(8, dataStart)));
  } catch (e) {
    throw new TypeError(`${where}: header is not valid UTF-8 JSON (${(e as Error).message})`);
  }
  if (header === null || typeof header !== "object" || Array.isArray(header)) {
    throw new TypeError(
      `${where}: header must be a JSON object, got ${Array.isArray(header) ? "an array" : typeof header}`,
    );
  }
  const dataLen = fileLength - dataStart;
  const metadata = readMetadata((header as Record<string, unknown>)[METADATA_KEY], where);
  const entries: SafetensorsEntry[] = [];
  for (const [name, info] of Object.entries(header as Record<string, unknown>)) {
    if (name === METADATA_KEY) continue;
    entries.push({ name, ...checkEntry(name, info, dataLen, where) });
  }
  // The ranges must tile [0, dataLen): sorted by begin, each starts where the previous ended.
  const sorted = [...entries].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let pos = 0;
  for (const e of sorted) {
    if (e.begin !== pos) {
      const prev = sorted[sorted.indexOf(e) - 1];
      throw new RangeError(
        e.begin < pos
          ? `${where}: tensor "${e.name}" data_offsets [${e.begin},${e.end}] overlap tensor "${prev.name}" [${prev.begin},${prev.end}]`
          : `${where}: gap in the data section before tensor "${e.name}" (bytes ${pos}..${e.begin} belong to no tensor)`,
      );
    }
    pos = e.end;
  }
  if (pos !== dataLen) {
    throw new RangeError(`${where}: tensors cover ${pos} bytes of data, the file holds ${dataLen} after the header`);
  }
  return { entries, metadata, dataStart };
}

function readMetadata(m: unknown, where: string): Record<string, string> {
  if (m === undefined) return {};
  if (m === null || typeof m !== "object" || Array.isArray(m)) {
    throw new TypeError(`${where}: "${METADATA_KEY}" must be an object of strings, got ${JSON.stringify(m)}`);
  }
  for (const [k, v] of Object.entries(m)) {
    if (typeof v !== "string") {
      throw new TypeError(`${where}: "${METADATA_KEY}" value of "${k}" must be a string, got ${JSON.stringify(v)}`);
    }
  }
  return { ...(m as Record<string, string>) };
}

function checkEntry(name: string, info: unknown, dataLen: number, where: string) {
  const at = `${where}: tensor "${name}"`;
  if (info === null || typeof info !== "object" || Array.isArray(info)) {
    throw new TypeError(`${at} must be an object with dtype, shape and data_offsets, got ${JSON.stringify(info)}`);
  }
  const { dtype, shape, data_offsets: offsets } = info as Record<string, unknown>;
  if (!isDType(dtype)) {
    throw new TypeError(`${at} has dtype ${JSON.stringify(dtype)}, expected one of ${Object.keys(DTYPES).join(", ")}`);
  }
  if (!Array.isArray(shape) || shape.some((d) => typeof d !== "number" || !Number.isInteger(d) || d < 0)) {
    throw new TypeError(`${at} shape must be an array of non-negative integers, got ${JSON.stringify(shape)}`);
  }
  if (
    !Array.isArray(offsets) || offsets.length !== 2 ||
    offsets.some((o) => typeof o !== "number" || !Number.isInteger(o) || o < 0)
  ) {
    throw new TypeError(`${at} data_offsets must be two non-negative integers, got ${JSON.stringify(offsets)}`);
  }
  const [begin, end] = offsets as number[];
  if (begin > end || end > dataLen) {
    throw new RangeError(`${at} data_offsets [${begin},${end}] fall outside the data section of ${dataLen} bytes`);
  }
  const want = (shape as number[]).reduce((a, b) => a * b, 1) * DTYPES[dtype].bytes;
  if (want !== end - begin) {
    throw new RangeError(
      `${at} shape [${shape}] of ${dtype} needs ${want} bytes, data_offsets [${begin},${end}] hold ${end - begin}`,
    );
  }
  return { dtype, shape: [...shape] as number[], begin, end };
}

/**
 * Values of an integer tensor as numbers. I64 values must lie within ±(2^53 − 1), the
 * integers a JavaScript number holds exactly; I32 and U32 always do.
 * @param t The tensor.
 * @param name Its name, for the message.
 * @param range Optional `[lo, hi]` the values must lie in (inclusive), e.g. the i32 range
 *   when the values go into an i32 GPU tensor.
 * @returns The values, exactly.
 * @throws {RangeError} Naming the tensor, the first bad value and its position.
 * @throws {TypeError} For floating dtypes.
 * @example
 * ```ts
 * import { int64ToNumbers } from "./safetensors.ts";
 * const n = int64ToNumbers({ dtype: "I64", shape: [], data: new BigInt64Array([937n]) }, "bn.num_batches_tracked");
 * if (n[0] !== 937) throw new Error("exact");
 * ```
 */
export function int64ToNumbers(
  t: SafeTensor,
  name: string,
  range: [number, number] = [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
): Float64Array<ArrayBuffer> {
  if (t.dtype !== "I64" && t.dtype !== "I32" && t.dtype !== "U32") {
    throw new TypeError(`tensor "${name}": dtype ${t.dtype} is not an integer type`);
  }
  const out = new Float64Array(t.data.length);
  const [lo, hi] = range;
  for (let i = 0; i < out.length; i++) {
    const v = t.data[i];
    // NOTE: compared as BigInt first: Number() of a value past 2^53 rounds and could pass.
    const ok = typeof v === "bigint" ? v >= BigInt(lo) && v <= BigInt(hi) : v >= lo && v <= hi;
    if (!ok) {
      const why = hi === Number.MAX_SAFE_INTEGER ? "beyond 2^53, the largest integer a number holds exactly" : `outside [${lo}, ${hi}]`;
      throw new RangeError(`tensor "${name}" (${t.dtype}) holds ${v} at flat index ${i}, ${why}`);
    }
    out[i] = Number(v);
  }
  return out;
}

/**
 * Values of a floating tensor as f32: F32 as is, BF16 widened exactly (`bits << 16`),
 * F16 converted exactly (every f16 is an f32).
 * @throws {TypeError} For integer dtypes.
 */
export function toFloat32(t: SafeTensor): Float32Array<ArrayBuffer> {
  switch (t.dtype) {
    case "F32":
      return t.data as Float32Array<ArrayBuffer>;
    case "BF16": {
      const src = t.data as Uint16Array, bits = new Uint32Array(src.length);
      for (let i = 0; i < src.length; i++) bits[i] = src[i] << 16;
      return new Float32Array(bits.buffer);
    }
    case "F16": {
      const src = t.data as Uint16Array, out = new Float32Array(src.length);
      for (let i = 0; i < src.length; i++) out[i] = f16ToNumber(src[i]);
      return out;
    }
    default:
      throw new TypeError(`toFloat32: tensor dtype ${t.dtype} is not a floating type`);
  }
}

function f16ToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24; // subnormal (or zero)
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/**
 * bf16 bit patterns of f32 values, rounded to nearest, ties to even; NaN stays a (quiet) NaN
 * and ±Inf stay ±Inf.
 */
export function toBf16Bits(values: Float32Array): Uint16Array<ArrayBuffer> {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < bits.length; i++) {
    const b = bits[i];
    if ((b & 0x7fffffff) > 0x7f800000) {
      out[i] = (b >>> 16) | 0x40; // NOTE: keep a NaN a NaN even when its payload sits in the low half
    } else {
      // NOTE: adding 0x7fff plus the lowest kept bit rounds to nearest with ties to even;
      // values past the largest bf16 round to ±Inf as in PyTorch.
      out[i] = (b + 0x7fff + ((b >>> 16) & 1)) >>> 16;
    }
  }
  return out;
}
