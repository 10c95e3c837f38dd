/**
 * Checkpoint bundles: exact round trips on memory and on disk, meta.json
 * written last, atomicity under failing storage, every corrupt or hostile file refused
 * (before allocating what it claims), resume checks, and the tar archive for download/upload.
 */
import {
  archiveToBundle,
  bundlePaths,
  bundleToArchive,
  readBundle,
  readBundleMeta,
  readBundleModel,
  readBundleOptim,
  readBundleOuter,
  writeBundle,
} from "../../../src/distributed/coordinator/persistence/bundle.ts";
import type { BundleParts } from "../../../src/distributed/coordinator/persistence/bundle.ts";
import {
  BUNDLE_SCHEMA_VERSION,
  type BundleMeta,
  type BundleMetaInput,
  checkResumeCompatible,
  MAX_META_BYTES,
} from "../../../src/distributed/coordinator/persistence/bundle_meta.ts";
import { packTar, unpackTar } from "../../../src/io/archive.ts";
import { FsStorage, MemoryStorage, NotFoundError, type FileStore } from "../../../src/io/storage.ts";
import { assert, assertEquals, assertRejects, assertThrows } from "../../util/assert.ts";
import { mulberry32, randn } from "../../util/random.ts";

const enc = new TextEncoder();

function bits(a: Float32Array): number[] {
  return [...new Uint32Array(a.buffer, a.byteOffset, a.length)];
}

function meta(): BundleMetaInput {
  return {
    epoch: 3,
    global_step: 1234,
    sync_round: 57,
    world_size_at_save: 3,
    save_reason: "max_failure_exceeded",
    seed: 42,
    batch_size: 32,
    elche_state: {
      anchor: 17,
      anchor_rank: 2,
      smoothed_ms_per_batch: [12.345678901234567, 0, 7.1],
      phase: "stable",
      calibration_count: 9,
      trend_history: [0.01, 0.1 + 0.2, 1e-300],
    },
    coverage: {
      seed: 42,
      epoch_splits: 2,
      batch_size: 32,
      per_epoch: [
        { epoch: 3, total_samples: 29984, uncovered_ranges: [[0, 64], [1024, 320]] },
        { epoch: 4, total_samples: 29984, uncovered_ranges: [] },
      ],
    },
  };
}

function parts(seed = 1): BundleParts {
  const rng = mulberry32(seed);
  const params = [
    { name: "fc1.weight", shape: [7, 33], data: randn(7 * 33, rng) },
    { name: "fc1.bias", shape: [7], data: new Float32Array([NaN, -0, Infinity, -Infinity, 1e-45, 3, seed]) },
    { name: "fc1.weight", shape: [1, 7], data: randn(7, rng) }, // names repeat: keys are positional
  ];
  const buffers = [{ name: "bn.running_var", shape: [7], data: randn(7, rng) }];
  return {
    model: { params, buffers },
    meta: meta(),
    optim: {
      tensors: { "0.exp_avg": randn(231, rng), "0.exp_avg_sq": randn(231, rng), "2.momentum_buffer": randn(7, rng) },
      shapes: { "0.exp_avg": [7, 33], "0.exp_avg_sq": [7, 33], "2.momentum_buffer": [1, 7] },
      scalars: { "0.step": 1234, "2.step": 3, "param_groups.0.lr": 0.1 + 0.2 },
    },
    outer: randn(231 + 7 + 7, rng),
  };
}

/** Run `fn` on a MemoryStorage and on an FsStorage in a fresh temp folder (removed after). */
async function onEachStorage(fn: (s: FileStore, list: () => Promise<string[]>) => Promise<void>): Promise<void> {
  const mem = new MemoryStorage();
  await fn(mem, () => Promise.resolve([...mem.files.keys()].sort()));
  const dir = await Deno.makeTempDir({ prefix: "bundle_test_" });
  try {
    const list = async () => {
      const out: string[] = [];
      const walk = async (rel: string) => {
        for await (const e of Deno.readDir(`${dir}/${rel}`)) {
          if (e.isDirectory) await walk(`${rel}${e.name}/`);
          else out.push(`${rel}${e.name}`);
        }
      };
      await walk("");
      return out.sort();
    };
    await fn(new FsStorage(dir), list);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function assertModelEqual(got: BundleParts["model"], want: BundleParts["model"], label: string): void {
  for (const kind of ["params", "buffers"] as const) {
    assertEquals(got[kind].map((t) => [t.name, t.shape]), want[kind].map((t) => [t.name, t.shape]), `${label} ${kind}`);
    got[kind].forEach((t, i) => assertEquals(bits(t.data), bits(want[kind][i].data), `${label} ${kind}[${i}] bits`));
  }
}

Deno.test("writeBundle then readBundle is bit-identical on MemoryStorage and FsStorage", async () => {
  await onEachStorage(async (storage, list) => {
    const p = parts();
    await writeBundle(storage, "runs/mnist", p);
    assertEquals(
      await list(),
      ["runs/mnist.fdl", "runs/mnist.meta.json", "runs/mnist.optim", "runs/mnist.outer.fdl"],
      `${storage.kind}: files (nothing staged left)`,
    );
    const b = await readBundle(storage, "runs/mnist");
    assertModelEqual(b.model, p.model, storage.kind);
    assertEquals(b.meta, { schema_version: BUNDLE_SCHEMA_VERSION, ...p.meta } as BundleMeta, `${storage.kind}: meta`);
    assert(Object.is(b.meta.elche_state!.trend_history![1], 0.1 + 0.2), "doubles survive exactly");
    const o = b.optim!, po = p.optim!;
    assertEquals(Object.keys(o.tensors), Object.keys(po.tensors), "optim keys");
    for (const k of Object.keys(po.tensors)) {
      assertEquals(bits(o.tensors[k]), bits(po.tensors[k]), `optim ${k} bits`);
      assertEquals(o.shapes[k], po.shapes[k], `optim ${k} shape`);
    }
    assertEquals(o.scalars, po.scalars, "optim scalars");
    assertEquals(bits(b.outer!.flat), bits(p.outer!), "outer flat bits");
    assertEquals(
      b.outer!.tensors.map((t) => [t.name, t.shape]),
      p.model.params.map((t) => [t.name, t.shape]),
      "outer: one tensor per parameter",
    );
  });
});

Deno.test("meta.json keys come in the spec's order with schema_version 5", async () => {
  const s = new MemoryStorage();
  await writeBundle(s, "m", parts());
  const text = new TextDecoder().decode(s.files.get("m.meta.json"));
  assertEquals(Object.keys(JSON.parse(text)), [
    "schema_version",
    "epoch",
    "global_step",
    "sync_round",
    "world_size_at_save",
    "save_reason",
    "seed",
    "batch_size",
    "elche_state",
    "coverage",
  ], "keys");
  assertEquals(JSON.parse(text).schema_version, 5, "version");
});

/** FileStore that records every call and can fail one. */
class Recording implements FileStore {
  readonly kind = "memory" as const;
  readonly where = "recording";
  log: string[] = [];
  failOn?: (op: string) => boolean;
  constructor(readonly inner: FileStore = new MemoryStorage()) {}
  #op(op: string): void {
    this.log.push(op);
    if (this.failOn?.(op)) throw new Error(`injected failure at ${op}`);
  }
  read(p: string) {
    this.#op(`read ${p}`);
    return this.inner.read(p);
  }
  async write(p: string, d: Uint8Array | string) {
    // The inner write (temp + rename) completes, then the failure hits: like a crash right after.
    await this.inner.write(p, d);
    this.#op(`write ${p}`);
  }
  append(p: string, d: Uint8Array | string) {
    this.#op(`append ${p}`);
    return this.inner.append(p, d);
  }
  size(p: string) {
    return this.inner.size(p);
  }
  rename(a: string, b: string) {
    this.#op(`rename ${a} -> ${b}`);
    return this.inner.rename(a, b);
  }
  remove(p: string) {
    this.#op(`remove ${p}`);
    return this.inner.remove(p);
  }
}

Deno.test("writeBundle stages every file, retires the old meta.json, and moves the new one in last", async () => {
  const s = new Recording();
  await writeBundle(s, "r/x", parts());
  assertEquals(s.log, [
    "write r/x.fdl.partial",
    "write r/x.optim.partial",
    "write r/x.outer.fdl.partial",
    "write r/x.meta.json.partial",
    "remove r/x.meta.json",
    "rename r/x.fdl.partial -> r/x.fdl",
    "rename r/x.optim.partial -> r/x.optim",
    "rename r/x.outer.fdl.partial -> r/x.outer.fdl",
    "rename r/x.meta.json.partial -> r/x.meta.json",
  ], "operations");
});

Deno.test("a failure while staging leaves the previous bundle whole and nothing staged", async () => {
  await onEachStorage(async (inner, list) => {
    const old = parts(1);
    await writeBundle(inner, "b", old);
    const before = await list();
    for (const victim of ["b.fdl.partial", "b.optim.partial", "b.meta.json.partial"]) {
      const s = new Recording(inner);
      s.failOn = (op) => op === `write ${victim}`;
      await assertRejects(() => writeBundle(s, "b", parts(2)), Error, "injected failure", victim);
      assertEquals(await list(), before, `${inner.kind}: files after failing at ${victim}`);
      const b = await readBundle(inner, "b");
      assertModelEqual(b.model, old.model, `${inner.kind}: old model after failing at ${victim}`);
      assertEquals(bits(b.outer!.flat), bits(old.outer!), "old outer");
    }
  });
});

Deno.test("a crash during the final moves leaves no meta.json, never a mixed bundle", async () => {
  const inner = new MemoryStorage();
  await writeBundle(inner, "b", parts(1));
  const s = new Recording(inner);
  s.failOn = (op) => op.startsWith("rename b.optim.partial");
  await assertRejects(() => writeBundle(s, "b", parts(2)), Error, "injected failure");
  const e = await assertRejects(() => readBundleMeta(inner, "b"), NotFoundError, `"b.meta.json"`, "did not finish");
  assert(e instanceof NotFoundError);
});

Deno.test("optim and outer: undefined keeps the existing file, null removes it", async () => {
  const s = new MemoryStorage();
  const p = parts(1);
  await writeBundle(s, "k", p);
  await writeBundle(s, "k", { ...parts(2), optim: undefined, outer: undefined });
  assertEquals((await readBundleOptim(s, "k"))!.scalars, p.optim!.scalars, "optim kept");
  assertEquals(bits((await readBundleOuter(s, "k"))!.flat), bits(p.outer!), "outer kept");
  await writeBundle(s, "k", { ...parts(2), optim: null, outer: null });
  assertEquals(await readBundleOptim(s, "k"), null, "optim removed");
  assertEquals(await readBundleOuter(s, "k"), null, "outer removed");
  assertEquals([...s.files.keys()].sort(), ["k.fdl", "k.meta.json"], "files");
});

Deno.test("writeBundle validates every part before touching storage", async () => {
  const s = new MemoryStorage();
  const cases: [Partial<BundleParts>, ErrorConstructor, string[]][] = [
    [{ outer: new Float32Array(3) }, RangeError, [`"w.outer.fdl"`, "3 values", "245"]],
    [{ meta: { ...meta(), epoch: -1 } }, RangeError, [`"w.meta.json"`, `"epoch" must be >= 0, got -1`]],
    [{ meta: { ...meta(), save_reason: "crash" as never } }, TypeError, [
      `"save_reason"`,
      "graceful_shutdown",
      `"crash"`,
    ]],
    [{ meta: { ...meta(), world_size_at_save: 2 } }, RangeError, ["3 entries, world_size_at_save is 2"]],
    [
      { optim: { tensors: { a: new Float32Array(2) }, shapes: { a: [3] }, scalars: {} } },
      RangeError,
      [`"w.optim"`, `"a"`],
    ],
  ];
  for (const [bad, E, fragments] of cases) {
    await assertRejects(() => writeBundle(s, "w", { ...parts(), ...bad }), E, ...fragments);
  }
  assertEquals(s.files.size, 0, "nothing written");
});

async function withMeta(text: string | Uint8Array): Promise<MemoryStorage> {
  const s = new MemoryStorage();
  await s.write("m.meta.json", text);
  return s;
}

Deno.test("readBundleMeta: missing, empty, truncated and non-JSON files are refused naming the file", async () => {
  await assertRejects(
    () => readBundleMeta(new MemoryStorage(), "runs/none"),
    NotFoundError,
    `"runs/none.meta.json"`,
    `"runs/none"`,
  );
  await assertRejects(async () => readBundleMeta(await withMeta(""), "m"), TypeError, `"m.meta.json"`, "it is empty");
  const full = JSON.stringify({ schema_version: 5, ...meta() });
  await assertRejects(
    async () => readBundleMeta(await withMeta(full.slice(0, 80)), "m"),
    TypeError,
    `"m.meta.json"`,
    "not valid JSON",
  );
  await assertRejects(
    async () => readBundleMeta(await withMeta("[1,2]"), "m"),
    TypeError,
    "must hold a JSON object",
    "an array",
  );
  await assertRejects(
    async () => readBundleMeta(await withMeta(new Uint8Array([0x7b, 0xff, 0x7d])), "m"),
    TypeError,
    "not UTF-8",
  );
});

Deno.test("readBundleMeta lists every wrong type and missing field at once", async () => {
  const bad = {
    schema_version: 5,
    epoch: "3",
    global_step: 1.5,
    world_size_at_save: 2,
    save_reason: "checkpoint",
    elche_state: { anchor: 0, anchor_rank: 5, smoothed_ms_per_batch: [1, "x"], phase: "fast", calibration_count: 1 },
    coverage: { seed: 1, batch_size: 4, per_epoch: [{ epoch: 0, total_samples: 8, uncovered_ranges: [[0, -4]] }] },
  };
  const e = await assertRejects(
    async () => readBundleMeta(await withMeta(JSON.stringify(bad)), "m"),
    TypeError,
    `Invalid bundle meta "m.meta.json"`,
    `"epoch" must be an integer, got "3"`,
    `"global_step" must be an integer, got 1.5`,
    `missing "sync_round"`,
    `"elche_state.anchor" must be >= 1, got 0`,
    `"elche_state.smoothed_ms_per_batch[1]" must be a finite number >= 0, got "x"`,
    `"elche_state.phase" must be one of probe, warmup, stable, mature, got "fast"`,
    `"elche_state.anchor_rank" is 5, world_size_at_save is 2`,
    `"coverage.per_epoch[0].uncovered_ranges[0]" must be [offset, size] of integers >= 0, got [0,-4]`,
  );
  assert(e.message.includes("(8 problems)"), e.message);
});

Deno.test("readBundleMeta refuses a newer schema_version and a file over 16 MiB without reading it", async () => {
  const newer = JSON.stringify({ schema_version: 6, ...meta() });
  await assertRejects(
    async () => readBundleMeta(await withMeta(newer), "m"),
    RangeError,
    `"m.meta.json"`,
    "schema_version 6",
    "newer",
  );
  // A storage that claims 10 GB and refuses to be read: the size check must come first.
  const huge = new MemoryStorage();
  huge.size = () => Promise.resolve(10e9);
  huge.read = () => Promise.reject(new Error("read must not be called"));
  await assertRejects(
    () => readBundleMeta(huge, "m"),
    RangeError,
    `"m.meta.json" is 10000000000 bytes`,
    `${MAX_META_BYTES}`,
  );
  // Just over the cap, for real.
  const big = await withMeta(new Uint8Array(MAX_META_BYTES + 1).fill(0x20));
  await assertRejects(() => readBundleMeta(big, "m"), RangeError, `${MAX_META_BYTES + 1} bytes`);
});

Deno.test("readBundleMeta parses an older schema with defaults", async () => {
  const v3 = {
    schema_version: 3,
    epoch: 2,
    global_step: 10,
    batch_size: 16,
    elche_state: { anchor: 4, smoothed_ms_per_batch: [3, 4] },
    coverage: { seed: 9, per_epoch: [] },
  };
  const m = await readBundleMeta(await withMeta(JSON.stringify(v3)), "m");
  assertEquals(m, {
    schema_version: 3,
    epoch: 2,
    global_step: 10,
    sync_round: 0,
    world_size_at_save: 2,
    save_reason: "checkpoint",
    batch_size: 16,
    elche_state: { anchor: 4, anchor_rank: null, smoothed_ms_per_batch: [3, 4], phase: "probe", calibration_count: 0 },
    coverage: { seed: 9, epoch_splits: 1, batch_size: 16, per_epoch: [] },
  } as BundleMeta, "normalized");
  // The same omissions in a version-5 file are errors.
  await assertRejects(
    async () => readBundleMeta(await withMeta(JSON.stringify({ ...v3, schema_version: 5 })), "m"),
    TypeError,
    `missing "sync_round"`,
    `missing "world_size_at_save"`,
    `"save_reason" must be one of`,
    `missing "elche_state.anchor_rank"`,
  );
});

/** A safetensors file with a hand-made header and `dataLen` zero data bytes (optionally a forged length). */
function craft(header: unknown, dataLen = 0, forgedLen?: bigint): Uint8Array {
  const json = enc.encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + dataLen);
  new DataView(out.buffer).setBigUint64(0, forgedLen ?? BigInt(json.length), true);
  out.set(json, 8);
  return out;
}

Deno.test("readBundleModel and readBundleOptim refuse hostile files before allocating what they claim", async () => {
  const s = new MemoryStorage();
  const cases: [string, Uint8Array, ErrorConstructor, string][] = [
    ["header claiming 10 GB", craft({}, 0, 10_000_000_000n), RangeError, "header length 10000000000 exceeds the limit"],
    ["header past the end", craft({}, 0, 4096n), RangeError, "runs past the end of the file"],
    [
      "offsets past the end",
      craft({ p0: { dtype: "F32", shape: [1e9], data_offsets: [0, 4e9] } }, 8),
      RangeError,
      "fall outside the data section",
    ],
    [
      "shape vs bytes",
      craft({ p0: { dtype: "F32", shape: [3], data_offsets: [0, 8] } }, 8),
      RangeError,
      "shape [3] of F32 needs 12 bytes",
    ],
    ["unknown dtype", craft({ p0: { dtype: "F64", shape: [1], data_offsets: [0, 8] } }, 8), TypeError, `dtype "F64"`],
    ["shorter than 8 bytes", new Uint8Array(5), RangeError, "shorter than the 8-byte header length"],
    ["header not JSON", craft("x").map((b, i) => (i === 8 ? 0x7b : b)), TypeError, "not valid UTF-8 JSON"],
  ];
  for (const [what, bytes, E, fragment] of cases) {
    assert(bytes.length < 200, `${what}: the file is tiny`);
    await s.write("h.fdl", bytes);
    await s.write("h.optim", bytes);
    await assertRejects(() => readBundleModel(s, "h"), E, `"h.fdl"`, fragment);
    await assertRejects(() => readBundleOptim(s, "h"), E, `"h.optim"`, fragment);
  }
  // A valid model written in place of the outer file: the kind in the metadata refuses it.
  await writeBundle(s, "k", { ...parts(), outer: null });
  await s.write("k.outer.fdl", await s.read("k.fdl"));
  await assertRejects(
    () => readBundleOuter(s, "k"),
    TypeError,
    `"k.outer.fdl" holds "model" tensors, expected "outer"`,
  );
});

Deno.test("checkResumeCompatible names the bundle's and the run's value for each disagreement", async () => {
  const s = new MemoryStorage();
  await writeBundle(s, "r", parts());
  const m = await readBundleMeta(s, "r");
  checkResumeCompatible(m, { seed: 42, batchSize: 32, worldSize: 3, epochSplits: 2, source: "r" });
  checkResumeCompatible(m, {}); // nothing to compare
  const e = assertThrows(
    () => checkResumeCompatible(m, { seed: 7, batchSize: 64, worldSize: 2, epochSplits: 1, source: "runs/r" }),
    RangeError,
    `Cannot resume from "runs/r" (4 problems)`,
    "seed is 42 in the bundle, this run has 7",
    "batch size is 32 in the bundle, this run has 64",
    "world size is 3 in the bundle, this run has 2",
    "epoch_splits is 2 in the bundle, this run has 1",
  );
  assert(e.message.split("\n").length === 5, e.message);
  // Without a coverage block the top-level seed and batch size are checked.
  const sync: BundleMeta = { ...m, coverage: undefined, elche_state: undefined };
  assertThrows(
    () => checkResumeCompatible(sync, { seed: 1, epochSplits: 3 }),
    RangeError,
    "(1 problem)",
    "seed is 42 in the bundle, this run has 1",
  );
});

Deno.test("bundleToArchive then archiveToBundle restores the bundle bit-identically under another stem", async () => {
  await onEachStorage(async (storage, list) => {
    const p = parts(3);
    await writeBundle(storage, "runs/mnist", p);
    const tar = await bundleToArchive(storage, "runs/mnist", { mtime: 0 });
    assertEquals(
      unpackTar(tar).map((e) => e.name),
      ["mnist.fdl", "mnist.optim", "mnist.outer.fdl", "mnist.meta.json"],
      "entries",
    );
    const got = await archiveToBundle(tar, storage, "restored/copy", "mnist.tar");
    assertEquals(got.global_step, p.meta.global_step, "returned meta");
    const files = await list();
    for (const suffix of [".fdl", ".optim", ".outer.fdl", ".meta.json"]) {
      assert(files.includes(`restored/copy${suffix}`), `${storage.kind}: restored/copy${suffix} in ${files}`);
      const a = await storage.read(`runs/mnist${suffix}`), b = await storage.read(`restored/copy${suffix}`);
      assert(a.length === b.length && a.every((x, i) => x === b[i]), `${suffix} bytes`);
    }
    assert(!files.some((f) => f.endsWith(".partial")), "nothing staged left");
  });
});

Deno.test("archiveToBundle refuses a bad archive and leaves the target bundle untouched", async () => {
  const s = new MemoryStorage();
  await writeBundle(s, "src", parts(1));
  await writeBundle(s, "dst", parts(2));
  const snapshot = new Map([...s.files].map(([k, v]) => [k, v.slice()]));
  const entries = unpackTar(await bundleToArchive(s, "src"));
  const pick = (...names: string[]) => entries.filter((e) => names.includes(e.name));
  const replace = (name: string, bytes: Uint8Array) => entries.map((e) => (e.name === name ? { name, bytes } : e));
  const cases: [Uint8Array, ErrorConstructor, string[]][] = [
    [packTar(pick("src.fdl")), TypeError, [`"u.tar"`, "exactly one *.meta.json, found 0"]],
    [packTar([...entries, { name: "other.meta.json", bytes: entries[3].bytes }]), TypeError, [
      "found 2",
      "other.meta.json",
    ]],
    [packTar(pick("src.meta.json")), TypeError, [`no "src.fdl"`]],
    [packTar(replace("src.fdl", new Uint8Array(12))), Error, [`"u.tar: src.fdl"`]],
    [packTar(replace("src.meta.json", enc.encode("{"))), TypeError, [`"u.tar: src.meta.json"`, "not valid JSON"]],
    [packTar(replace("src.optim", new Uint8Array(3))), RangeError, [`"u.tar: src.optim"`]],
    [(await bundleToArchive(s, "src")).subarray(0, 1500), RangeError, [`"u.tar"`, "past the end"]],
  ];
  // Outer momentum whose shapes do not match the model.
  const other = new MemoryStorage();
  await writeBundle(other, "o", {
    ...parts(1),
    model: { params: parts(1).model.params.slice(0, 1), buffers: [] },
    outer: new Float32Array(231),
  });
  cases.push([packTar(replace("src.outer.fdl", await other.read("o.outer.fdl"))), RangeError, [
    "momentum shapes [7,33]",
    "do not match",
  ]]);
  for (const [tar, E, fragments] of cases) {
    await assertRejects(() => archiveToBundle(tar, s, "dst", "u.tar"), E, ...fragments);
  }
  assertEquals([...s.files.keys()].sort(), [...snapshot.keys()].sort(), "same files");
  for (const [k, v] of snapshot) assert(s.files.get(k)!.every((b, i) => b === v[i]), `${k} unchanged`);
  await assertRejects(() => bundleToArchive(new MemoryStorage(), "none"), NotFoundError, `"none.meta.json"`);
});

Deno.test("archiveToBundle removes pieces the archive lacks, so no stale state survives", async () => {
  const s = new MemoryStorage();
  await writeBundle(s, "dst", parts(2));
  const src = new MemoryStorage();
  await writeBundle(src, "src", { ...parts(1), optim: null, outer: null });
  await archiveToBundle(await bundleToArchive(src, "src"), s, "dst");
  assertEquals([...s.files.keys()].sort(), ["dst.fdl", "dst.meta.json"], "files");
  assertEquals(bundlePaths("a/b").outer, "a/b.outer.fdl", "paths");
  assertThrows(() => bundlePaths("../x"), RangeError, "bundle stem", `".."`);
});
