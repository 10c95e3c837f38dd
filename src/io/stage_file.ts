/**
 * A scratch file of fixed-size slots written and read at offsets: the disk stage of the
 * data plane (`diskStage`). In Deno a file in a directory; in a browser a file
 * in the Origin Private File System through a `FileSystemSyncAccessHandle`, which only a
 * worker (where ranks run) can open. Removed when closed: the stage is ephemeral.
 */

/** A writable, readable scratch file. */
export interface StageFile {
  /** Path, for messages. */
  readonly where: string;
  /** Write `bytes` at byte `offset`, growing the file as needed. */
  write(offset: number, bytes: Uint8Array): Promise<void>;
  /** `length` bytes from byte `offset`. */
  read(offset: number, length: number): Promise<Uint8Array<ArrayBuffer>>;
  /** Close and delete the file. */
  remove(): Promise<void>;
}

interface DenoFile {
  seekSync(offset: number, whence: number): number;
  readSync(p: Uint8Array): number | null;
  writeSync(p: Uint8Array): number;
  close(): void;
}
interface DenoFs {
  open(path: string, o: { read: true; write: true; create: true; truncate: true }): Promise<DenoFile>;
  mkdir(path: string, o: { recursive: true }): Promise<void>;
  remove(path: string): Promise<void>;
  SeekMode: { Start: number };
}

/** The part of a `FileSystemSyncAccessHandle` the stage uses. */
interface SyncHandle {
  read(buffer: Uint8Array, options: { at: number }): number;
  write(buffer: Uint8Array, options: { at: number }): number;
  close(): void;
}

/**
 * Create (truncate) the stage file `name` in `dir` (Deno: a directory, created if missing;
 * browser: a folder of the origin's private file system).
 * @throws {Error} When it cannot be created, naming the path and the knob to change.
 */
export async function createStageFile(dir: string, name: string): Promise<StageFile> {
  const deno = (globalThis as { Deno?: DenoFs }).Deno;
  if (deno) return await denoStage(deno, dir, name);
  return await opfsStage(dir, name);
}

async function denoStage(deno: DenoFs, dir: string, name: string): Promise<StageFile> {
  const path = `${dir.replace(/\/$/, "")}/${name}`;
  let file: DenoFile;
  try {
    await deno.mkdir(dir, { recursive: true });
    file = await deno.open(path, { read: true, write: true, create: true, truncate: true });
  } catch (e) {
    throw new Error(`diskStageDir: cannot create the stage file "${path}": ${(e as Error).message}`, { cause: e });
  }
  // Synchronous seek + read/write, as openRangedFile (io/ranged.ts) and for its reason: a
  // record is a few KB and Deno's async file ops each cost a thread-pool hop. One handle,
  // one cursor: sync calls never interleave.
  const settle = <T>(fn: () => T): Promise<T> => {
    try {
      return Promise.resolve(fn());
    } catch (e) {
      return Promise.reject(e);
    }
  };
  let closed = false;
  return {
    where: path,
    write: (offset, bytes) =>
      settle(() => {
        file.seekSync(offset, deno.SeekMode.Start);
        for (let done = 0; done < bytes.length;) done += file.writeSync(bytes.subarray(done));
      }),
    read: (offset, length) =>
      settle(() => {
        file.seekSync(offset, deno.SeekMode.Start);
        const out = new Uint8Array(length);
        for (let got = 0; got < length;) {
          const n = file.readSync(out.subarray(got));
          if (n === null) throw new RangeError(`stage file "${path}": ended at ${offset + got} reading ${length} bytes at ${offset}`);
          got += n;
        }
        return out;
      }),
    async remove() {
      if (!closed) file.close();
      closed = true;
      await deno.remove(path).catch(() => {});
    },
  };
}

async function opfsStage(dir: string, name: string): Promise<StageFile> {
  const where = `the browser's private file system: ${dir}/${name}`;
  const storage = (globalThis as { navigator?: { storage?: { getDirectory?: () => Promise<FileSystemDirectoryHandle> } } })
    .navigator?.storage;
  if (!storage?.getDirectory) throw new Error(`diskStage: no file system to stage to (${where} is unavailable here)`);
  let folder = await storage.getDirectory();
  for (const part of dir.split("/").filter((p) => p !== "" && p !== ".")) {
    folder = await folder.getDirectoryHandle(part, { create: true });
  }
  const handle = await folder.getFileHandle(name, { create: true });
  const open = (handle as unknown as { createSyncAccessHandle?: () => Promise<SyncHandle> }).createSyncAccessHandle;
  if (!open) throw new Error(`diskStage: ${where} needs FileSystemSyncAccessHandle, which only a worker has`);
  const sync = await open.call(handle);
  const parent = folder;
  // NOTE: a sync access handle throws (QuotaExceededError on a full origin quota) instead of
  // returning a short count; both become a rejected promise, which the disk tier turns into
  // a warning and a fall-back to RAM and the source (data/sample_tiers.ts).
  return {
    where,
    write(offset, bytes) {
      let n: number;
      try {
        n = sync.write(bytes, { at: offset });
      } catch (e) {
        return Promise.reject(new Error(`diskStage: writing ${bytes.length} bytes at ${offset} of ${where} failed: ${(e as Error).name}: ${(e as Error).message}`, { cause: e }));
      }
      return n === bytes.length
        ? Promise.resolve()
        // NOTE: Chromium answers a write past the quota with a negative count read as unsigned.
        : Promise.reject(new Error(`diskStage: wrote ${n > bytes.length ? `nothing (${n | 0})` : n} of ${bytes.length} bytes to ${where} (quota full?)`));
    },
    read(offset, length) {
      const out = new Uint8Array(length);
      let n: number;
      try {
        n = sync.read(out, { at: offset });
      } catch (e) {
        return Promise.reject(new Error(`diskStage: reading ${length} bytes at ${offset} of ${where} failed: ${(e as Error).message}`, { cause: e }));
      }
      return n === length
        ? Promise.resolve(out)
        : Promise.reject(new RangeError(`diskStage: read ${n} of ${length} bytes at ${offset} of ${where}`));
    },
    async remove() {
      sync.close();
      await parent.removeEntry(name).catch(() => {});
    },
  };
}
