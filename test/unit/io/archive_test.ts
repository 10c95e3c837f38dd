/**
 * ustar writer and reader: round trips, interchange with GNU tar (an independent
 * implementation), and every corruption the reader must refuse before allocating.
 */
import { MAX_TAR_ENTRY_BYTES, packTar, unpackTar } from "../../../src/io/archive.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";
import { mulberry32 } from "../../util/random.ts";

const enc = new TextEncoder();

function bytes(n: number, seed: number): Uint8Array {
  const rng = mulberry32(seed), out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(rng() * 256);
  return out;
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

const FILES = [
  { name: "mnist.fdl", bytes: bytes(1029, 1) },
  { name: "empty.optim", bytes: new Uint8Array(0) },
  { name: "exactly/one-block.bin", bytes: bytes(512, 2) },
  // 120 bytes: needs the ustar prefix field.
  { name: `${"d".repeat(60)}/${"f".repeat(59)}`, bytes: bytes(7, 3) },
  { name: "mnist.meta.json", bytes: enc.encode('{"schema_version":5}\n') },
];

/** Set an octal field of header `at` and fix the header checksum, as a forger would. */
function forge(tar: Uint8Array, at: number, off: number, len: number, text: string): Uint8Array {
  const out = tar.slice();
  out.fill(0, at + off, at + off + len);
  out.set(enc.encode(text), at + off);
  out.fill(0x20, at + 148, at + 156);
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += out[at + i];
  out.set(enc.encode(sum.toString(8).padStart(6, "0") + "\0 "), at + 148);
  return out;
}

Deno.test("packTar then unpackTar returns every file byte for byte, in order", () => {
  const tar = packTar(FILES, { mtime: 1_700_000_000 });
  assertEquals(tar.length % 512, 0, "archive length mod 512");
  const back = unpackTar(tar, "t.tar");
  assertEquals(back.map((e) => e.name), FILES.map((e) => e.name), "names");
  back.forEach((e, i) => assert(same(e.bytes, FILES[i].bytes), `bytes of ${e.name}`));
});

Deno.test("GNU tar lists and extracts what packTar writes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/a.tar`, packTar(FILES, { mtime: 1_700_000_000 }));
    const list = await new Deno.Command("tar", { args: ["-tf", `${dir}/a.tar`], stderr: "piped" }).output();
    assert(list.success, new TextDecoder().decode(list.stderr));
    assertEquals(new TextDecoder().decode(list.stdout).trim().split("\n"), FILES.map((e) => e.name), "tar -t");
    await Deno.mkdir(`${dir}/x`);
    const x = await new Deno.Command("tar", { args: ["-xf", `${dir}/a.tar`, "-C", `${dir}/x`], stderr: "piped" })
      .output();
    assert(x.success, new TextDecoder().decode(x.stderr));
    for (const f of FILES) assert(same(await Deno.readFile(`${dir}/x/${f.name}`), f.bytes), `extracted ${f.name}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("unpackTar reads GNU tar's ustar, gnu and pax formats (folders skipped, ./ dropped)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/src/sub`, { recursive: true });
    const files = { "a.fdl": bytes(3000, 4), "sub/b.meta.json": enc.encode("{}") };
    for (const [n, b] of Object.entries(files)) await Deno.writeFile(`${dir}/src/${n}`, b);
    for (const format of ["ustar", "gnu", "pax"]) {
      const out = await new Deno.Command("tar", {
        args: [`--format=${format}`, "-cf", `${dir}/${format}.tar`, "-C", `${dir}/src`, "."],
        stderr: "piped",
      }).output();
      assert(out.success, new TextDecoder().decode(out.stderr));
      const got = unpackTar(await Deno.readFile(`${dir}/${format}.tar`), `${format}.tar`);
      const byName = new Map(got.map((e) => [e.name, e.bytes]));
      assertEquals([...byName.keys()].sort(), Object.keys(files).sort(), `${format} names`);
      for (const [n, b] of Object.entries(files)) assert(same(byName.get(n)!, b), `${format} ${n}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("unpackTar refuses a truncated archive, naming it", () => {
  const tar = packTar(FILES, { mtime: 0 });
  assertThrows(() => unpackTar(tar.subarray(0, 700), "cut.tar"), RangeError, `"cut.tar"`, "past the end");
  assertThrows(() => unpackTar(tar.subarray(0, 300), "cut.tar"), RangeError, `"cut.tar"`, "truncated", "300 bytes");
  // Cut exactly after the last entry: no end-of-archive marker.
  assertThrows(() => unpackTar(tar.subarray(0, tar.length - 1024), "cut.tar"), RangeError, "end-of-archive marker");
  assertThrows(() => unpackTar(new Uint8Array(0), "empty.tar"), RangeError, `"empty.tar"`, "truncated");
});

Deno.test("unpackTar refuses a bad checksum and a file that is not tar", () => {
  const tar = packTar(FILES, { mtime: 0 });
  const flipped = tar.slice();
  flipped[3] ^= 0x01; // a byte of the first name
  assertThrows(() => unpackTar(flipped, "bad.tar"), RangeError, `"bad.tar"`, "bad checksum", "offset 0");
  const text = enc.encode("this is not an archive".padEnd(2048, "."));
  assertThrows(() => unpackTar(text, "notes.txt"), RangeError, `"notes.txt"`, "bad checksum");
  const noMagic = forge(tar, 0, 257, 6, "xxxxx");
  assertThrows(() => unpackTar(noMagic, "v7.tar"), TypeError, "not ustar");
});

Deno.test("unpackTar refuses a size past the end before allocating (8 GiB claimed in a tiny file)", () => {
  const tar = packTar([{ name: "a", bytes: new Uint8Array(10) }], { mtime: 0 });
  const huge = forge(tar, 0, 124, 12, MAX_TAR_ENTRY_BYTES.toString(8));
  assertThrows(
    () => unpackTar(huge, "huge.tar"),
    RangeError,
    `"huge.tar"`,
    `entry "a" claims ${MAX_TAR_ENTRY_BYTES} bytes`,
    "past the end",
  );
  const bin = tar.slice();
  bin[124] = 0x80; // GNU base-256 size
  assertThrows(() => unpackTar(forge(bin, 0, 0, 1, "a"), "bin.tar"), RangeError, "binary size field");
  assertThrows(() => unpackTar(forge(tar, 0, 124, 12, "12x4"), "oct.tar"), TypeError, "not octal");
});

Deno.test("unpackTar refuses unsafe names, duplicates and links", () => {
  const tar = packTar([{ name: "a", bytes: new Uint8Array(3) }], { mtime: 0 });
  assertThrows(() => unpackTar(forge(tar, 0, 0, 100, "../evil"), "slip.tar"), RangeError, `"slip.tar"`, `".."`);
  assertThrows(() => unpackTar(forge(tar, 0, 0, 100, "/etc/passwd"), "abs.tar"), RangeError, "absolute");
  const link = forge(tar, 0, 156, 1, "2");
  assertThrows(() => unpackTar(link, "link.tar"), TypeError, `entry "a" has type "2"`);
  const two = packTar([{ name: "a", bytes: new Uint8Array(3) }, { name: "b", bytes: new Uint8Array(3) }], { mtime: 0 });
  assertThrows(() => unpackTar(forge(two, 1024, 0, 100, "a"), "dup.tar"), RangeError, `entry "a" appears twice`);
});

Deno.test("packTar refuses unsafe, duplicate and over-long names", () => {
  const b = new Uint8Array(1);
  assertThrows(() => packTar([{ name: "../x", bytes: b }]), RangeError, "packTar", `".."`);
  assertThrows(() => packTar([{ name: "x", bytes: b }, { name: "x", bytes: b }]), RangeError, `duplicate entry "x"`);
  assertThrows(() => packTar([{ name: "n".repeat(101), bytes: b }]), RangeError, "101 bytes", "155 + 100");
  assertThrows(() => packTar([], { mtime: -1 }), RangeError, "mtime", "-1");
});
