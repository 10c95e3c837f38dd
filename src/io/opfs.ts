/**
 * FileStore in a browser: the Origin Private File System (OPFS, `navigator.storage.getDirectory()`),
 * in a page or in a worker. And {@link defaultStorage}: the file system under Deno, OPFS in a
 * browser. Spec: https://fs.spec.whatwg.org/ ("origin private file system").
 */
import { bytesOf, checkPath, FsStorage, NotFoundError, type FileStore } from "./storage.ts";

/** What this module uses of a file handle beyond lib.dom: `move` and worker-only sync access. */
interface FileHandle extends FileSystemFileHandle {
  move?(parent: FileSystemDirectoryHandle, name: string): Promise<void>;
  createSyncAccessHandle?(): Promise<SyncAccessHandle>;
}

/** A worker-only synchronous handle (`FileSystemSyncAccessHandle`); writes go in place. */
interface SyncAccessHandle {
  write(data: Uint8Array, options: { at: number }): number;
  truncate(size: number): void;
  getSize(): number;
  flush(): void;
  close(): void;
}

function domError(e: unknown, name: string): boolean {
  return typeof DOMException !== "undefined" && e instanceof DOMException && e.name === name;
}

/**
 * A {@link FileStore} over the browser's Origin Private File System, usable in a page and in a
 * worker. Paths are relative and `/`-separated; parent folders are created on write.
 *
 * **Atomic write**: the bytes go to a temporary file beside the target, which is then moved
 * onto the target (`FileSystemFileHandle.move`, which replaces an existing file in one step in
 * Chromium). Without `move` (older browsers) the bytes are written to the target in place and
 * the temporary file is removed afterwards. NOTE the residual risk of that fallback: a crash
 * during the in-place write can leave a torn target (Chromium and Firefox stage
 * `createWritable` writes in a swap file committed at `close()`, so only a sync-access-handle
 * write is exposed); the complete temporary copy survives such a crash, but nothing restores
 * it automatically.
 *
 * **Append** uses a sync access handle in a worker (an in-place write), else `createWritable`
 * with the existing data kept (the browser copies the file on each append: fine for logs of
 * a few megabytes).
 *
 * Writes and appends to one path through one instance run one after the other, in call
 * order, so callers may fire appends without awaiting each (a sync access handle is
 * exclusive, and two overlapping `createWritable` appends would both start from the same
 * size). Separate instances or tabs writing one file are not coordinated.
 *
 * @example
 * ```ts ignore
 * const storage = new OpfsStorage("runs");
 * await storage.write("mnist/log.jsonl", '{"epoch":0}\n');
 * const text = new TextDecoder().decode(await storage.read("mnist/log.jsonl"));
 * ```
 */
export class OpfsStorage implements FileStore {
  readonly kind = "opfs" as const;
  readonly where: string;
  #base: string[];
  #rootDir?: Promise<FileSystemDirectoryHandle>;
  /** The last queued write or append per path (see the class notes). */
  #queue = new Map<string, Promise<unknown>>();

  /**
   * Files in the origin's private file system, under `root`.
   * @param root Folder inside the private file system that all paths are relative to
   *   (default: its top). A relative path, created on first write.
   * @throws {Error} When this runtime has no OPFS (`navigator.storage.getDirectory`).
   * @throws {RangeError} When `root` is absolute or has `.`/`..` parts.
   */
  constructor(readonly root = "") {
    if (!OpfsStorage.isAvailable()) {
      throw new Error(
        "OpfsStorage needs the browser's Origin Private File System (navigator.storage.getDirectory), " +
          "which this runtime lacks; under Deno use FsStorage, elsewhere MemoryStorage",
      );
    }
    this.#base = root === "" ? [] : checkPath(root, "OpfsStorage root");
    this.where = root === ""
      ? "the browser's private file system"
      : `the browser's private file system, folder "${this.#base.join("/")}"`;
  }

  /** True when this runtime offers OPFS (a secure browser page or worker). */
  static isAvailable(): boolean {
    const storage = (globalThis as { navigator?: { storage?: { getDirectory?: unknown } } }).navigator?.storage;
    return typeof storage?.getDirectory === "function";
  }

  /** The folder holding `parts` (all but the file name), created when `create`. */
  async #dir(parts: string[], create: boolean): Promise<FileSystemDirectoryHandle> {
    this.#rootDir ??= navigator.storage.getDirectory();
    let dir = await this.#rootDir;
    for (const p of [...this.#base, ...parts]) dir = await dir.getDirectoryHandle(p, { create });
    return dir;
  }

  /** The folder and file name of `path`; a missing folder is NotFoundError unless `create`. */
  async #locate(path: string, create: boolean): Promise<{ dir: FileSystemDirectoryHandle; name: string }> {
    const parts = checkPath(path);
    const dir = await this.#guard(path, () => this.#dir(parts.slice(0, -1), create));
    return { dir, name: parts[parts.length - 1] };
  }

  /** Run `fn`, turning a DOM NotFoundError into ours and other DOM errors into messages naming the path. */
  async #guard<T>(path: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (domError(e, "NotFoundError")) throw new NotFoundError(path, this.where);
      if (typeof DOMException !== "undefined" && e instanceof DOMException) {
        throw new Error(`OpfsStorage: "${path}" in ${this.where} failed: ${e.name}: ${e.message}`, { cause: e });
      }
      throw e;
    }
  }

  /** Run `fn` after every earlier write or append to `path` through this instance has settled. */
  #serial<T>(path: string, fn: () => Promise<T>): Promise<T> {
    const key = checkPath(path).join("/");
    const prev = this.#queue.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const settled = run.catch(() => {});
    this.#queue.set(key, settled);
    settled.then(() => {
      if (this.#queue.get(key) === settled) this.#queue.delete(key);
    });
    return run;
  }

  async read(path: string): Promise<Uint8Array<ArrayBuffer>> {
    const { dir, name } = await this.#locate(path, false);
    return this.#guard(path, async () => {
      const file = await (await dir.getFileHandle(name)).getFile();
      return new Uint8Array(await file.arrayBuffer());
    });
  }

  write(path: string, data: Uint8Array | string): Promise<void> {
    const bytes = bytesOf(data);
    return this.#serial(path, () => this.#write(path, bytes));
  }

  async #write(path: string, bytes: Uint8Array<ArrayBuffer>): Promise<void> {
    const { dir, name } = await this.#locate(path, true);
    const tmpName = `${name}.tmp-${crypto.randomUUID().slice(0, 8)}`;
    await this.#guard(path, async () => {
      const tmp = await dir.getFileHandle(tmpName, { create: true }) as FileHandle;
      try {
        await writeWhole(tmp, bytes);
        if (typeof tmp.move === "function") {
          await tmp.move(dir, name);
        } else {
          await writeWhole(await dir.getFileHandle(name, { create: true }) as FileHandle, bytes);
          await dir.removeEntry(tmpName);
        }
      } catch (e) {
        await dir.removeEntry(tmpName).catch(() => {});
        throw e;
      }
    });
  }

  append(path: string, data: Uint8Array | string): Promise<void> {
    const bytes = bytesOf(data);
    return this.#serial(path, () => this.#append(path, bytes));
  }

  async #append(path: string, bytes: Uint8Array<ArrayBuffer>): Promise<void> {
    const { dir, name } = await this.#locate(path, true);
    await this.#guard(path, async () => {
      const h = await dir.getFileHandle(name, { create: true }) as FileHandle;
      if (typeof h.createSyncAccessHandle === "function") {
        const s = await h.createSyncAccessHandle();
        try {
          writeAt(s, bytes, s.getSize());
          s.flush();
        } finally {
          s.close();
        }
        return;
      }
      const w = await h.createWritable({ keepExistingData: true });
      try {
        await w.write({ type: "write", position: (await h.getFile()).size, data: bytes });
        await w.close();
      } catch (e) {
        await w.abort().catch(() => {});
        throw e;
      }
    });
  }

  async size(path: string): Promise<number | undefined> {
    try {
      const { dir, name } = await this.#locate(path, false);
      return await this.#guard(path, async () => (await (await dir.getFileHandle(name)).getFile()).size);
    } catch (e) {
      if (e instanceof NotFoundError) return undefined;
      throw e;
    }
  }

  async rename(from: string, to: string): Promise<void> {
    const src = await this.#locate(from, false);
    const h = await this.#guard(from, () => src.dir.getFileHandle(src.name)) as FileHandle;
    if (checkPath(from).join("/") === checkPath(to).join("/")) return;
    const dst = await this.#locate(to, true);
    if (typeof h.move === "function") {
      await this.#guard(to, () => h.move!(dst.dir, dst.name));
    } else {
      await this.write(to, await this.read(from));
      await this.#guard(from, () => src.dir.removeEntry(src.name));
    }
  }

  async remove(path: string): Promise<void> {
    try {
      const { dir, name } = await this.#locate(path, false);
      await this.#guard(path, () => dir.removeEntry(name));
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e;
    }
  }
}

/** Replace a file's contents: `createWritable` (page or worker), else a sync access handle (worker). */
async function writeWhole(h: FileHandle, bytes: Uint8Array<ArrayBuffer>): Promise<void> {
  if (typeof h.createWritable === "function") {
    const w = await h.createWritable({ keepExistingData: false });
    try {
      await w.write(bytes);
      await w.close();
    } catch (e) {
      await w.abort().catch(() => {});
      throw e;
    }
    return;
  }
  if (typeof h.createSyncAccessHandle === "function") {
    const s = await h.createSyncAccessHandle();
    try {
      s.truncate(0);
      writeAt(s, bytes, 0);
      s.flush();
    } finally {
      s.close();
    }
    return;
  }
  throw new Error(
    "OpfsStorage: this browser can write private files neither with createWritable nor with " +
      "createSyncAccessHandle (use OpfsStorage in a worker there)",
  );
}

function writeAt(s: SyncAccessHandle, bytes: Uint8Array, at: number): void {
  let done = 0;
  while (done < bytes.length) {
    const n = s.write(bytes.subarray(done), { at: at + done });
    if (n <= 0) throw new Error(`OpfsStorage: a write stopped after ${done} of ${bytes.length} bytes`);
    done += n;
  }
}

/**
 * The storage of this runtime: {@link FsStorage} under Deno, {@link OpfsStorage} in a browser.
 * @param root Under Deno a folder of the file system (default: the current directory); in a
 *   browser a folder inside the private file system (default: its top).
 * @throws {Error} When the runtime has neither (pass a `MemoryStorage` explicitly there).
 * @example
 * ```ts
 * import { defaultStorage } from "./opfs.ts";
 * const storage = defaultStorage(); // FsStorage under Deno
 * if (storage.kind !== "fs" && storage.kind !== "opfs") throw new Error("unexpected storage");
 * ```
 */
export function defaultStorage(root?: string): FileStore {
  if (typeof (globalThis as { Deno?: { readFile?: unknown } }).Deno?.readFile === "function") {
    return new FsStorage(root ?? ".");
  }
  if (OpfsStorage.isAvailable()) return new OpfsStorage(root ?? "");
  throw new Error(
    "defaultStorage: this runtime has no file storage: neither Deno's file system nor the browser's " +
      "Origin Private File System (navigator.storage.getDirectory); pass a storage explicitly (e.g. MemoryStorage)",
  );
}

/**
 * Where a user-given path lives. With `storage`, the path as is. Without: under Deno the
 * path's folder (absolute, or relative with `..`) becomes an {@link FsStorage} root and the
 * file name the path; in a browser the path is relative to the private file system's top.
 * @example
 * ```ts
 * import { resolveStorage } from "./opfs.ts";
 * const { storage, path } = resolveStorage("/tmp/run/mnist.fdl");
 * if (path !== "mnist.fdl" || storage.where !== "/tmp/run") throw new Error("split at the last slash");
 * ```
 */
export function resolveStorage(path: string, storage?: FileStore): { storage: FileStore; path: string } {
  if (storage) return { storage, path };
  if (typeof path !== "string") throw new TypeError(`path must be a string, got ${typeof path}`);
  if (typeof (globalThis as { Deno?: { readFile?: unknown } }).Deno?.readFile === "function") {
    const i = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
    if (i < 0) return { storage: new FsStorage("."), path };
    return { storage: new FsStorage(path.slice(0, i) || "/"), path: path.slice(i + 1) };
  }
  return { storage: defaultStorage(), path };
}
