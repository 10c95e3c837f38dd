/**
 * Several named files as one download: a minimal POSIX ustar (tar) writer and a validating
 * reader, plus the browser helpers to download bytes and to let the user pick a file. A
 * checkpoint bundle leaves and enters a browser this way. Format: POSIX.1-1988 ustar
 * (pubs.opengroup.org, `pax` "ustar Interchange Format"): 512-byte headers with octal
 * fields, data padded to 512 bytes, two zero blocks at the end.
 */
import { checkPath } from "./storage.ts";

/** One file of an archive. */
export interface ArchiveEntry {
  /** Relative `/`-separated path, no `.` or `..` parts. */
  name: string;
  /** The file's contents. */
  bytes: Uint8Array;
}

/** Options of {@link packTar}. */
export interface PackOptions {
  /** Modification time of every entry, seconds since 1970 (default: now). */
  mtime?: number;
}

const BLOCK = 512;
/** Largest entry the 11-digit octal size field holds (8 GiB − 1). */
export const MAX_TAR_ENTRY_BYTES = 8 ** 11 - 1;

const enc = new TextEncoder();

/**
 * Pack files into a ustar archive (regular files, mode 0644, owner 0).
 * @param entries Files in the order they are stored.
 * @returns The archive bytes (a multiple of 512).
 * @throws {RangeError} For an unsafe or too long name (over 255 bytes, or no `/` to split a
 *   name over 100 bytes at), a duplicate name, or an entry past {@link MAX_TAR_ENTRY_BYTES}.
 * @example
 * ```ts
 * import { packTar, unpackTar } from "./archive.ts";
 * const tar = packTar([{ name: "a/b.txt", bytes: new TextEncoder().encode("hi") }], { mtime: 0 });
 * const [entry] = unpackTar(tar, "x.tar");
 * if (entry.name !== "a/b.txt" || entry.bytes.length !== 2) throw new Error("round trip");
 * ```
 */
export function packTar(entries: readonly ArchiveEntry[], options: PackOptions = {}): Uint8Array<ArrayBuffer> {
  const mtime = Math.floor(options.mtime ?? Date.now() / 1000);
  if (!Number.isInteger(mtime) || mtime < 0 || mtime > MAX_TAR_ENTRY_BYTES) {
    throw new RangeError(`packTar: mtime must be an integer in [0, ${MAX_TAR_ENTRY_BYTES}], got ${options.mtime}`);
  }
  const seen = new Set<string>();
  let total = 2 * BLOCK;
  for (const e of entries) {
    checkPath(e.name, "packTar: entry name");
    if (seen.has(e.name)) throw new RangeError(`packTar: duplicate entry "${e.name}"`);
    seen.add(e.name);
    if (!(e.bytes instanceof Uint8Array)) {
      throw new TypeError(`packTar: entry "${e.name}" bytes must be a Uint8Array, got ${typeof e.bytes}`);
    }
    if (e.bytes.length > MAX_TAR_ENTRY_BYTES) {
      throw new RangeError(
        `packTar: entry "${e.name}" is ${e.bytes.length} bytes, over the ustar limit ${MAX_TAR_ENTRY_BYTES}`,
      );
    }
    total += BLOCK + padded(e.bytes.length);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const e of entries) {
    writeHeader(out.subarray(at, at + BLOCK), e.name, e.bytes.length, mtime);
    out.set(e.bytes, at + BLOCK);
    at += BLOCK + padded(e.bytes.length);
  }
  return out; // the two zero end blocks are already zero
}

function padded(n: number): number {
  return Math.ceil(n / BLOCK) * BLOCK;
}

/** Split a UTF-8 name into ustar's prefix (≤ 155 bytes) and name (≤ 100 bytes) at a `/`. */
function splitName(name: string): [prefix: Uint8Array, name: Uint8Array] {
  const all = enc.encode(name);
  if (all.length <= 100) return [new Uint8Array(0), all];
  for (let i = all.length - 1; i > 0; i--) {
    if (all[i] === 0x2f && i <= 155 && all.length - i - 1 <= 100) return [all.subarray(0, i), all.subarray(i + 1)];
  }
  throw new RangeError(
    `packTar: entry name "${name}" is ${all.length} bytes; ustar holds 100, or 255 split at a "/" into 155 + 100`,
  );
}

function writeHeader(h: Uint8Array, name: string, size: number, mtime: number): void {
  const [prefix, base] = splitName(name);
  h.set(base, 0);
  octal(h, 100, 8, 0o644);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, size);
  octal(h, 136, 12, mtime);
  h[156] = 0x30; // typeflag '0': regular file
  h.set(enc.encode("ustar\u000000"), 257);
  h.set(prefix, 345);
  h.fill(0x20, 148, 156); // the checksum counts its own field as spaces
  const sum = h.reduce((a, b) => a + b, 0);
  octal(h, 148, 7, sum); // six digits, NUL, then the space left from the fill
}

/** Zero-padded octal digits then a NUL, filling `len` bytes. */
function octal(h: Uint8Array, off: number, len: number, v: number): void {
  h.set(enc.encode(v.toString(8).padStart(len - 1, "0")), off);
  h[off + len - 1] = 0;
}

/**
 * Unpack a ustar archive (also GNU tar's and bsdtar's output for short names). Every header
 * is validated before its data is touched: a header cut short, a bad checksum, a size field
 * that is not octal or runs past the end of the archive, an unsafe name (absolute, `..`), a
 * duplicate name, or a missing end-of-archive marker is an error naming the archive. Entries
 * are sliced from `bytes`, so nothing larger than the archive is ever allocated. Folders and
 * pax/GNU metadata records are skipped; links and devices are refused.
 * @param bytes The whole archive.
 * @param source The archive's name, for messages.
 * @returns The regular files in archive order (a leading `./` is dropped from names).
 * @throws {RangeError} For sizes and offsets that do not fit, bad checksums, unsafe or duplicate names.
 * @throws {TypeError} For a file that is not a ustar archive or an unsupported entry type.
 */
export function unpackTar(bytes: Uint8Array, source = "<archive>"): ArchiveEntry[] {
  const where = `Archive "${source}"`;
  if (!(bytes instanceof Uint8Array)) {
    throw new TypeError(`${where}: expected a Uint8Array, got ${(bytes as object)?.constructor?.name}`);
  }
  const out: ArchiveEntry[] = [];
  const seen = new Set<string>();
  const dec = new TextDecoder("utf-8", { fatal: false });
  let at = 0;
  for (;;) {
    if (at >= bytes.length) {
      throw new RangeError(`${where} is truncated: it ends at byte ${bytes.length} without the end-of-archive marker`);
    }
    if (at + BLOCK > bytes.length) {
      throw new RangeError(
        `${where} is truncated: ${bytes.length - at} bytes at offset ${at} where a 512-byte header was expected`,
      );
    }
    const h = bytes.subarray(at, at + BLOCK);
    if (h.every((b) => b === 0)) break; // end-of-archive marker
    const str = (off: number, len: number) => {
      const f = h.subarray(off, off + len), z = f.indexOf(0);
      return dec.decode(z < 0 ? f : f.subarray(0, z));
    };
    const stored = parseOctal(h.subarray(148, 156));
    let sum = 0, signed = 0;
    for (let i = 0; i < BLOCK; i++) {
      const b = i >= 148 && i < 156 ? 0x20 : h[i];
      sum += b;
      signed += b > 127 ? b - 256 : b; // some old writers summed signed chars
    }
    if (stored === undefined || (stored !== sum && stored !== signed)) {
      throw new RangeError(
        `${where}: header at offset ${at} has a bad checksum (stored ${str(148, 8).trim() || "nothing"}, computed ${
          sum.toString(8)
        }): corrupt or not a tar archive`,
      );
    }
    const magic = str(257, 6);
    if (magic !== "ustar" && magic !== "ustar ") {
      throw new TypeError(`${where}: header at offset ${at} is not ustar (magic ${JSON.stringify(magic)})`);
    }
    const prefix = str(345, 155);
    let name = prefix ? `${prefix}/${str(0, 100)}` : str(0, 100);
    const sizeField = h.subarray(124, 136);
    if (sizeField[0] & 0x80) {
      throw new RangeError(`${where}: entry "${name}" uses a binary size field (over 8 GiB), which is not supported`);
    }
    const size = parseOctal(sizeField);
    if (size === undefined) {
      throw new TypeError(
        `${where}: entry "${name}" has a size field that is not octal: ${JSON.stringify(str(124, 12))}`,
      );
    }
    const start = at + BLOCK;
    if (size > bytes.length - start) {
      throw new RangeError(
        `${where}: entry "${name}" claims ${size} bytes at offset ${start}, past the end of the archive (${
          bytes.length - start
        } bytes remain)`,
      );
    }
    const type = String.fromCharCode(h[156]);
    at = start + padded(size);
    if (type === "5" || type === "x" || type === "g") continue; // folder, pax extended headers
    if (type !== "0" && type !== "\0") {
      throw new TypeError(
        `${where}: entry "${name}" has type ${JSON.stringify(type)}; only regular files and folders are supported`,
      );
    }
    while (name.startsWith("./")) name = name.slice(2);
    try {
      checkPath(name, "entry name");
    } catch (e) {
      throw new RangeError(`${where}: ${(e as Error).message}`);
    }
    if (seen.has(name)) throw new RangeError(`${where}: entry "${name}" appears twice`);
    seen.add(name);
    out.push({ name, bytes: bytes.slice(start, start + size) });
  }
  return out;
}

/** An octal field: optional spaces, digits, then NUL or spaces; undefined when malformed. */
function parseOctal(f: Uint8Array): number | undefined {
  let i = 0, v = 0, digits = 0;
  while (i < f.length && f[i] === 0x20) i++;
  for (; i < f.length && f[i] >= 0x30 && f[i] <= 0x37; i++, digits++) v = v * 8 + (f[i] - 0x30);
  for (; i < f.length; i++) if (f[i] !== 0 && f[i] !== 0x20) return undefined;
  return digits > 0 ? v : undefined;
}

/**
 * Offer bytes to the user as a download (browser page: an anchor with an object URL).
 * @param name Suggested file name.
 * @param type MIME type (default `application/octet-stream`).
 * @throws {Error} Outside a page (a worker has no `document`: post the bytes to the page).
 * @example
 * ```ts ignore
 * downloadBytes("mnist.bundle.tar", await bundleToArchive(storage, "mnist"));
 * ```
 */
export function downloadBytes(name: string, bytes: Uint8Array, type = "application/octet-stream"): void {
  if (typeof document === "undefined") {
    throw new Error(`downloadBytes("${name}") needs a page (document); from a worker, post the bytes to the page`);
  }
  const url = URL.createObjectURL(new Blob([bytes as Uint8Array<ArrayBuffer>], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.style.display = "none";
  document.body.append(a);
  a.click();
  a.remove();
  // The download has started from the URL by now; revoke later so a slow start still finds it.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * Let the user choose a file (a hidden `<input type="file">`) and read it. Call it from a
 * user gesture (a click handler): browsers refuse to open the dialog otherwise.
 * @param options `accept`: the input's filter, e.g. `".tar"`.
 * @returns The file's name and bytes.
 * @throws {DOMException} `AbortError` when the user cancels (browsers that fire the input's
 *   `cancel` event; elsewhere the promise stays pending after a cancel).
 * @throws {Error} Outside a page.
 * @example
 * ```ts ignore
 * button.onclick = async () => {
 *   const { name, bytes } = await pickFile({ accept: ".tar" });
 *   await archiveToBundle(bytes, storage, "mnist", name);
 * };
 * ```
 */
export function pickFile(options: { accept?: string } = {}): Promise<{ name: string; bytes: Uint8Array<ArrayBuffer> }> {
  if (typeof document === "undefined") {
    return Promise.reject(new Error("pickFile needs a page (document) and a user gesture"));
  }
  return new Promise((resolve, reject) => {
    const input = document.createElement("input");
    input.type = "file";
    if (options.accept) input.accept = options.accept;
    input.style.display = "none";
    input.addEventListener("change", () => {
      const file = input.files?.[0];
      input.remove();
      if (!file) return reject(new DOMException("pickFile: no file was chosen", "AbortError"));
      file.arrayBuffer().then((b) => resolve({ name: file.name, bytes: new Uint8Array(b) }), reject);
    }, { once: true });
    input.addEventListener("cancel", () => {
      input.remove();
      reject(new DOMException("pickFile: the file dialog was cancelled", "AbortError"));
    }, { once: true });
    document.body.append(input);
    input.click();
  });
}
