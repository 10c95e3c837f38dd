/**
 * The data plane's tiers side by side (bench/README.md "Data plane"): epoch time and the
 * time the trainer waited for data, on one device (the single-device path: no workers, no
 * reduces, so the data path is what differs), MNIST MLP 784-256-10, Adam 1e-3, batch 64.
 *
 *   deno run -A --no-check bench/dataplane.ts [--subset 12800] [--epochs 3] [--repeat 1] [--only http]
 *
 * Configurations, each a fresh run in this one process, in this order (`--repeat` runs the
 * whole list again, so drift across the sitting shows):
 * - memory, vramPool on / off: the in-memory MnistDataSet; on, epochs after the first gather
 *   batches on the device instead of uploading them.
 * - pack: the same subset written as a pack file and read by index (`PackSource` over the
 *   local file), vramPool off so the host tiers serve every batch:
 *   - `cache` (RAM holds the set): epochs after the first come from RAM;
 *   - `cold` (`sampleCache(false)`): every epoch streams from the file;
 *   - `small` (RAM for 25% of the set, no disk): the set does not fit the RAM budget;
 *   - `small+disk` (the same RAM, a disk stage for the rest);
 * - pack + vramPool on, all tiers: the first epoch reads the file, later ones gather on device;
 * - HTTP: the pack over Range requests (bench/range_server.ts, its own worker: a browser's
 *   path to the coordinator's data), streamed cold, and with RAM for 25% + a disk stage.
 * Printed: a markdown table, first epoch and mean of the later epochs, ms; data wait is the
 * trainer's `dataStarveMs` (waiting for a batch to be on the device).
 */
import {
  Adam,
  crossEntropy,
  loadMnist,
  manualSeed,
  openRangedFile,
  openRangedUrl,
  PackSource,
  type RunEpochMetrics,
  type Tensor,
  Trainer,
  Variable,
  writePack,
} from "../src/index.ts";
import { buildModel } from "../src/zoo/mod.ts";
import { flag } from "./flags.ts";


const ONLY = Deno.args.includes("--only") ? Deno.args[Deno.args.indexOf("--only") + 1] : undefined;
const N = flag("subset", 12800), EPOCHS = flag("epochs", 3), REPEAT = flag("repeat", 1), B = 64;
const RECORD = 784 * 4 + 4;

const memory = await loadMnist({ split: "train", limit: N, normalize: true });
const dir = await Deno.makeTempDir({ prefix: "flodl-bench-dataplane-" });
const packPath = `${dir}/mnist-${N}.safetensors`;
{
  const file = await Deno.open(packPath, { write: true, create: true, truncate: true });
  await writePack(memory, async (bytes) => {
    for (let done = 0; done < bytes.length;) done += await file.write(bytes.subarray(done));
  });
  file.close();
}

const base = Trainer.builder(
  (device) => {
    manualSeed(3);
    return buildModel("mlp", device);
  },
  (params) => new Adam(params, { lr: 1e-3 }),
  (model, [x, y]: Tensor[]) => crossEntropy(model.forward(new Variable(x)), y),
).batchSize(B).numEpochs(EPOCHS);

type Tune = (b: typeof base) => typeof base;
/** RAM declared so that ramMaxUsage 0.5 of it holds `share` of the set. */
const ram = (share: number) => ({ ranks: [{ ramBytes: Math.ceil(2 * share * N * RECORD) }] });

// The pack over HTTP Range requests from a server in its own worker (a browser's path).
const server = new Worker(new URL("./range_server.ts", import.meta.url), { type: "module" });
const port = await new Promise<number>((resolve) => {
  server.onmessage = (e) => resolve(e.data as number);
  server.postMessage(packPath);
});
const packUrl = `http://127.0.0.1:${port}/pack.safetensors`;

const CONFIGS: [string, "memory" | "pack" | "http", Tune][] = [
  ["memory, vramPool on", "memory", (b) => b.vramPool(true)],
  ["memory, vramPool off", "memory", (b) => b.vramPool(false)],
  ["pack, RAM cache holds the set", "pack", (b) => b.vramPool(false).cluster(ram(1.05))],
  ["pack, cold stream (sampleCache off)", "pack", (b) => b.vramPool(false).sampleCache(false)],
  ["pack, RAM for 25% of the set", "pack", (b) => b.vramPool(false).cluster(ram(0.25))],
  ["pack, RAM 25% + disk stage", "pack", (b) => b.vramPool(false).cluster(ram(0.25)).diskStage((N * RECORD) / 2 ** 30).diskStageDir(dir)],
  ["pack, all tiers + vramPool", "pack", (b) => b.vramPool(true).cluster(ram(0.25)).diskStage((N * RECORD) / 2 ** 30).diskStageDir(dir)],
  ["HTTP, cold stream (sampleCache off)", "http", (b) => b.vramPool(false).sampleCache(false)],
  ["HTTP, RAM 25% + disk stage", "http", (b) => b.vramPool(false).cluster(ram(0.25)).diskStage((N * RECORD) / 2 ** 30).diskStageDir(dir)],
];

interface Row {
  name: string;
  first: number;
  later: number;
  waitFirst: number;
  waitLater: number;
  tiers: string;
  loss: number;
}

async function measure(name: string, source: "memory" | "pack" | "http", tune: Tune): Promise<Row> {
  const dataset = source === "memory"
    ? memory
    : await PackSource.open(source === "pack" ? await openRangedFile(packPath) : await openRangedUrl(packUrl));
  const h = await tune(base.clone().dataset(dataset).cluster({ ranks: [{}] })).run();
  await h.join();
  if (dataset instanceof PackSource) dataset.file.close();
  const hist = h.history as RunEpochMetrics[];
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const later = hist.slice(1);
  const d = later.at(-1)?.perRankData?.[0] ?? {};
  const tiers = [
    d.data_vram_gathered ? `vram ${d.data_vram_gathered}/${d.data_vram_gathered + (d.data_vram_uploaded ?? 0)} batches` : "",
    d.data_ram_hits !== undefined ? `ram ${d.data_ram_hits}` : "",
    d.data_disk_hits ? `disk ${d.data_disk_hits}` : "",
    d.data_source_reads !== undefined ? `source ${d.data_source_reads}` : "",
  ].filter(Boolean).join(", ");
  return {
    name,
    first: hist[0].epochMs,
    later: mean(later.map((m) => m.epochMs)),
    waitFirst: hist[0].perRankDataStarveMs[0],
    waitLater: mean(later.map((m) => m.perRankDataStarveMs[0])),
    tiers: tiers || "–",
    loss: hist.at(-1)!.avgLoss,
  };
}

const rows: Row[] = [];
try {
  for (let r = 0; r < REPEAT; r++) {
    for (const [name, source, tune] of CONFIGS.filter(([n]) => !ONLY || n.startsWith(ONLY))) {
      const row = await measure(REPEAT > 1 ? `${name} (#${r + 1})` : name, source, tune);
      console.error(`${row.name}: first ${row.first.toFixed(0)} ms, later ${row.later.toFixed(0)} ms`);
      rows.push(row);
    }
  }
} finally {
  server.terminate();
  await Deno.remove(dir, { recursive: true });
}

const f = (x: number) => x.toFixed(0);
console.log(`MNIST subset ${N}, ${EPOCHS} epochs, batch ${B}, one device; ms per epoch (later = mean of epochs 2..${EPOCHS})\n`);
console.log("| configuration | epoch 1 | later epochs | data wait, epoch 1 | data wait, later | later epoch served by (samples) | final loss |");
console.log("|---|---:|---:|---:|---:|---|---:|");
for (const r of rows) {
  console.log(`| ${r.name} | ${f(r.first)} | ${f(r.later)} | ${f(r.waitFirst)} | ${f(r.waitLater)} | ${r.tiers} | ${r.loss.toFixed(4)} |`);
}
