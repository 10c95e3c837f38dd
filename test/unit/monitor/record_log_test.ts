import { FsStorage, MemoryStorage, type FileStore } from "../../../src/io/mod.ts";
import { type InteriorRecord, parseRecord, RecordLog } from "../../../src/monitor/mod.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";

function rec(path: string, seq: number, pad = 0): InteriorRecord {
  return {
    v: 1,
    ts: seq,
    sev: "info",
    path,
    kind: "node",
    epoch: 0,
    label: "x".repeat(pad),
    metrics: { seq },
    work: 1,
    children: 1,
    alive: 1,
  };
}

const text = (s: MemoryStorage, p: string) => new TextDecoder().decode(s.files.get(p) ?? new Uint8Array());
const seqs = (s: MemoryStorage, p: string) =>
  text(s, p).split("\n").filter(Boolean).map((l) => (parseRecord(l) as InteriorRecord).metrics.seq);

Deno.test("RecordLog: every node's log stays under its cap across many writes; the oldest lines go", async () => {
  const s = new MemoryStorage();
  const log = new RecordLog(s, "runs/r1/records", 1000, { warn: () => {} });
  for (let i = 0; i < 300; i++) {
    for (const path of ["root", "root/gpu1.lab", "root/gpu1.lab/rank0"]) log.write(rec(path, i, (i * 37) % 120));
    if (i % 25 === 0) {
      await log.flush();
      for (const [name, data] of s.files) assert(data.length <= 500, `${name} has ${data.length} bytes > 500`);
    }
  }
  await log.flush();
  for (
    const base of [
      "runs/r1/records/root.log",
      "runs/r1/records/root/gpu1.lab.log",
      "runs/r1/records/root/gpu1.lab/rank0.log",
    ]
  ) {
    const active = s.files.get(base)!.length, older = s.files.get(`${base}.1`)!.length;
    assert(active <= 500 && older <= 500 && active + older <= 1000, `${base}: ${active} + ${older} bytes`);
    const all = [...seqs(s, `${base}.1`), ...seqs(s, base)];
    // the newest lines, contiguous and in order, ending with the last one written
    assertEquals(all.at(-1), 299, `${base} last`);
    assertEquals(all, Array.from({ length: all.length }, (_, k) => 300 - all.length + k), `${base} sequence`);
    assert(all[0] > 0, "the first lines were dropped");
  }
  assertEquals(s.files.size, 6, "two segments per node, nothing else");
});

Deno.test("RecordLog: the byte count resumes from files already there", async () => {
  const s = new MemoryStorage();
  await s.write("logs/root.log", "y".repeat(450));
  const log = new RecordLog(s, "logs", 1000);
  const r = rec("root", 1);
  log.write(r); // ~150 bytes: 450 + 150 > 500, so the old segment rotates first
  await log.flush();
  assertEquals(text(s, "logs/root.log.1"), "y".repeat(450));
  assertEquals(seqs(s, "logs/root.log"), [1]);
  const log2 = new RecordLog(s, "logs", 1000);
  log2.write(rec("root", 2));
  await log2.flush();
  assertEquals(seqs(s, "logs/root.log"), [1, 2], "fits: appended without rotating");
  assertEquals(text(s, "logs/root.log.1"), "y".repeat(450));
});

Deno.test("RecordLog refuses unsafe dirs and bad caps at construction, naming the value", () => {
  const s = new MemoryStorage();
  for (const dir of ["", "/abs/logs", "a/../b", "a//b", ".", "a/./b"]) {
    assertThrows(() => new RecordLog(s, dir, 0), RangeError, JSON.stringify(dir).slice(1, -1) || '""');
  }
  assertThrows(() => new RecordLog(s, "ok", -1), RangeError, "maxBytes", "-1");
  assertThrows(() => new RecordLog(s, "ok", 1.5), RangeError, "maxBytes", "1.5");
  assertEquals(new RecordLog(s, "ok", 0).maxBytes, 32 * 1024 * 1024);
  assertEquals(new RecordLog(s, "ok").fileOf("root/gpu1.lab"), "ok/root/gpu1.lab.log");
});

Deno.test("RecordLog swallows every storage error after construction, warning once per node", async () => {
  const boom = () => {
    throw new Error("disk on fire");
  };
  const throwing: FileStore = {
    kind: "memory",
    where: "nowhere",
    read: boom,
    write: boom,
    append: boom,
    size: boom,
    rename: boom,
    remove: boom,
  };
  const rejecting: FileStore = {
    ...throwing,
    size: () => Promise.reject(new Error("EIO")),
    append: () => Promise.reject(new Error("EIO")),
  };
  for (const storage of [throwing, rejecting]) {
    const warnings: string[] = [];
    const log = new RecordLog(storage, "logs", 1000, { warn: (m) => warnings.push(m) });
    for (let i = 0; i < 20; i++) {
      log.write(rec("root", i));
      log.write(rec("root/h", i));
    }
    await log.flush();
    assertEquals(warnings.length, 2, `one warning per node: ${warnings.join(" | ")}`);
    assert(warnings[0].includes("logs/root.log") && warnings[1].includes("logs/root/h.log"), warnings.join(" | "));
  }
  // a throwing warn hook does not escape either
  const log = new RecordLog(throwing, "logs", 1000, { warn: boom });
  log.write(rec("root", 0));
  await log.flush();
});

Deno.test("RecordLog drops records with unsafe paths or lines too long for half the cap, with a warning", async () => {
  const s = new MemoryStorage();
  const warnings: string[] = [];
  const log = new RecordLog(s, "logs", 400, { warn: (m) => warnings.push(m) });
  log.write(rec("root/../escape", 0));
  log.write(rec("/etc/passwd", 0));
  log.write(rec("root", 0, 300)); // > 200 bytes
  log.write(rec("root", 1));
  await log.flush();
  assertEquals([...s.files.keys()], ["logs/root.log"]);
  assertEquals(seqs(s, "logs/root.log"), [1]);
  assertEquals(warnings.length, 3, warnings.join(" | "));
  assert(warnings[0].includes("root/../escape"), warnings[0]);
});

Deno.test("RecordLog: an error mid-run is reported once and writing resumes when storage recovers", async () => {
  const s = new MemoryStorage();
  let fail = false;
  const flaky: FileStore = Object.assign(Object.create(s), {
    append: (p: string, d: Uint8Array | string) => (fail ? Promise.reject(new Error("EIO")) : s.append(p, d)),
  });
  const warnings: string[] = [];
  const log = new RecordLog(flaky, "logs", 1 << 20, { warn: (m) => warnings.push(m) });
  log.write(rec("root", 0));
  await log.flush();
  fail = true;
  log.write(rec("root", 1));
  log.write(rec("root", 2));
  await log.flush();
  fail = false;
  log.write(rec("root", 3));
  await log.flush();
  assertEquals(seqs(s, "logs/root.log"), [0, 3]);
  assertEquals(warnings.length, 1);
});

Deno.test("RecordLog on Deno's file system: nested node files, rotation, dotted host names", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const log = new RecordLog(new FsStorage(dir), "rec", 600, { warn: () => {} });
    for (let i = 0; i < 40; i++) log.write(rec("root/node.a/rank1", i, 20));
    await log.flush();
    const active = await Deno.stat(`${dir}/rec/root/node.a/rank1.log`);
    const older = await Deno.stat(`${dir}/rec/root/node.a/rank1.log.1`);
    assert(active.size <= 300 && older.size <= 300, `${active.size}, ${older.size}`);
    const last = (await Deno.readTextFile(`${dir}/rec/root/node.a/rank1.log`)).trim().split("\n").at(-1)!;
    assertEquals((parseRecord(last) as InteriorRecord).metrics.seq, 39);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
