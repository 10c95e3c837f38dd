/**
 * Browser checks of io/opfs.ts, io/archive.ts and distributed/coordinator/persistence/bundle.ts, driven by
 * storage.spec.ts. The same module runs as the page (checks, plus the download and upload
 * buttons) and as a module worker it starts (checks again: workers write through sync
 * access handles). Results land in `window.__storage` = { done, results: [{ where, name, ok, error }] }.
 */
import {
  archiveToBundle,
  type BundleParts,
  bundleToArchive,
  readBundle,
  writeBundle,
} from "../../src/distributed/coordinator/persistence/bundle.ts";
import { downloadBytes, NotFoundError, OpfsStorage, packTar, pickFile, unpackTar } from "../../src/io/mod.ts";

interface Result {
  where: string;
  name: string;
  ok: boolean;
  error?: string;
}

const enc = new TextEncoder(), dec = new TextDecoder();
const inPage = typeof document !== "undefined";
const where = inPage ? "page" : "worker";

class Failed extends Error {}
function check(cond: unknown, msg: string): asserts cond {
  if (!cond) throw new Failed(msg);
}
function eq(got: unknown, want: unknown, label: string): void {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  check(g === w, `${label}: got ${g}, want ${w}`);
}
async function rejects(
  fn: () => Promise<unknown>,
  cls: abstract new (...a: never[]) => Error,
  fragment: string,
): Promise<void> {
  try {
    await fn();
  } catch (e) {
    check(e instanceof cls, `expected ${cls.name}, got ${(e as Error)?.name}: ${(e as Error)?.message}`);
    check((e as Error).message.includes(fragment), `message ${JSON.stringify((e as Error).message)} lacks ${fragment}`);
    return;
  }
  throw new Failed(`expected a rejection with ${cls.name}`);
}
function bits(a: Float32Array): number[] {
  return [...new Uint32Array(a.buffer, a.byteOffset, a.length)];
}
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Seeded values without Math.random, so the page and the spec agree. */
function values(n: number, seed: number): Float32Array<ArrayBuffer> {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 2 ** 32 - 0.5) * 8;
  }
  return out;
}

function parts(): BundleParts {
  return {
    model: {
      params: [
        { name: "fc.weight", shape: [7, 33], data: values(231, 1) },
        { name: "fc.bias", shape: [7], data: new Float32Array([NaN, -0, Infinity, -Infinity, 1e-45, 3, 7]) },
      ],
      buffers: [{ name: "bn.running_mean", shape: [7], data: values(7, 2) }],
    },
    optim: {
      tensors: { "0.exp_avg": values(231, 3), "1.exp_avg": values(7, 4) },
      shapes: { "0.exp_avg": [7, 33], "1.exp_avg": [7] },
      scalars: { "0.step": 9, "1.step": 9, "param_groups.0.lr": 0.1 + 0.2 },
    },
    outer: values(238, 5),
    meta: {
      epoch: 2,
      global_step: 99,
      sync_round: 11,
      world_size_at_save: 2,
      save_reason: "checkpoint",
      seed: 7,
      batch_size: 16,
      elche_state: {
        anchor: 5,
        anchor_rank: 1,
        smoothed_ms_per_batch: [3.25, 1 / 3],
        phase: "warmup",
        calibration_count: 2,
      },
      coverage: {
        seed: 7,
        epoch_splits: 1,
        batch_size: 16,
        per_epoch: [{ epoch: 2, total_samples: 64, uncovered_ranges: [[16, 48]] }],
      },
    },
  };
}

/** Every file under a folder of the private file system, relative paths, sorted. */
async function listFiles(root: string): Promise<string[]> {
  let dir = await navigator.storage.getDirectory();
  for (const p of root.split("/")) dir = await dir.getDirectoryHandle(p);
  const out: string[] = [];
  const walk = async (d: FileSystemDirectoryHandle, rel: string) => {
    for await (const [name, h] of (d as unknown as AsyncIterable<[string, FileSystemHandle]>)) {
      if (h.kind === "directory") await walk(h as FileSystemDirectoryHandle, `${rel}${name}/`);
      else out.push(`${rel}${name}`);
    }
  };
  await walk(dir, "");
  return out.sort();
}

async function removeRoot(root: string): Promise<void> {
  await (await navigator.storage.getDirectory()).removeEntry(root, { recursive: true }).catch(() => {});
}

/** Temporarily replace a property on the prototype that owns it. */
function patch(objs: object[], key: string, value: unknown): () => void {
  const owner = objs.find((o) => Object.getOwnPropertyDescriptor(o, key));
  if (!owner) throw new Failed(`no ${key} to patch`);
  const desc = Object.getOwnPropertyDescriptor(owner, key)!;
  Object.defineProperty(owner, key, { ...desc, value });
  return () => Object.defineProperty(owner, key, desc);
}

const checks: [string, (root: string) => Promise<void>][] = [
  ["write, read, append, size, rename, remove", async (root) => {
    const s = new OpfsStorage(root);
    await s.write("a/b/c.txt", "hello");
    eq(dec.decode(await s.read("a/b/c.txt")), "hello", "read");
    await s.append("a/b/c.txt", " world");
    await s.append("a/b/c.txt", enc.encode("!"));
    await s.append("log/new.jsonl", "{}\n"); // append creates the file and its folder
    eq(dec.decode(await s.read("a/b/c.txt")), "hello world!", "appended");
    eq(await s.size("a/b/c.txt"), 12, "size");
    eq(await s.size("a/b/none.txt"), undefined, "size of a missing file");
    eq(await s.size("nowhere/x"), undefined, "size in a missing folder");
    await s.rename("a/b/c.txt", "d/e.txt");
    eq(dec.decode(await s.read("d/e.txt")), "hello world!", "renamed");
    eq(await s.size("a/b/c.txt"), undefined, "old name gone");
    await s.write("d/other.txt", "x");
    await s.rename("d/other.txt", "d/e.txt"); // replaces the target
    eq(dec.decode(await s.read("d/e.txt")), "x", "rename replaces");
    await rejects(() => s.read("d/other.txt"), NotFoundError, `"d/other.txt"`);
    await rejects(() => s.rename("d/other.txt", "z"), NotFoundError, `"d/other.txt"`);
    await s.remove("d/e.txt");
    await s.remove("d/e.txt"); // missing: no error
    await s.remove("no/such/folder.txt");
    eq(await listFiles(root), ["log/new.jsonl"], "files left");
    let many = "";
    for (let i = 0; i < 50; i++) {
      await s.append("log/new.jsonl", `${i}\n`);
      many += `${i}\n`;
    }
    eq(dec.decode(await s.read("log/new.jsonl")), `{}\n${many}`, "50 appends");
    // Appends fired without awaiting each other land whole and in call order.
    const fired = Array.from({ length: 20 }, (_, i) => s.append("log/burst.jsonl", `line ${i}\n`));
    await Promise.all(fired);
    eq(
      dec.decode(await s.read("log/burst.jsonl")),
      Array.from({ length: 20 }, (_, i) => `line ${i}\n`).join(""),
      "burst",
    );
    await s.remove("log/burst.jsonl");
    await rejects(() => s.write("../x", "y"), RangeError, `".."`);
  }],
  ["atomic write: temp then move, no leftovers, a failed write keeps the old file", async (root) => {
    const s = new OpfsStorage(root);
    const big = values(4099, 9);
    await s.write("f.bin", new Uint8Array(big.buffer));
    await s.write("f.bin", "short"); // a shorter file leaves no tail of the longer one
    eq(dec.decode(await s.read("f.bin")), "short", "replaced");
    eq(await listFiles(root), ["f.bin"], "no temp file left");
    // The temp file's writer fails at close (a crash before commit): the target is untouched.
    const restore = patch(
      [FileSystemWritableFileStream.prototype, WritableStream.prototype],
      "close",
      () => Promise.reject(new DOMException("injected", "AbortError")),
    );
    try {
      await rejects(() => s.write("f.bin", "new content"), Error, "injected");
    } finally {
      restore();
    }
    eq(dec.decode(await s.read("f.bin")), "short", "old content kept");
    eq(await listFiles(root), ["f.bin"], "failed temp removed");
    // Without FileSystemHandle.move (older browsers): the documented fallback.
    const unmove = patch([FileSystemFileHandle.prototype, FileSystemHandle.prototype], "move", undefined);
    try {
      await s.write("f.bin", "fallback");
      await s.rename("f.bin", "g/moved.bin");
    } finally {
      unmove();
    }
    eq(dec.decode(await s.read("g/moved.bin")), "fallback", "fallback write and rename");
    eq(await listFiles(root), ["g/moved.bin"], "fallback leaves no temp");
    // In a worker, without createWritable (Safari before 26): writes go through sync access handles.
    if ("createSyncAccessHandle" in FileSystemFileHandle.prototype) {
      const unwritable = patch([FileSystemFileHandle.prototype], "createWritable", undefined);
      try {
        await s.write("g/moved.bin", "sync");
        await s.write("h.bin", "sync handle");
        await s.append("h.bin", "!");
      } finally {
        unwritable();
      }
      eq(dec.decode(await s.read("g/moved.bin")), "sync", "sync-handle write replaces");
      eq(dec.decode(await s.read("h.bin")), "sync handle!", "sync-handle write and append");
      eq(await listFiles(root), ["g/moved.bin", "h.bin"], "no temp left");
    }
  }],
  ["a bundle written to OPFS reads back bit-identical", async (root) => {
    const s = new OpfsStorage(root);
    const p = parts();
    await writeBundle(s, "runs/mnist", p);
    eq(await listFiles(root), [
      "runs/mnist.fdl",
      "runs/mnist.meta.json",
      "runs/mnist.optim",
      "runs/mnist.outer.fdl",
    ], "files");
    const b = await readBundle(s, "runs/mnist");
    eq(b.meta, { schema_version: 5, ...p.meta }, "meta");
    p.model.params.forEach((t, i) => eq(bits(b.model.params[i].data), bits(t.data), `param ${i}`));
    eq(b.model.params.map((t) => [t.name, t.shape]), p.model.params.map((t) => [t.name, t.shape]), "names, shapes");
    eq(bits(b.model.buffers[0].data), bits(p.model.buffers[0].data), "buffer");
    for (const k of Object.keys(p.optim!.tensors)) {
      eq(bits(b.optim!.tensors[k]), bits(p.optim!.tensors[k]), `optim ${k}`);
    }
    eq(b.optim!.scalars, p.optim!.scalars, "scalars");
    eq(bits(b.outer!.flat), bits(p.outer!), "outer");
  }],
  ["archive round trip: tar, and a bundle through an archive", async (root) => {
    const files = [{ name: "a.txt", bytes: enc.encode("alpha") }, {
      name: "d/b.bin",
      bytes: new Uint8Array(values(33, 6).buffer),
    }];
    const back = unpackTar(packTar(files), "t.tar");
    eq(back.map((e) => e.name), ["a.txt", "d/b.bin"], "names");
    back.forEach((e, i) => check(sameBytes(e.bytes, files[i].bytes), `bytes of ${e.name}`));
    const s = new OpfsStorage(root);
    await writeBundle(s, "src/run", parts());
    const tar = await bundleToArchive(s, "src/run");
    await archiveToBundle(tar, s, "dst/copy", "run.tar");
    for (const suffix of [".fdl", ".optim", ".outer.fdl", ".meta.json"]) {
      check(sameBytes(await s.read(`dst/copy${suffix}`), await s.read(`src/run${suffix}`)), `${suffix} restored`);
    }
    await rejects(() => archiveToBundle(tar.subarray(0, 700), s, "dst/copy", "cut.tar"), RangeError, `"cut.tar"`);
  }],
];

async function suite(): Promise<Result[]> {
  const results: Result[] = [];
  for (const [name, fn] of checks) {
    const root = `storage-test-${where}-${crypto.randomUUID().slice(0, 8)}`;
    try {
      await fn(root);
      results.push({ where, name, ok: true });
    } catch (e) {
      results.push({ where, name, ok: false, error: String((e as Error)?.stack ?? e) });
    } finally {
      await removeRoot(root);
    }
  }
  return results;
}

interface PageState {
  done: boolean;
  results: Result[];
  /** Base64 of the archive the download button offered. */
  download?: string;
  /** Outcome of the upload button. */
  upload?: { ok: boolean; error?: string; name?: string };
}

function toBase64(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return btoa(s);
}

async function page(): Promise<void> {
  const state: PageState = { done: false, results: [] };
  (globalThis as unknown as { __storage: PageState }).__storage = state;
  const log = document.getElementById("log")!;
  const show =
    () => (log.textContent = state.results.map((r) => `${r.ok ? "ok  " : "FAIL"} [${r.where}] ${r.name}`).join("\n"));
  state.results.push(...await suite());
  show();
  const worker = new Worker(new URL("./storage.ts", import.meta.url), { type: "module" });
  const fromWorker = await new Promise<Result[]>((resolve) => {
    worker.onmessage = (e) => resolve(e.data as Result[]);
    worker.onerror = (e) => resolve([{ where: "worker", name: "load", ok: false, error: e.message }]);
  });
  worker.terminate();
  state.results.push(...fromWorker);
  show();

  const root = "storage-test-buttons";
  await removeRoot(root);
  const s = new OpfsStorage(root);
  document.getElementById("download")!.addEventListener("click", async () => {
    await writeBundle(s, "runs/mnist", parts());
    const tar = await bundleToArchive(s, "runs/mnist", { mtime: 0 });
    state.download = toBase64(tar);
    downloadBytes("mnist.tar", tar, "application/x-tar");
  });
  document.getElementById("upload")!.addEventListener("click", async () => {
    try {
      const { name, bytes } = await pickFile({ accept: ".tar" });
      await archiveToBundle(bytes, s, "uploaded/run", name);
      const b = await readBundle(s, "uploaded/run"), p = parts();
      eq(b.meta, { schema_version: 5, ...p.meta }, "uploaded meta");
      p.model.params.forEach((t, i) => eq(bits(b.model.params[i].data), bits(t.data), `uploaded param ${i}`));
      eq(bits(b.outer!.flat), bits(p.outer!), "uploaded outer");
      state.upload = { ok: true, name };
    } catch (e) {
      state.upload = { ok: false, error: String((e as Error)?.stack ?? e) };
    } finally {
      await removeRoot(root);
    }
  });
  state.done = true;
}

if (inPage) {
  page();
} else {
  suite().then((r) => (globalThis as unknown as { postMessage(m: unknown): void }).postMessage(r));
}
