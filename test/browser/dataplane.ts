/**
 * The data plane and the nccl-* isolation check in Chromium, driven by dataplane.spec.ts:
 * `?check=<name>&pack=<url>` runs one check and leaves `window.__dataplane` =
 * { done, ok, error?, info }. The pack is the tiny program's blobs (test/util/write_tiny_pack.ts), which
 * Vite serves with Range support; rank workers read it by byte ranges
 * (test/fixtures/programs/tiny_pack.ts).
 *
 * - `range`: openRangedUrl + PackSource in the page read the exact bytes of the blobs; a
 *   server that ignores Range (the spec routes `/no-range/...` to one) and a missing file
 *   fail naming the URL and what is wrong.
 * - `tiers`: 2 rank workers train from the pack through a RAM cache too small for their
 *   share and a disk stage on OPFS (sync access handles in the workers): the same epoch
 *   losses and final parameters as from memory, every sample once per epoch, every tier
 *   busy in the record stream's counters, the stage files there during the run and gone
 *   after it.
 * - `vram`: one rank from the pack with vramPool on: epoch 0 uploads, later epochs gather
 *   every batch on the device, the same losses as from memory.
 * - `quota`: (the spec shrinks the origin's quota first) diskStage asks more than the quota
 *   leaves: the ranks warn naming diskStage (the spec reads the workers' console) and train
 *   exactly as from memory, evicted samples coming from the source again.
 * - `unwritable`: a diskStageDir OPFS cannot create fails run() naming diskStageDir.
 * - `no-isolation`: (the spec serves this page without COOP/COEP) nccl-sync fails run()
 *   naming crossOriginIsolated and both headers.
 */
import { ElCheConfig, openRangedUrl, PackSource, permutation, type RunEpochMetrics, setProgramArgs, type TrainedState } from "../../src/index.ts";
import { observe } from "../../src/distributed/run/builder.ts";
import { blobs } from "../fixtures/programs/tiny.ts";

const q = new URLSearchParams(location.search);
const check = q.get("check") ?? "";
const packUrl = q.get("pack") ?? "";
const state: { done: boolean; ok?: boolean; error?: string; info: Record<string, unknown> } = { done: false, info: {} };
(globalThis as unknown as { __dataplane: typeof state }).__dataplane = state;
const log = document.getElementById("log")!;
const say = (s: string) => (log.textContent += `\n${s}`);

class Failed extends Error {}
function assert(cond: unknown, msg: string): asserts cond {
  if (!cond) throw new Failed(msg);
}
function eq(got: unknown, want: unknown, label: string): void {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  assert(g === w, `${label}: got ${g}, want ${w}`);
}
async function rejects(fn: () => Promise<unknown>, ...fragments: string[]): Promise<string> {
  try {
    await fn();
  } catch (e) {
    const m = String((e as Error)?.message ?? e);
    for (const f of fragments) assert(m.includes(f), `error ${JSON.stringify(m)} lacks ${JSON.stringify(f)}`);
    return m;
  }
  throw new Failed(`expected a rejection mentioning ${fragments.join(", ")}`);
}

const N = 768, B = 16, EPOCHS = 3;
/** The tiny program's record: 7 f32 features and an i32 label. */
const RECORD = 7 * 4 + 4;

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
const plane = (m: RunEpochMetrics, key: string) => sum((m.perRankData ?? []).map((d) => d[key] ?? 0));
function flat(s: TrainedState): number[] {
  return [...s.params.values()].flatMap((p) => [...p.data]);
}

/** Every file under an OPFS folder (relative paths, sorted); [] when the folder is missing. */
async function opfsFiles(root: string): Promise<string[]> {
  let dir = await navigator.storage.getDirectory();
  try {
    for (const p of root.split("/")) dir = await dir.getDirectoryHandle(p);
  } catch {
    return [];
  }
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

interface Trained {
  losses: number[];
  params: number[];
  history: RunEpochMetrics[];
  /** The stage folder's files seen while the run trained (stage names without their random suffix). */
  during: string[];
  /** Per rank, every batch's loss in order; the chunks as [epoch, rank, offset, size] in arrival order. */
  rankLosses: number[][];
  chunks: number[][];
  reduces: string[];
}

/**
 * Train the tiny program with 2 rank workers (or `ranks`), cpu-sync with a static split and
 * an f32 wire (one schedule whatever the timing), from the pack when `pack`, else from memory; every
 * sample must be trained once per epoch (the coordinator's ledger).
 */
async function train(pack: boolean, tune: (b: any) => any, stageRoot?: string, ranks = 2): Promise<Trained> {
  setProgramArgs(pack ? { packUrl } : {});
  const { tinyPack } = await import("../fixtures/programs/tiny_pack.ts");
  const ledger = Array.from({ length: EPOCHS }, () => new Uint8Array(N));
  let during: Promise<string[]> | undefined;
  let batches = 0;
  const rankLosses: number[][] = [[], []], chunks: number[][] = [], reduces: string[] = [];
  say(`train ${pack ? "from the pack" : "from memory"}: starting`);
  // One rank trains on this page with the page's copy of the program, whose dataset is
  // whichever its first import chose: set it. (Rank workers import it with their own args.)
  const one = ranks === 1 ? [pack ? await PackSource.open(await openRangedUrl(packUrl)) : blobs()] : [];
  const b = tune(
    (one.length ? tinyPack.clone().dataset(one[0]) : tinyPack.clone()).elche(ElCheConfig.cpuSync()).partitionRatios(ranks === 2 ? [0.5, 0.5] : [1]).bf16Wire(false).lrScaleRatio(0)
      .batchSize(B).numEpochs(EPOCHS).heartbeatTimeoutSecs(60).cluster({ ranks: Array.from({ length: ranks }, () => ({})) }),
  );
  observe(b, {
    reduce: (e: { round: number; epoch: number; steps: number[]; anchor: number }) => void reduces.push(`${e.round}:${e.epoch}:${e.steps}:${e.anchor}`),
    chunk: (e: number, r: number, o: number, n: number) => {
      chunks.push([e, r, o, n]);
      const perm = permutation(42, e, N);
      for (let i = o; i < o + n; i++) ledger[e][perm[i]]++;
    },
    // Late in the run both ranks have staged: list the stage folder once.
    batch: (e: { epoch: number; rank: number; loss: number }) => {
      rankLosses[e.rank].push(e.loss);
      if (++batches % 12 === 0) say(`  ${batches} batches (epoch ${e.epoch})`);
      if (stageRoot && e.epoch === EPOCHS - 1 && !during) during = opfsFiles(stageRoot);
    },
  });
  const h = await b.run();
  const params = flat(await h.join());
  // (One rank trains in the page's own loop, without chunks: its batch counts are checked instead.)
  if (ranks > 1) ledger.forEach((c, e) => {
    const bad = [...c.keys()].filter((i) => c[i] !== 1);
    assert(bad.length === 0, `epoch ${e}: ${bad.length} samples not trained exactly once (first ${bad[0]}: ${c[bad[0]]} times)`);
  });
  const history = h.history as RunEpochMetrics[];
  eq(history.length, EPOCHS, "epochs");
  const files = (await during) ?? [];
  return {
    losses: history.map((m) => m.avgLoss),
    params,
    history,
    during: files.map((f) => f.replace(/^flodl-stage-\w+/, "flodl-stage")),
    rankLosses,
    chunks,
    reduces,
  };
}

/** The pack run trained exactly what the memory run trained. */
function sameTraining(got: Trained, want: Trained, label: string): void {
  eq(got.losses, want.losses, `${label}: epoch losses vs memory`);
  const bad = got.params.findIndex((v, i) => !Object.is(v, want.params[i]));
  assert(bad < 0 && got.params.length === want.params.length, `${label}: parameter ${bad} ${got.params[bad]} vs memory ${want.params[bad]}`);
}

/** The tiers served every trained sample exactly once, each from one of them. */
function servedOnce(h: RunEpochMetrics[], label: string): void {
  for (const m of h) {
    const served = plane(m, "data_ram_hits") + plane(m, "data_disk_hits") + plane(m, "data_source_reads");
    eq(served, sum(m.perRankSamples), `${label}: epoch ${m.epoch}, samples served by the tiers vs trained`);
  }
}

const checks: Record<string, () => Promise<void>> = {
  /** Nothing: the spec opens the page to act on its origin (the quota). */
  async none() {},

  async range() {
    const file = await openRangedUrl(packUrl);
    const head = await fetch(packUrl, { method: "HEAD" });
    eq(file.size, Number(head.headers.get("content-length")), "size from HEAD");
    const src = await PackSource.open(file);
    eq(src.len(), N, "samples");
    eq(src.fields.map((f) => [f.dtype, f.shape]), [["f32", [7]], ["i32", []]], "fields");
    const want = blobs();
    // Shuffled, with repeats and a run of neighbours (coalesced into one Range request).
    const idx = [767, 0, 5, 6, 7, 8, 5, 400, 399, 123];
    const got = await src.readBatch(idx), exp = want.getBatch(idx);
    got.forEach((f, k) => {
      const a = new Uint32Array(f.data.buffer), b = new Uint32Array(exp[k].data.buffer, exp[k].data.byteOffset, exp[k].data.length);
      const bad = a.findIndex((v, i) => v !== b[i]);
      assert(bad < 0 && a.length === b.length, `field ${k} differs at ${bad}`);
    });
    await rejects(() => file.read(file.size - 3, 4), "cannot read 4 bytes", String(file.size));
    // A server that ignores Range answers 200 with the whole file: refused, naming the URL.
    const plain = new URL(packUrl.replace(/^\/?/, "/no-range/"), location.href).href;
    state.info.rangeError = await rejects(async () => PackSource.open(await openRangedUrl(plain)), plain, "HTTP 200", "Range");
    // (The spec routes /missing/ to 404: Vite's SPA fallback answers unknown paths with its index page.)
    const missing = new URL("/missing/none.safetensors", location.href).href;
    state.info.missingError = await rejects(() => openRangedUrl(missing), missing, "HTTP 404");
  },

  async tiers() {
    const root = `flodl-test-stage-${crypto.randomUUID().slice(0, 8)}`;
    const memory = await train(false, (b) => b.vramPool(false));
    // Per rank: 100 samples of RAM (ramMaxUsage 0.5 of 200 declared) and 150 of disk, for a share of 384.
    const staged = await train(
      true,
      (b) =>
        b.vramPool(false).sampleCache(true).ramMaxUsage(0.5).diskStage(150 * RECORD / 2 ** 30).diskStageDir(root)
          .cluster({ ranks: [{ ramBytes: 200 * RECORD }, { ramBytes: 200 * RECORD }] }),
      root,
    );
    sameTraining(staged, memory, "RAM + disk stage");
    servedOnce(staged.history, "RAM + disk stage");
    const last = staged.history[EPOCHS - 1];
    for (const key of ["data_ram_hits", "data_disk_hits", "data_source_reads", "data_ram_evictions", "data_disk_spills", "data_disk_bytes"]) {
      assert(plane(last, key) > 0, `last epoch: ${key} is ${plane(last, key)}, expected > 0`);
    }
    assert(last.perRankData!.every((d) => d.data_ram_bytes <= 100 * RECORD), "RAM within its budget");
    assert(last.perRankData!.every((d) => d.data_disk_bytes <= 150 * RECORD), "disk within its budget");
    eq(plane(staged.history[0], "data_ram_hits") + plane(staged.history[0], "data_disk_hits"), 0, "epoch 0 reads everything from the source");
    eq(plane(last, "data_vram_gathered"), 0, "vramPool(false): nothing gathered on the device");
    eq(staged.during, ["flodl-stage/rank0.stage", "flodl-stage/rank1.stage"], "one OPFS stage file per rank during the run");
    eq(await opfsFiles(root), [], "the run's stage folder is removed at the end");
    state.info.counters = last.perRankData;
    await (await navigator.storage.getDirectory()).removeEntry(root, { recursive: true }).catch(() => {});
  },

  async vram() {
    // One rank: it trains every sample each epoch, so after epoch 0 the pool holds them all
    // (with 2 ranks each epoch's half is a new draw, and a batch with one new sample uploads).
    const memory = await train(false, (b) => b.vramPool(false), undefined, 1);
    const pooled = await train(true, (b) => b.vramPool(true).vramMaxUsage(0.9).sampleCache(true), undefined, 1);
    state.info.counters = pooled.history.map((m) => m.perRankData);
    sameTraining(pooled, memory, "vramPool");
    const perEpoch = N / B;
    const [e0, e1, e2] = pooled.history;
    eq([plane(e0, "data_vram_gathered"), plane(e0, "data_vram_uploaded")], [0, perEpoch], "epoch 0 uploads every batch");
    eq(plane(e0, "data_source_reads"), N, "epoch 0 reads every sample from the pack");
    for (const e of [e1, e2]) {
      eq([plane(e, "data_vram_gathered"), plane(e, "data_vram_uploaded")], [perEpoch, 0], `epoch ${e.epoch} gathers every batch on the device`);
      eq(plane(e, "data_source_reads") + plane(e, "data_ram_hits"), 0, `epoch ${e.epoch}: no host read`);
    }
    eq(plane(e2, "data_vram_resident"), N, "the whole set is resident");
    eq(plane(memory.history[1], "data_vram_gathered"), 0, "vramPool(false): no device pool");
  },

  async quota() {
    const { quota, usage } = await navigator.storage.estimate();
    state.info.quota = { quota, usage };
    const root = `flodl-test-stage-${crypto.randomUUID().slice(0, 8)}`;
    const memory = await train(false, (b) => b);
    const staged = await train(
      true,
      (b) =>
        b.vramPool(false).ramMaxUsage(0.5).diskStage(1).diskStageDir(root)
          .cluster({ ranks: [{ ramBytes: 200 * RECORD }, { ramBytes: 200 * RECORD }] }),
      root,
    );
    sameTraining(staged, memory, "diskStage past the quota");
    servedOnce(staged.history, "diskStage past the quota");
    const all = (key: string) => sum(staged.history.map((m) => plane(m, key)));
    assert(all("data_disk_drops") > 0, `evicted samples the stage could not keep are dropped (read from the source again): ${all("data_disk_drops")}`);
    eq(await opfsFiles(root), [], "the run's stage folder is removed at the end");
    state.info.counters = staged.history.at(-1)!.perRankData;
    await (await navigator.storage.getDirectory()).removeEntry(root, { recursive: true }).catch(() => {});
  },

  async unwritable() {
    setProgramArgs({});
    const { tinyPack } = await import("../fixtures/programs/tiny_pack.ts");
    // ".." is a name OPFS refuses to create.
    const b = tinyPack.clone().cluster({ ranks: [{}] }).batchSize(B).numEpochs(1).diskStage(0.001).diskStageDir("flodl-test/../x");
    state.info.error = await rejects(() => b.run(), "diskStageDir", `"flodl-test/../x"`, "OPFS");
    await rejects(() => tinyPack.clone().cluster({ ranks: [{}] }).batchSize(B).numEpochs(1).diskStage(-1).run(), "diskStage", "-1");
  },

  async "no-isolation"() {
    eq(globalThis.crossOriginIsolated, false, "this page is served without isolation");
    setProgramArgs({});
    const { tinyPack } = await import("../fixtures/programs/tiny_pack.ts");
    const b = tinyPack.clone().elche(ElCheConfig.ncclSync()).cluster({ ranks: [{}, {}] }).batchSize(B).numEpochs(1);
    state.info.error = await rejects(
      () => b.run(),
      "nccl-*",
      "crossOriginIsolated is false",
      "Cross-Origin-Opener-Policy: same-origin",
      "Cross-Origin-Embedder-Policy: require-corp",
    );
  },
};

(async () => {
  const fn = checks[check];
  if (!fn) throw new Error(`no check "${check}" (have ${Object.keys(checks).join(", ")})`);
  await fn();
})().then(
  () => {
    state.ok = true;
    say(`ok ${check}`);
  },
  (e) => {
    state.ok = false;
    state.error = String((e as Error)?.stack ?? e);
    say(`FAIL ${check}\n${state.error}`);
  },
).finally(() => (state.done = true));
