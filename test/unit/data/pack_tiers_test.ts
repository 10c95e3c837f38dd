/**
 * Streaming datasets and the host tiers: a pack file read by index through a
 * local file, HTTP Range requests and memory; the RAM cache and the disk stage serving the
 * same bytes as the source across epochs, with counters that add up; PyTorch's side
 * (numpy, an independent safetensors parser and writer) reads ours and we read theirs.
 */
import { ArrayDataSet, type AsyncBatchSource, type BatchDataSet, type HostBatch, PackSource, SampleTiers, writePack } from "../../../src/data/mod.ts";
import { createStageFile, openRangedFile, openRangedUrl, type RangedFile, rangedBytes } from "../../../src/io/mod.ts";
import { RANGE_ATTEMPTS } from "../../../src/io/ranged.ts";
import { assert, assertEquals, assertRejects, assertThrows } from "../../util/assert.ts";
import { mulberry32, randint, randn } from "../../util/random.ts";

const N = 1013;

/** Three fields of odd shapes and all three dtypes, random values. */
function randomDataset(seed: number, n = N): ArrayDataSet {
  const rng = mulberry32(seed);
  const u = new Uint32Array(n * 2);
  for (let i = 0; i < u.length; i++) u[i] = Math.floor(rng() * 2 ** 32);
  return new ArrayDataSet([
    { name: "image", data: randn(n * 15, rng), shape: [n, 3, 5] },
    { name: "label", data: randint(n, 10, rng), shape: [n] },
    { name: "bits", data: u, shape: [n, 2] },
  ]);
}

async function packBytes(ds: BatchDataSet, chunk = 100): Promise<Uint8Array<ArrayBuffer>> {
  const parts: Uint8Array[] = [];
  await writePack(ds, (b) => Promise.resolve(void parts.push(b.slice())), chunk);
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) (out.set(p, o), o += p.length);
  return out;
}

function assertSameBatch(got: HostBatch, want: HostBatch, label: string): void {
  assertEquals(got.length, want.length, `${label}: fields`);
  got.forEach((f, k) => {
    assertEquals(f.shape, want[k].shape, `${label}: field ${k} shape`);
    assertEquals(f.data.constructor.name, want[k].data.constructor.name, `${label}: field ${k} dtype`);
    // Bytes, not values: NaN payloads and -0 must survive too.
    const a = new Uint8Array(f.data.buffer, f.data.byteOffset, f.data.byteLength);
    const b = new Uint8Array(want[k].data.buffer, want[k].data.byteOffset, want[k].data.byteLength);
    assert(a.length === b.length && a.every((x, i) => x === b[i]), `${label}: field ${k} bytes differ`);
  });
}

/** Random batches with repeats, unsorted, and runs of consecutive indices. */
function batches(seed: number, count: number, size: number): number[][] {
  const rng = mulberry32(seed);
  return Array.from({ length: count }, (_, b) => {
    if (b % 3 === 0) {
      const start = Math.floor(rng() * (N - size));
      return Array.from({ length: size }, (_, i) => start + i);
    }
    return Array.from({ length: size }, () => Math.floor(rng() * N));
  });
}

async function checkSource(file: RangedFile, ds: ArrayDataSet, label: string): Promise<void> {
  const src = await PackSource.open(file);
  assertEquals(src.len(), N, `${label}: len`);
  assertEquals(src.fields, ds.fields, `${label}: fields`);
  for (const [k, idx] of batches(7, 12, 37).entries()) assertSameBatch(await src.readBatch(idx), ds.getBatch(idx), `${label} batch ${k}`);
  assertSameBatch(await src.readBatch([]), ds.getBatch([]), `${label}: empty batch`);
  await assertRejects(() => src.readBatch([3, N]), RangeError, "index 1013", `${N} samples`);
}

Deno.test("PackSource reads a pack by index from memory, a local file and HTTP Range requests, byte for byte", async () => {
  const ds = randomDataset(1);
  const bytes = await packBytes(ds);
  await checkSource(rangedBytes(bytes, "mem"), ds, "memory");

  const dir = await Deno.makeTempDir();
  const path = `${dir}/set.safetensors`;
  await Deno.writeFile(path, bytes);
  const file = await openRangedFile(path);
  await checkSource(file, ds, "file");
  file.close();

  // A server that honours Range as static servers do (206 + the slice).
  const ac = new AbortController();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen() {} }, (req) => {
    const path = new URL(req.url).pathname;
    if (path !== "/set.safetensors" && path !== "/no-range" && path !== "/wrong-range") return new Response("not found", { status: 404 });
    const m = /bytes=(\d+)-(\d+)/.exec(req.headers.get("range") ?? "");
    if (req.method === "HEAD") return new Response(null, { headers: { "content-length": String(bytes.length) } });
    if (!m || path === "/no-range") return new Response(bytes);
    const [a, b] = [Number(m[1]), Number(m[2])];
    // A server (or a cache) answering another range of the same length.
    if (path === "/wrong-range") return new Response(bytes.slice(a + 4, b + 5), { status: 206, headers: { "content-range": `bytes ${a + 4}-${b + 4}/${bytes.length}` } });
    return new Response(bytes.slice(a, b + 1), { status: 206, headers: { "content-range": `bytes ${a}-${b}/${bytes.length}` } });
  });
  try {
    await checkSource(await openRangedUrl(`http://127.0.0.1:${server.addr.port}/set.safetensors`), ds, "http");
    const base = `http://127.0.0.1:${server.addr.port}`;
    await assertRejects(() => openRangedUrl(`${base}/x`), Error, `${base}/x`, "HTTP 404");
    const noRange = await openRangedUrl(`${base}/no-range`);
    await assertRejects(() => noRange.read(8, 16), Error, "no-range", "HTTP 200", "Range requests");
    const wrong = await openRangedUrl(`${base}/wrong-range`);
    await assertRejects(() => wrong.read(8, 16), Error, "wrong-range", "bytes 8-23", `Content-Range "bytes 12-27/`);
    // A connection dropped under load (fetch rejects with a TypeError) is retried, up to RANGE_ATTEMPTS tries.
    const real = globalThis.fetch;
    let drops = 2, dropped = 0;
    globalThis.fetch = (input, init) => {
      if (new Headers(init?.headers).has("range") && drops > 0) {
        drops--, dropped++;
        return Promise.reject(new TypeError("Failed to fetch"));
      }
      return real(input, init);
    };
    try {
      await checkSource(await openRangedUrl(`${base}/set.safetensors`), ds, "http after two dropped connections");
      assertEquals(dropped, 2, "both connections were dropped, and the reads retried");
      drops = RANGE_ATTEMPTS;
      const f = await openRangedUrl(`${base}/set.safetensors`);
      await assertRejects(() => f.read(0, 8), Error, "set.safetensors", `failed ${RANGE_ATTEMPTS} times`, "Failed to fetch");
    } finally {
      globalThis.fetch = real;
    }
  } finally {
    ac.abort();
    await server.finished;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("PackSource refuses packs it cannot serve, naming the file and the field", async () => {
  const ds = randomDataset(2, 20);
  const bytes = await packBytes(ds);
  await assertRejects(() => PackSource.open(rangedBytes(bytes, "a.safetensors"), ["image", "nope"]), RangeError, "a.safetensors", `no field "nope"`);
  await assertRejects(() => PackSource.open(rangedBytes(bytes.subarray(0, bytes.length - 4), "cut.safetensors")), RangeError, "cut.safetensors");
  // Fields with different sample counts.
  const other = new ArrayDataSet([{ name: "x", data: new Float32Array(6), shape: [3, 2] }]);
  const mixed = await packBytes(other);
  const a = await PackSource.open(rangedBytes(mixed, "x"));
  assertEquals(a.len(), 3, "one field");
  await assertRejects(() => PackSource.open(rangedBytes(bytes, "sel.safetensors"), ["label", "image"]).then((s) => s.readBatch([25])), RangeError, "index 25");
});

/** A source that counts what it serves. */
function counting(src: AsyncBatchSource): AsyncBatchSource & { reads: number } {
  const c = {
    fields: src.fields,
    len: () => src.len(),
    reads: 0,
    readBatch(idx: readonly number[]) {
      c.reads += idx.length;
      return src.readBatch(idx);
    },
  };
  return c;
}

Deno.test("SampleTiers: RAM cache and disk stage serve the source's bytes; each sample comes from the source once when RAM + disk hold the set", async () => {
  const ds = randomDataset(3);
  const source = counting(await PackSource.open(rangedBytes(await packBytes(ds), "set")));
  const dir = await Deno.makeTempDir();
  const disk = await createStageFile(dir, "rank0.stage");
  const tiers = new SampleTiers(source, { ramBytes: 200 * 72 + 5, disk, diskBytes: 900 * 72 });
  assertEquals(tiers.recordBytes, 15 * 4 + 4 + 8, "record = the fields back to back");
  const rng = mulberry32(9);
  let requested = 0;
  const distinct = new Set<number>();
  for (let epoch = 0; epoch < 3; epoch++) {
    const perm = Array.from({ length: N }, (_, i) => i).sort(() => rng() - 0.5);
    for (let s = 0; s + 64 <= N; s += 64) {
      const idx = perm.slice(s, s + 64);
      idx[5] = idx[0]; // a repeat within the batch
      requested += new Set(idx).size;
      idx.forEach((i) => distinct.add(i));
      assertSameBatch(await tiers.readBatch(idx), ds.getBatch(idx), `epoch ${epoch} batch ${s / 64}`);
    }
    if (epoch === 0) assertEquals(source.reads, tiers.stats().sourceReads, "the source read exactly the misses");
  }
  const st = tiers.stats();
  assertEquals(st.ramHits + st.diskHits + st.sourceReads, requested, "every sample from exactly one tier");
  assertEquals(st.ramSamples, 200, "RAM holds its budget in whole records");
  assert(st.diskSamples <= 900 && st.diskSamples + st.ramSamples === distinct.size, `the tiers are exclusive: ${st.ramSamples} + ${st.diskSamples} = ${distinct.size} distinct`);
  assert(st.diskHits > 0 && st.ramHits > 0, `both tiers served (${st.ramHits} RAM, ${st.diskHits} disk)`);
  // 200 + 900 ≥ 1013 records: nothing is dropped, so each sample comes from the source once.
  assertEquals(st.drops, 0, "nothing dropped while the disk had room");
  assertEquals(st.sourceReads, distinct.size, "each distinct sample read from the source exactly once");
  await tiers.close();
  assertEquals([...Deno.readDirSync(dir)].length, 0, "the stage file is removed at close");
  await Deno.remove(dir);
});

Deno.test("SampleTiers with the cache off retains nothing in RAM; with a full disk drops and re-reads, never loses", async () => {
  const ds = randomDataset(4, 300);
  const bytes = await packBytes(ds);
  const off = new SampleTiers(await PackSource.open(rangedBytes(bytes, "s")), { ramBytes: 1e9, sampleCache: false });
  const idx = [1, 2, 3, 299, 0];
  for (let i = 0; i < 2; i++) assertSameBatch(await off.readBatch(idx), ds.getBatch(idx), `off ${i}`);
  assertEquals(off.stats().sourceReads, 10, "cache off: every read from the source");
  assertEquals(off.stats().ramSamples, 0, "cache off: nothing kept");

  const dir = await Deno.makeTempDir();
  const small = new SampleTiers(await PackSource.open(rangedBytes(bytes, "s")), {
    ramBytes: 10 * 72,
    disk: await createStageFile(dir, "r.stage"),
    diskBytes: 20 * 72,
  });
  for (let e = 0; e < 2; e++) {
    for (let s = 0; s < 300; s += 50) {
      const b = Array.from({ length: 50 }, (_, i) => s + i);
      assertSameBatch(await small.readBatch(b), ds.getBatch(b), `small ${e}/${s}`);
    }
  }
  const st = small.stats();
  assertEquals(st.diskSamples, 20, "disk full");
  assertEquals(st.evictions, st.spills + st.drops, "every eviction spilled or dropped");
  assert(st.drops > 0, "a full disk drops evicted samples");
  assertEquals(st.ramHits + st.diskHits + st.sourceReads, 600, "every sample served");
  await small.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("tier budgets and stage directories are checked, naming the knob", async () => {
  const src = await PackSource.open(rangedBytes(await packBytes(randomDataset(5, 4)), "s"));
  assertThrows(() => new SampleTiers(src, { ramBytes: -1 }), RangeError, "ramMaxUsage", "-1");
  assertThrows(() => new SampleTiers(src, { ramBytes: 0, diskBytes: NaN }), RangeError, "diskStage", "NaN");
  const file = await Deno.makeTempFile();
  await assertRejects(() => createStageFile(`${file}/sub`, "r.stage"), Error, "diskStageDir", file);
  await Deno.remove(file);
});

Deno.test("PyTorch's side (numpy, its own safetensors parser) reads our pack, and we read a pack it wrote", async () => {
  const ds = randomDataset(6, 57);
  const dir = await Deno.makeTempDir();
  await Deno.writeFile(`${dir}/ours.safetensors`, await packBytes(ds, 10));
  const script = `
import json, struct, sys, numpy as np, torch
d = sys.argv[1]
raw = open(d + "/ours.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
dt = {"F32": np.float32, "I32": np.int32, "U32": np.uint32}
out = {}
for k, v in h.items():
    if k == "__metadata__": continue
    a, b = v["data_offsets"]
    arr = np.frombuffer(raw[8 + n + a: 8 + n + b], dtype=dt[v["dtype"]]).reshape(v["shape"])
    out[k] = {"shape": list(arr.shape), "row7": arr[7].reshape(-1).astype(np.float64).tolist()}
# A pack written by torch tensors' bytes, with its own header (fields in reverse order).
g = torch.Generator().manual_seed(3)
x = torch.randn(41, 2, 3, generator=g)
y = torch.randint(0, 5, (41,), generator=g, dtype=torch.int32)
tensors = [("y", y), ("x", x)]
header, off, blobs = {}, 0, []
for name, t in tensors:
    b = t.numpy().tobytes()
    header[name] = {"dtype": "F32" if t.dtype == torch.float32 else "I32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
    off += len(b); blobs.append(b)
hj = json.dumps(header).encode()
open(d + "/theirs.safetensors", "wb").write(struct.pack("<Q", len(hj)) + hj + b"".join(blobs))
out["theirs"] = {"x12": x[12].reshape(-1).tolist(), "y30": int(y[30])}
print(json.dumps(out))
`;
  const run = await new Deno.Command("/usr/bin/python3", { args: ["-c", script, dir], stdout: "piped", stderr: "piped" }).output();
  assert(run.success, `python3 failed: ${new TextDecoder().decode(run.stderr)}`);
  const py = JSON.parse(new TextDecoder().decode(run.stdout));
  const [image, label, bits] = ds.getBatch([7]);
  assertEquals(py.image.shape, [57, 3, 5], "numpy sees image [N, 3, 5]");
  assertEquals(py.image.row7, [...image.data], "numpy reads image row 7");
  assertEquals(py.label.row7, [...label.data], "numpy reads label row 7");
  assertEquals(py.bits.row7, [...bits.data], "numpy reads bits row 7");

  const theirs = await PackSource.open(await openRangedFile(`${dir}/theirs.safetensors`), ["x", "y"]);
  const [x, y] = await theirs.readBatch([12, 30]);
  assertEquals([...x.data.subarray(0, 6)].map((v) => Math.fround(v)), py.theirs.x12.map(Math.fround), "we read torch's x[12]");
  assertEquals(y.data[1], py.theirs.y30, "we read torch's y[30]");
  theirs.file.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("SampleTiers: a stage read that fails turns the disk tier off and those samples come from the source; every batch exact", async () => {
  const ds = randomDataset(5, 300);
  const source = counting(await PackSource.open(rangedBytes(await packBytes(ds), "s")));
  const dir = await Deno.makeTempDir();
  const real = await createStageFile(dir, "r.stage");
  let reads = 0;
  // The stage file breaks after 5 good reads (the file removed under the run, an I/O error).
  const disk = { ...real, read: (o: number, n: number) => (++reads > 5 ? Promise.reject(new Error("injected read failure")) : real.read(o, n)) };
  const tiers = new SampleTiers(source, { ramBytes: 20 * 72, disk, diskBytes: 300 * 72 });
  const warn = console.warn, warnings: string[] = [];
  console.warn = (m: string) => void warnings.push(m);
  try {
    for (let e = 0; e < 3; e++) {
      for (let s = 0; s < 300; s += 50) {
        const b = Array.from({ length: 50 }, (_, i) => (s + i * 7 + e) % 300);
        assertSameBatch(await tiers.readBatch(b), ds.getBatch(b), `epoch ${e} batch ${s / 50}`);
      }
    }
  } finally {
    console.warn = warn;
  }
  const st = tiers.stats();
  assertEquals(st.ramHits + st.diskHits + st.sourceReads, 900, "every sample served once per request");
  assertEquals(st.diskHits, 5, "the disk served until its reads failed");
  assertEquals(st.diskSamples, 0, "the disk tier holds nothing once off");
  assertEquals(warnings.length, 1, "one warning");
  assert(warnings[0].startsWith("diskStage: reading") && warnings[0].includes("injected read failure"), warnings[0]);
  await tiers.close();
  await Deno.remove(dir, { recursive: true });
});
