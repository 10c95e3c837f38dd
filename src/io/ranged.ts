/**
 * Random access to a file that may be larger than memory: byte ranges from a local file
 * (Deno), from an HTTP server that honours `Range` requests (browsers, or a tab on another
 * machine reading what the coordinator serves), or from bytes already in memory (tests).
 * The streaming datasets (data/pack_source.ts) read samples through this one interface.
 */

/** A readable file of known size. */
export interface RangedFile {
  /** Path or URL, for messages. */
  readonly where: string;
  /** Total bytes. */
  readonly size: number;
  /**
   * Exactly `length` bytes from `offset`.
   * @throws {RangeError} When the range runs past the end of the file.
   */
  read(offset: number, length: number): Promise<Uint8Array<ArrayBuffer>>;
  /** Release the handle (a no-op where there is none). */
  close(): void;
}

function checkRange(f: { where: string; size: number }, offset: number, length: number): void {
  if (!Number.isInteger(offset) || !Number.isInteger(length) || offset < 0 || length < 0 || offset + length > f.size) {
    throw new RangeError(`${f.where}: cannot read ${length} bytes at offset ${offset} of a ${f.size}-byte file`);
  }
}

/** Bytes in memory as a {@link RangedFile}. */
export function rangedBytes(bytes: Uint8Array, where = "<bytes>"): RangedFile {
  return {
    where,
    size: bytes.length,
    read(offset, length) {
      checkRange({ where, size: bytes.length }, offset, length);
      return Promise.resolve(bytes.slice(offset, offset + length));
    },
    close() {},
  };
}

/** The Deno calls a local file needs (typed here so browser type-checks need no Deno types). */
interface DenoFile {
  seekSync(offset: number, whence: number): number;
  readSync(p: Uint8Array): number | null;
  close(): void;
}
interface DenoOpen {
  open(path: string | URL, options: { read: true }): Promise<DenoFile>;
  stat(path: string | URL): Promise<{ size: number }>;
  SeekMode: { Start: number };
}

/**
 * A local file (Deno). Reads are synchronous seek + read pairs: a sample is a few KB from
 * the page cache, and Deno's async file ops each hop through a thread pool, which costs
 * 7–25× more than the read itself (bench/README.md "Data plane"). Sync also means no two
 * callers ever interleave their seeks on the one handle.
 * @throws {Error} When the file cannot be opened, naming it.
 */
export async function openRangedFile(path: string | URL): Promise<RangedFile> {
  const deno = (globalThis as { Deno?: DenoOpen }).Deno;
  const where = path instanceof URL ? decodeURIComponent(path.pathname) : path;
  if (!deno) throw new Error(`Cannot open "${where}": local files need Deno; in a browser serve the file and use openRangedUrl`);
  let file: DenoFile, size: number;
  try {
    size = (await deno.stat(path)).size;
    file = await deno.open(path, { read: true });
  } catch (e) {
    throw new Error(`Cannot open "${where}": ${(e as Error).message}`, { cause: e });
  }
  return {
    where,
    size,
    read(offset, length) {
      try {
        checkRange({ where, size }, offset, length);
        file.seekSync(offset, deno.SeekMode.Start);
        const out = new Uint8Array(length);
        for (let got = 0; got < length;) {
          const n = file.readSync(out.subarray(got));
          if (n === null) throw new RangeError(`${where}: the file ended at ${offset + got} while reading ${length} bytes at ${offset}`);
          got += n;
        }
        return Promise.resolve(out);
      } catch (e) {
        return Promise.reject(e);
      }
    },
    close() {
      file.close();
    },
  };
}

/** Attempts per range request: a dropped connection (fetch's TypeError) is retried, an HTTP answer is not. */
export const RANGE_ATTEMPTS = 4;

/**
 * A file served over HTTP, read with `Range` requests (Vite's dev server, a static server,
 * the coordinator's). The size comes from a HEAD request.
 *
 * NOTE: range reads bypass the browser's HTTP cache (`cache: "no-store"`): random ranges of
 * one URL gain nothing from it (the RAM cache and disk stage keep samples), and Chromium's
 * cache, revalidating many concurrent partial requests of one entry, failed some of them
 * ("Failed to fetch"). Each answer must be a 206 whose `Content-Range` starts at the offset
 * asked for and has the length asked for; a connection dropped under load is retried
 * ({@link RANGE_ATTEMPTS} tries).
 * @throws {Error} When the server does not answer, gives no length, or ignores ranges (naming the URL).
 */
export async function openRangedUrl(url: string | URL): Promise<RangedFile> {
  const href = new URL(String(url), globalThis.location?.href ?? import.meta.url).href;
  let head: Response;
  try {
    head = await fetch(href, { method: "HEAD", cache: "no-store" });
  } catch (e) {
    throw new Error(`Cannot reach "${href}": ${(e as Error).message}`, { cause: e });
  }
  if (!head.ok) throw new Error(`Cannot open "${href}": HTTP ${head.status}`);
  const size = Number(head.headers.get("content-length"));
  if (!Number.isInteger(size) || size < 0) throw new Error(`Cannot open "${href}": the server sent no Content-Length`);
  const fetchRange = async (range: string): Promise<Response> => {
    for (let attempt = 1;; attempt++) {
      try {
        return await fetch(href, { headers: { Range: range }, cache: "no-store" });
      } catch (e) {
        if (attempt >= RANGE_ATTEMPTS) {
          throw new Error(`"${href}": ${range} failed ${attempt} times: ${(e as Error).message}`, { cause: e });
        }
        await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
      }
    }
  };
  return {
    where: href,
    size,
    async read(offset, length) {
      checkRange({ where: href, size }, offset, length);
      if (length === 0) return new Uint8Array(0);
      const last = offset + length - 1;
      const res = await fetchRange(`bytes=${offset}-${last}`);
      if (res.status !== 206) {
        await res.body?.cancel();
        throw new Error(`"${href}": asked for bytes ${offset}-${last}, the server answered HTTP ${res.status} (it must support Range requests)`);
      }
      const range = res.headers.get("content-range");
      const m = range ? /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(range.trim()) : null;
      if (range !== null && (!m || Number(m[1]) !== offset || Number(m[2]) !== last)) {
        await res.body?.cancel();
        throw new Error(`"${href}": asked for bytes ${offset}-${last}, the server sent Content-Range "${range}"`);
      }
      const bytes = new Uint8Array(await res.arrayBuffer());
      if (bytes.length !== length) throw new Error(`"${href}": asked for ${length} bytes at ${offset}, got ${bytes.length}`);
      return bytes;
    },
    close() {},
  };
}
