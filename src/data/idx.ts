/**
 * The IDX file format of the original MNIST distribution (http://yann.lecun.com/exdb/mnist/):
 * a big-endian magic `0x00 0x00 <type> <ndims>`, then `ndims` big-endian u32 sizes, then the
 * values row-major. Only unsigned bytes (type 0x08) are read, which is what MNIST uses.
 */

/** A parsed IDX file: sizes per dimension and the raw unsigned bytes. */
export interface IdxArray {
  /** The magic number (2051 for images `[n, rows, cols]`, 2049 for labels `[n]`). */
  magic: number;
  /** Size of each dimension, outermost first (`[n, rows, cols]` for images). */
  dims: number[];
  /** The values, row-major, one byte each: a view of the file's bytes (no copy). */
  data: Uint8Array;
}

/** Magic of an IDX file of unsigned bytes with 3 dimensions (MNIST images). */
export const IDX_IMAGES_MAGIC = 2051;
/** Magic of an IDX file of unsigned bytes with 1 dimension (MNIST labels). */
export const IDX_LABELS_MAGIC = 2049;

const UBYTE = 0x08;

/**
 * Parse an IDX file of unsigned bytes, validating the header before using it.
 * @param bytes The whole file.
 * @param source File name for messages.
 * @param expectMagic When given, the magic number the file must have (2051 images, 2049 labels).
 * @returns A view of the data (no copy).
 * @throws {RangeError} When the file is shorter than its header says, longer than its data,
 *   or the magic differs from `expectMagic`.
 * @throws {TypeError} When the magic's leading bytes are not zero or the type is not unsigned bytes.
 * @example
 * ```ts
 * import { parseIdx } from "./idx.ts";
 * const file = new Uint8Array([0, 0, 8, 1, 0, 0, 0, 3, 5, 0, 4]);
 * const { dims, data } = parseIdx(file, "labels", 2049);
 * if (dims[0] !== 3 || data[0] !== 5) throw new Error("parsed");
 * ```
 */
export function parseIdx(bytes: Uint8Array, source = "<bytes>", expectMagic?: number): IdxArray {
  const where = `IDX file "${source}"`;
  if (bytes.length < 4) throw new RangeError(`${where}: ${bytes.length} bytes, shorter than the 4-byte magic number`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = view.getUint32(0, false);
  if (bytes[0] !== 0 || bytes[1] !== 0) {
    throw new TypeError(
      `${where}: magic number ${magic} (0x${hex(magic)}) does not start with two zero bytes; not an IDX file`,
    );
  }
  if (expectMagic !== undefined && magic !== expectMagic) {
    throw new RangeError(
      `${where}: magic number ${magic} (0x${hex(magic)}), expected ${expectMagic} (0x${hex(expectMagic)})`,
    );
  }
  if (bytes[2] !== UBYTE) {
    throw new TypeError(`${where}: element type 0x${bytes[2].toString(16)}, only unsigned bytes (0x08) are supported`);
  }
  const ndims = bytes[3];
  const dataStart = 4 + 4 * ndims;
  if (bytes.length < dataStart) {
    throw new RangeError(
      `${where}: ${bytes.length} bytes, shorter than the header of ${ndims} dimensions (${dataStart} bytes)`,
    );
  }
  const dims: number[] = [];
  for (let d = 0; d < ndims; d++) dims.push(view.getUint32(4 + 4 * d, false));
  const n = dims.reduce((a, b) => a * b, 1);
  if (bytes.length - dataStart !== n) {
    throw new RangeError(
      `${where}: header says [${dims}] = ${n} values, the file holds ${bytes.length - dataStart} after the header`,
    );
  }
  return { magic, dims, data: bytes.subarray(dataStart) };
}

function hex(v: number): string {
  return v.toString(16).padStart(8, "0");
}
