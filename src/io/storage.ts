/**
 * Where files go: the file system under Deno, the Origin Private File System in a
 * browser, memory in tests. Paths are relative, `/`-separated; parent folders are
 * created on write. `write` is atomic (a temporary name, then a rename), so a crash
 * mid-write never leaves a torn file under the final name.
 */

/** Thrown when a path does not exist. */
export class NotFoundError extends Error {
  override name = "NotFoundError";
  constructor(readonly path: string, where: string) {
    super(`No file "${path}" in ${where}`);
  }
}

/** A small file store. */
export interface FileStore {
  /** "fs" (Deno), "opfs" (browser) or "memory". */
  readonly kind: "fs" | "opfs" | "memory";
  /** Human-readable location, for messages ("/work/runs", "the browser's private file system"). */
  readonly where: string;
  /** Whole file. @throws {NotFoundError} */
  read(path: string): Promise<Uint8Array<ArrayBuffer>>;
  /** Replace a file atomically (temp name + rename). */
  write(path: string, data: Uint8Array | string): Promise<void>;
  /** Append to a file (created if missing). */
  append(path: string, data: Uint8Array | string): Promise<void>;
  /** Byte size, or undefined when missing. */
  size(path: string): Promise<number | undefined>;
  /** Move a file, replacing the target. */
  rename(from: string, to: string): Promise<void>;
  /** Delete a file; no error when missing. */
  remove(path: string): Promise<void>;
}

const enc = new TextEncoder();
/** Bytes of a string or bytes. */
export function bytesOf(data: Uint8Array | string): Uint8Array<ArrayBuffer> {
  return typeof data === "string" ? enc.encode(data) : data as Uint8Array<ArrayBuffer>;
}

/**
 * Refuse paths that could escape the store: empty, absolute, or with `.`/`..`/empty parts.
 * @throws {RangeError} Naming the path and the bad part.
 */
export function checkPath(path: string, what = "path"): string[] {
  if (typeof path !== "string" || path.length === 0) throw new RangeError(`${what} must be a non-empty relative path, got ${JSON.stringify(path)}`);
  if (path.startsWith("/") || /^[a-zA-Z]:[\\/]/.test(path)) throw new RangeError(`${what} must be relative, got absolute "${path}"`);
  const parts = path.split(/[\\/]/);
  const bad = parts.find((p) => p === "" || p === "." || p === "..");
  if (bad !== undefined) throw new RangeError(`${what} "${path}" has an unsafe part ${JSON.stringify(bad)}`);
  return parts;
}

/** In-memory storage (tests, and browsers without OPFS). */
export class MemoryStorage implements FileStore {
  readonly kind = "memory" as const;
  readonly where = "memory";
  /** The files by relative path: what was written, as written. */
  readonly files = new Map<string, Uint8Array<ArrayBuffer>>();
  read(path: string): Promise<Uint8Array<ArrayBuffer>> {
    checkPath(path);
    const f = this.files.get(path);
    return f ? Promise.resolve(f.slice()) : Promise.reject(new NotFoundError(path, this.where));
  }
  write(path: string, data: Uint8Array | string): Promise<void> {
    checkPath(path);
    this.files.set(path, bytesOf(data).slice());
    return Promise.resolve();
  }
  append(path: string, data: Uint8Array | string): Promise<void> {
    checkPath(path);
    const old = this.files.get(path) ?? new Uint8Array(0);
    const add = bytesOf(data);
    const out = new Uint8Array(old.length + add.length);
    out.set(old);
    out.set(add, old.length);
    this.files.set(path, out);
    return Promise.resolve();
  }
  size(path: string): Promise<number | undefined> {
    checkPath(path);
    return Promise.resolve(this.files.get(path)?.length);
  }
  rename(from: string, to: string): Promise<void> {
    checkPath(from);
    checkPath(to);
    const f = this.files.get(from);
    if (!f) return Promise.reject(new NotFoundError(from, this.where));
    this.files.delete(from);
    this.files.set(to, f);
    return Promise.resolve();
  }
  remove(path: string): Promise<void> {
    checkPath(path);
    this.files.delete(path);
    return Promise.resolve();
  }
}

interface DenoFsApi {
  readFile(p: string): Promise<Uint8Array<ArrayBuffer>>;
  writeFile(p: string, d: Uint8Array, o?: { append?: boolean }): Promise<void>;
  rename(a: string, b: string): Promise<void>;
  remove(p: string): Promise<void>;
  stat(p: string): Promise<{ size: number }>;
  mkdir(p: string, o: { recursive: boolean }): Promise<void>;
  cwd(): string;
  errors: { NotFound: new (...a: never[]) => Error };
}

/** Deno's file system under a root folder (default: the current directory). */
export class FsStorage implements FileStore {
  readonly kind = "fs" as const;
  readonly where: string;
  #deno: DenoFsApi;
  /** Files under `root` (relative to the current directory, or absolute); created on first write. */
  constructor(readonly root = ".") {
    const deno = (globalThis as { Deno?: DenoFsApi }).Deno;
    if (!deno) throw new Error("FsStorage needs Deno's file system; in a browser use OpfsStorage");
    this.#deno = deno;
    this.where = root === "." ? deno.cwd() : root;
  }
  #full(path: string): string {
    checkPath(path);
    return this.root === "." ? path : `${this.root.replace(/\/$/, "")}/${path}`;
  }
  async #parent(full: string): Promise<void> {
    const i = full.lastIndexOf("/");
    if (i > 0) await this.#deno.mkdir(full.slice(0, i), { recursive: true });
  }
  async read(path: string): Promise<Uint8Array<ArrayBuffer>> {
    try {
      return await this.#deno.readFile(this.#full(path));
    } catch (e) {
      if (e instanceof this.#deno.errors.NotFound) throw new NotFoundError(path, this.where);
      throw e;
    }
  }
  async write(path: string, data: Uint8Array | string): Promise<void> {
    const full = this.#full(path);
    await this.#parent(full);
    const tmp = `${full}.tmp-${crypto.randomUUID().slice(0, 8)}`;
    await this.#deno.writeFile(tmp, bytesOf(data));
    await this.#deno.rename(tmp, full);
  }
  async append(path: string, data: Uint8Array | string): Promise<void> {
    const full = this.#full(path);
    await this.#parent(full);
    await this.#deno.writeFile(full, bytesOf(data), { append: true });
  }
  async size(path: string): Promise<number | undefined> {
    try {
      return (await this.#deno.stat(this.#full(path))).size;
    } catch (e) {
      if (e instanceof this.#deno.errors.NotFound) return undefined;
      throw e;
    }
  }
  async rename(from: string, to: string): Promise<void> {
    const a = this.#full(from), b = this.#full(to);
    await this.#parent(b);
    try {
      await this.#deno.rename(a, b);
    } catch (e) {
      if (e instanceof this.#deno.errors.NotFound) throw new NotFoundError(from, this.where);
      throw e;
    }
  }
  async remove(path: string): Promise<void> {
    try {
      await this.#deno.remove(this.#full(path));
    } catch (e) {
      if (!(e instanceof this.#deno.errors.NotFound)) throw e;
    }
  }
}
