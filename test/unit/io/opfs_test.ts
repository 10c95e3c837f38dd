/**
 * Deno side of io/opfs.ts: defaultStorage and resolveStorage pick the file system, and
 * OpfsStorage says clearly that Deno has no OPFS. Its browser behaviour is tested in
 * Chromium by test/browser/storage.spec.ts.
 */
import { defaultStorage, OpfsStorage, resolveStorage } from "../../../src/io/opfs.ts";
import { FsStorage, MemoryStorage } from "../../../src/io/storage.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";

Deno.test("defaultStorage is FsStorage under Deno, rooted where asked", () => {
  const s = defaultStorage();
  assert(s instanceof FsStorage, `got ${s.kind}`);
  assertEquals(s.where, Deno.cwd(), "where");
  assertEquals((defaultStorage("/tmp") as FsStorage).root, "/tmp", "root");
});

Deno.test("OpfsStorage refuses to start without navigator.storage.getDirectory, saying what to use", () => {
  assert(!OpfsStorage.isAvailable(), "Deno has no OPFS");
  assertThrows(() => new OpfsStorage(), Error, "Origin Private File System", "FsStorage");
});

Deno.test("resolveStorage splits a Deno path at its last slash; a given storage keeps the path", () => {
  const abs = resolveStorage("/tmp/runs/mnist.fdl");
  assertEquals([abs.storage.where, abs.path], ["/tmp/runs", "mnist.fdl"], "absolute");
  const up = resolveStorage("../runs/a.optim");
  assertEquals([(up.storage as FsStorage).root, up.path], ["../runs", "a.optim"], "relative with ..");
  const bare = resolveStorage("a.fdl");
  assertEquals([(bare.storage as FsStorage).root, bare.path], [".", "a.fdl"], "bare name");
  const root = resolveStorage("/a.fdl");
  assertEquals([(root.storage as FsStorage).root, root.path], ["/", "a.fdl"], "file at /");
  const mem = new MemoryStorage();
  const given = resolveStorage("x/y.fdl", mem);
  assert(given.storage === mem && given.path === "x/y.fdl", "given storage");
});

Deno.test("resolveStorage's file system storage reads and writes where the path says", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { storage, path } = resolveStorage(`${dir}/sub/f.bin`);
    await storage.write(path, new Uint8Array([1, 2, 3]));
    assertEquals([...await Deno.readFile(`${dir}/sub/f.bin`)], [1, 2, 3], "bytes on disk");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
