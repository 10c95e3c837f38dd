/**
 * Memory over a long run (bench/README.md "Memory"): process RSS, JS heap and the engine's
 * GPU bytes every `--every` steps, and how much RSS grew from step `--warm` to the end.
 *
 *   deno run -A --no-check bench/memory.ts engine  [--steps 10000] [--every 1000] [--warm 2000]
 *   deno run -A --no-check bench/memory.ts trainer [--steps 10000] [--every 1000] [--warm 2000] [--subset 12800] [--collect N] [--smaps]
 *   deno run -A --no-check bench/memory.ts engine --model char-rnn [--epochs 50] [--subset 256] [--seq 16] [--batch 32]
 *     [--val 64] [--warm-epochs 10] [--rss-allowance-mib 5] [--heap-allowance-mib 2] [--collect N] [--out f.json]
 *
 * `engine --model char-rnn`: ddp-bench's char-rnn on a Brown Corpus subset, one sample per
 * epoch, the least-squares trend after warm-up and the verdict; exits 1 when something grows
 * (charRnnEngine below).
 * `engine`: one process, no workers, the plain loop of examples/mnist_mlp.ts (MNIST batches of
 * 64 through toDevice, MLP 784-256-10, cross-entropy, Adam 1e-3, loss read one step behind).
 * `trainer`: what `npm start` runs, 2 ranks (Web Workers, each its own GPUDevice) in this
 * process, cpu-cadence, bf16 wire, an eval after every epoch; `--steps` counts steps per
 * rank. Ranks are threads of this process, so its RSS covers the coordinator and every rank;
 * each rank's own JS heap and external (ArrayBuffer) bytes arrive as epoch scalars
 * (bench/memory_program.ts), next to the coordinator's and the epoch's reduces. The growth
 * figure ends at the last sample taken while training (join adds a one-off bump: the final
 * exact reduce, the last eval, teardown). `--collect N`: the coordinator also runs a major
 * collection every N batch events (the bisection in bench/README.md "Memory"). `--smaps` (Linux):
 * which mappings of the process grew from step `--warm` to the last sample (/proc/self/smaps).
 * bench/memory_raw.ts isolates the engine's cause: Deno frees WebGPU objects only when V8
 * collects them; bench/memory_worker.ts the cost of the rank ↔ coordinator messages.
 */
import {
  Adam,
  crossEntropy,
  loadBrown,
  RMSprop,
  Device,
  ElCheConfig,
  loadMnist,
  observe,
  permutation,
  setProgramArgs,
  toDevice,
  Variable,
} from "../src/index.ts";
import type { RunEpochMetrics } from "../src/index.ts";
import { collectGarbage, loadCollector } from "../src/gpu/collect.ts";
import { messageCollections } from "../src/distributed/coordinator/transport/rank_client.ts";
import { exitNow } from "../examples/exit.ts";
import { charRnn, mlp } from "../src/zoo/mod.ts";
import { meanLoss, nextCharLoss, spreadSubset } from "../src/zoo/mod.ts";
import { arg, flag } from "./flags.ts";
import { flatVerdict } from "./memory_trend.ts";


const mode = Deno.args[0];
if (mode !== "engine" && mode !== "trainer") {
  throw new RangeError(
    `bench/memory.ts: the first argument must be "engine" or "trainer", got ${JSON.stringify(mode)}`,
  );
}
const MODEL = arg("model", "mlp");
if (MODEL !== "mlp" && MODEL !== "char-rnn") {
  throw new RangeError(`bench/memory.ts: --model must be mlp or char-rnn, got ${JSON.stringify(MODEL)}`);
}
if (MODEL === "char-rnn" && mode !== "engine") {
  throw new RangeError(`bench/memory.ts: --model char-rnn runs in the engine mode only, got ${JSON.stringify(mode)}`);
}
const STEPS = flag("steps", 10_000);
const EVERY = flag("every", 1000);
const WARM = flag("warm", 2000);
const B = 64;
const MiB = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** One row of the curve: RSS and heap of this process, plus what the mode adds. */
function sample(step: number, extra: string): number {
  const m = Deno.memoryUsage();
  console.log(
    `${String(step).padStart(6)}  rss ${MiB(m.rss).padStart(6)} MiB  heap ${MiB(m.heapUsed).padStart(5)} of ${MiB(m.heapTotal).padStart(5)} MiB  external ${MiB(m.external).padStart(5)} MiB  ${extra}`,
  );
  return m.rss;
}

/** Resident KiB of each mapping of this process (Linux), by start address, with its size and name. */
function mappings(): Map<string, { kb: number; sizeKb: number; name: string }> {
  const out = new Map<string, { kb: number; sizeKb: number; name: string }>();
  let cur: { kb: number; sizeKb: number; name: string } | undefined;
  for (const line of Deno.readTextFileSync("/proc/self/smaps").split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const sizeKb = (parseInt(head[2], 16) - parseInt(head[1], 16)) / 1024;
      out.set(head[1], cur = { kb: 0, sizeKb, name: head[3] || "anon" });
    } else if (cur && line.startsWith("Rss:")) cur.kb = parseInt(line.slice(4));
  }
  return out;
}

/**
 * Where RSS grew between two `mappings()`: by kind (brk heap, anonymous mappings by size,
 * files), and the anonymous mappings that grew most (glibc's thread arenas are 64 MiB
 * reservations, V8's pages 256 KiB–few MiB).
 */
function smapsGrowth(a: ReturnType<typeof mappings>, b: ReturnType<typeof mappings>): void {
  const kind = (m: { sizeKb: number; name: string }) =>
    m.name !== "anon" ? (m.name.startsWith("/") ? "files" : m.name) : m.sizeKb >= 32768 ? "anon >= 32 MiB" : m.sizeKb >= 1024 ? "anon 1–32 MiB" : "anon < 1 MiB";
  const byKind = new Map<string, number>(), grew: [string, number, number][] = [];
  for (const [addr, m] of b) {
    const d = m.kb - (a.get(addr)?.kb ?? 0);
    byKind.set(kind(m), (byKind.get(kind(m)) ?? 0) + d);
    if (m.name === "anon") grew.push([addr, d, m.sizeKb]);
  }
  for (const [addr, m] of a) {
    if (!b.has(addr)) byKind.set(kind(m), (byKind.get(kind(m)) ?? 0) - m.kb);
  }
  console.log(`smaps growth by kind, MiB: ${[...byKind].filter(([, d]) => d !== 0).map(([k, d]) => `${k} ${(d / 1024).toFixed(1)}`).join(", ")}`);
  grew.sort((x, y) => y[1] - x[1]);
  console.log(`most grown anonymous mappings: ${grew.slice(0, 6).map(([addr, d, size]) => `${addr} +${(d / 1024).toFixed(1)} MiB of ${(size / 1024).toFixed(0)} MiB`).join(", ")}`);
}

function summary(rssWarm: number | undefined, rssEnd: number, steps: number): void {
  if (rssWarm === undefined) return console.log(`fewer than --warm ${WARM} steps: no growth figure`);
  const grew = rssEnd - rssWarm;
  console.log(
    `RSS from step ${WARM} to ${steps}: ${grew >= 0 ? "+" : ""}${MiB(grew)} MiB over ${steps - WARM} steps ` +
      `(${(grew / (steps - WARM) / 1024).toFixed(2)} KiB/step)`,
  );
}

async function engine(): Promise<void> {
  const device = await Device.request({ label: "memory" });
  const train = await loadMnist({ split: "train", normalize: true });
  const model = mlp(device);
  const opt = new Adam(model.parameters(), { lr: 1e-3 });
  const perEpoch = Math.floor(train.len() / B);
  console.log(
    `bench/memory engine: MNIST MLP, batch ${B}, ${STEPS} steps, ${
      device.info.description || device.info.architecture
    }`,
  );
  let pending: Promise<ArrayLike<number>> | undefined,
    perm = permutation(7, 0, train.len()),
    rssWarm: number | undefined,
    rss = 0;
  for (let step = 1; step <= STEPS; step++) {
    const s = (step - 1) % perEpoch;
    if (s === 0) perm = permutation(7, Math.floor((step - 1) / perEpoch), train.len());
    const [x, y] = toDevice(train.getBatch(Array.from(perm.subarray(s * B, (s + 1) * B))), device);
    const loss = crossEntropy(model.forward(new Variable(x)), y);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    const read = loss.data.toArray();
    device.endStep();
    if (pending) await pending;
    pending = read;
    if (step % EVERY === 0 || step === WARM) {
      const m = device.memory();
      rss = sample(
        step,
        `gpu ${MiB(m.totalBytes)} MiB  bind groups ${m.bindGroupsCreated ?? "-"}  collections ${m.collections ?? "-"}`,
      );
      if (step === WARM) rssWarm = rss;
    }
  }
  await pending;
  summary(rssWarm, rss, STEPS);
}

async function trainer(): Promise<void> {
  const subset = flag("subset", 12_800), ranks = 2;
  setProgramArgs({ subset, testSubset: 2000 });
  const { builder } = await import("./memory_program.ts");
  const perRankEpoch = Math.floor(subset / B / ranks);
  const epochs = Math.ceil(STEPS / perRankEpoch) + 1;
  console.log(
    `bench/memory trainer: MNIST MLP, ${ranks} ranks, ${subset} samples, batch ${B}, ${epochs} epochs (~${STEPS} steps/rank)`,
  );
  builder.batchSize(B).numEpochs(epochs).elche(ElCheConfig.defaultFor("cpu-cadence")).bf16Wire(true)
    .cluster({ ranks: Array.from({ length: ranks }, () => ({})) });
  const steps = new Array<number>(ranks).fill(0);
  const smaps = Deno.args.includes("--smaps") && Deno.build.os === "linux";
  const collectEvery = Deno.args.includes("--collect") ? flag("collect", 1) : 0;
  if (collectEvery && !(await loadCollector())) throw new Error("bench/memory.ts: --collect needs node:v8 / node:vm");
  let events = 0, coordCollections = 0;
  let last = 0, next = EVERY, rssWarm: number | undefined, rss = 0, warmDone = false;
  let mapsWarm: ReturnType<typeof mappings> | undefined, mapsLast: ReturnType<typeof mappings> | undefined;
  observe(builder, {
    batch: (e) => {
      steps[e.rank]++;
      if (collectEvery && ++events % collectEvery === 0 && collectGarbage()) coordCollections++;
      const done = Math.min(...steps);
      // Both RSS readings before /proc/self/smaps is read: its text is a few MiB of heap.
      const sampled = done < STEPS && done >= next, warmNow = !warmDone && done >= WARM;
      if (sampled) {
        rss = sample(done, `steps per rank [${steps}]  coordinator collections ${coordCollections} (--collect) + ${messageCollections()} (RankClient)`);
        last = done;
        next += EVERY;
      }
      if (warmNow) {
        rssWarm = sampled ? rss : Deno.memoryUsage().rss;
        warmDone = true;
      }
      if (smaps && sampled) mapsLast = mappings();
      if (smaps && warmNow) mapsWarm = sampled ? mapsLast : mappings();
    },
  });
  const handle = await builder.run();
  for await (const m of handle) {
    const per = (m as RunEpochMetrics).perRank,
      each = (k: string, d: number) => per.map((s) => (s[k] ?? NaN).toFixed(d)).join(", ");
    const gpu = (await handle.memory()).map((g) => (g ? MiB(g.totalBytes) : "-")).join(", ");
    const run = m as RunEpochMetrics, here = Deno.memoryUsage();
    console.log(
      `  epoch ${run.epoch}: rss ${MiB(here.rss)} MiB, coordinator external ${MiB(here.external)} MiB, ` +
        `reduces ${run.reduces} of ${(run.wireBytesPerReduce / 1024).toFixed(0)} KiB, ` +
        `rank JS heaps [${each("heapMiB", 1)}] of [${each("heapTotalMiB", 1)}] MiB, rank external [${each("externalMiB", 1)}] MiB, GPU bytes [${gpu}] MiB, ` +
        `bind groups [${each("bindGroups", 0)}], collections [${each("collections", 0)}]`,
    );
  }
  await handle.join();
  // The last sample taken while training: after join() the final exact reduce, the last
  // eval and the workers' teardown add a one-off bump that is not growth per step.
  summary(rssWarm, rss, last);
  if (mapsWarm && mapsLast) smapsGrowth(mapsWarm, mapsLast);
  sample(Math.min(...steps), `steps per rank [${steps}] (after join, not in the growth figure)`);
}

/**
 * `engine --model char-rnn`: ddp-bench's char-rnn (src/zoo/models.ts: Embedding 128, two
 * LSTM layers of 256, Dropout 0.2, Linear) with RMSprop 2e-3 and next-character CE, the plain
 * engine loop (loss read one step behind), on `--subset` Brown Corpus training sequences of
 * `--seq` characters (spread over the split), batch `--batch`, `--epochs` epochs, the
 * validation CE on `--val` sequences after every epoch. One sample per epoch (after its
 * eval): RSS, JS heap, the pool's GPU bytes; then the least-squares trend of each over the
 * epochs from `--warm-epochs` on, and the verdict (bench/memory_trend.ts).
 */
async function charRnnEngine(): Promise<void> {
  const epochs = flag("epochs", 50), batch = flag("batch", 32), seqLen = flag("seq", 16);
  const subset = flag("subset", 256), valN = flag("val", 64), warm = flag("warm-epochs", 10);
  const rssAllowMiB = flag("rss-allowance-mib", 5), heapAllowMiB = flag("heap-allowance-mib", 2);
  const collectEvery = Deno.args.includes("--collect") ? flag("collect", 1) : 0;
  if (collectEvery && !(await loadCollector())) throw new Error("bench/memory.ts: --collect needs node:v8 / node:vm");
  let stepsDone = 0, ownCollections = 0;
  const device = await Device.request({ label: "memory" });
  const corpus = await loadBrown({ seqLen });
  const train = spreadSubset(corpus.train, subset, "--subset (train sequences)");
  const val = spreadSubset(corpus.validation, valN, "--val (validation sequences)");
  const model = charRnn(device, corpus.vocab.size);
  const opt = new RMSprop(model.parameters(), { lr: 2e-3 });
  const perEpoch = Math.floor(subset / batch);
  if (perEpoch < 1) throw new RangeError(`bench/memory.ts: --subset ${subset} holds no full batch of --batch ${batch}`);
  const load0 = Deno.loadavg();
  console.log(
    `bench/memory engine --model char-rnn: ${subset} train sequences of ${seqLen} (vocab ${corpus.vocab.size}), batch ${batch}, ` +
      `${perEpoch} steps/epoch, ${epochs} epochs, validation CE on ${valN}; ${device.info.description || device.info.architecture}; ` +
      `load ${load0.map((v) => v.toFixed(2)).join(" ")}`,
  );
  const rows: { epoch: number; rss: number; heapUsed: number; heapTotal: number; external: number; gpuLive: number; gpuPooled: number; bindGroups: number; collections: number; trainLoss: number; valCe: number; s: number }[] = [];
  const t0 = performance.now();
  for (let epoch = 0; epoch < epochs; epoch++) {
    const te = performance.now();
    const perm = permutation(7, epoch, subset);
    let pending: Promise<ArrayLike<number>> | undefined, sum = 0;
    for (let s = 0; s < perEpoch; s++) {
      const b = toDevice(train.getBatch(Array.from(perm.subarray(s * batch, (s + 1) * batch))), device);
      const loss = nextCharLoss(model, b);
      loss.backward();
      opt.step();
      opt.zeroGrad();
      const read = loss.data.toArray();
      device.endStep();
      if (pending) sum += (await pending)[0];
      pending = read;
      if (collectEvery && ++stepsDone % collectEvery === 0 && collectGarbage()) ownCollections++;
    }
    if (pending) sum += (await pending)[0];
    const valCe = await meanLoss(model, val, nextCharLoss, batch);
    const m = Deno.memoryUsage(), g = device.memory();
    const row = {
      epoch,
      rss: m.rss,
      heapUsed: m.heapUsed,
      heapTotal: m.heapTotal,
      external: m.external,
      gpuLive: g.liveBytes,
      gpuPooled: g.pooledBytes,
      bindGroups: g.bindGroupsCreated,
      collections: g.collections,
      trainLoss: sum / perEpoch,
      valCe,
      s: (performance.now() - te) / 1000,
    };
    rows.push(row);
    console.log(
      `epoch ${String(epoch).padStart(2)}  rss ${MiB(row.rss).padStart(6)} MiB  heap ${MiB(row.heapUsed).padStart(5)} of ${MiB(row.heapTotal).padStart(5)} MiB  ` +
        `external ${MiB(row.external).padStart(5)} MiB  gpu live ${row.gpuLive} + pooled ${row.gpuPooled} B  bind groups ${row.bindGroups}  ` +
        `collections ${row.collections}${collectEvery ? ` + ${ownCollections} (--collect)` : ""}  submits ${device.submits}  loss ${row.trainLoss.toFixed(3)}  val CE ${row.valCe.toFixed(3)}  ${row.s.toFixed(1)} s`,
    );
  }
  const ep = rows.map((r) => r.epoch), MB = 2 ** 20;
  const trends = [
    flatVerdict("rss", ep, rows.map((r) => r.rss), warm, rssAllowMiB * MB),
    flatVerdict("heap", ep, rows.map((r) => r.heapUsed), warm, heapAllowMiB * MB),
    // The pool's bytes are exact: any growth after warm-up is a leak (allowance: one byte).
    flatVerdict("gpu", ep, rows.map((r) => r.gpuLive + r.gpuPooled), warm, 1),
  ];
  const load1 = Deno.loadavg();
  console.log(`trend over epochs ${warm}..${epochs - 1} (least squares; allowance on the fitted growth):`);
  for (const t of trends) {
    console.log(
      `  ${t.name.padEnd(4)} slope ${(t.slopePerEpoch / 1024).toFixed(2)} KiB/epoch, fitted growth ${(t.fittedGrowth / MB).toFixed(2)} MiB ` +
        `(end to end ${(t.endToEnd / MB).toFixed(2)} MiB), allowance ${(t.allowance / MB).toFixed(2)} MiB: ${t.flat ? "flat" : "GROWS"}`,
    );
  }
  const flat = trends.every((t) => t.flat);
  console.log(`verdict: ${flat ? "FLAT" : "GROWS"}; ${((performance.now() - t0) / 60000).toFixed(1)} min, load after ${load1.map((v) => v.toFixed(2)).join(" ")}`);
  const out = arg("out", "");
  if (out) {
    const scale = { epochs, batch, seqLen, subset, val: valN, warm, vocab: corpus.vocab.size };
    Deno.writeTextFileSync(out, JSON.stringify({ date: new Date().toISOString(), runtime: `deno ${Deno.version.deno}`, adapter: device.info, scale, load: { before: load0, after: load1 }, rows, trends, flat }, null, 2) + "\n");
  }
  if (!flat) exitNow(1);
}

if (MODEL === "char-rnn") await charRnnEngine();
else if (mode === "engine") await engine();
else await trainer();
exitNow(0); // Deno 2.9 sometimes segfaults tearing down after many WebGPU devices (examples/exit.ts)
