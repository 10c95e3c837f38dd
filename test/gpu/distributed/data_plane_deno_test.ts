/**
 * The data-plane knobs in the trainer, on MNIST subsets:
 * - 2 ranks train the MLP from a pack file (a `PackSource`) through a RAM cache too small
 *   for their share and a disk stage: the same losses and accuracy as from memory (cpu-sync
 *   with a static split and an f32 wire, so both runs follow one schedule), every sample once
 *   per epoch (the coordinator's ledger, and the tiers' own count of what they served), every
 *   tier busy, and the run's stage folder gone at the end; also when a rank dies and the
 *   run stops with max_failure_exceeded (the dead rank never deletes its own file).
 * - One device: `vramPool` on and off (and `FLODL_VRAM_POOL=off`) train bit-identical losses;
 *   on, batches after the first epoch are gathered on the device.
 */
import {
  ElCheConfig,
  loadMnist,
  MaxFailureThreshold,
  type RunEpochMetrics,
  setProgramArgs,
  writePack,
} from "../../../src/index.ts";
import { observe } from "../../../src/distributed/run/builder.ts";
import { assert, assertEquals, assertRejects } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { Ledger } from "../../util/ledger.ts";

const TRAIN = 2000, TEST = 1000, EPOCHS = 2, B = 50;
/** MNIST's record: a 1×28×28 f32 image and an i32 label. */
const RECORD = 784 * 4 + 4;

async function writeMnistPack(path: string): Promise<void> {
  const ds = await loadMnist({ split: "train", limit: TRAIN, normalize: true });
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  try {
    await writePack(ds, async (bytes) => {
      for (let done = 0; done < bytes.length;) done += await file.write(bytes.subarray(done));
    }, 500);
  } finally {
    file.close();
  }
}

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
const plane = (m: RunEpochMetrics, key: string) => sum((m.perRankData ?? []).map((d) => d[key] ?? 0));

gpuTest("2 ranks train MNIST from a pack file through a small RAM cache and a disk stage as from memory; each sample once; the stage is removed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "flodl-dataplane-" });
  const pack = `${dir}/mnist-${TRAIN}.safetensors`;
  const stageDir = `${dir}/stage`;
  try {
    await writeMnistPack(pack);
    const run = async (args: Record<string, unknown>, tune: (b: any) => any) => {
      setProgramArgs({ test: TEST, ...args });
      const { mnistPack } = await import("../../fixtures/programs/mnist_pack.ts");
      const ledger = new Ledger(TRAIN, EPOCHS);
      const stages: string[][] = [];
      const b = tune(
        mnistPack.clone().elche(ElCheConfig.cpuSync()).partitionRatios([0.5, 0.5]).bf16Wire(false).lrScaleRatio(0)
          .batchSize(B).numEpochs(EPOCHS).heartbeatTimeoutSecs(20).cluster({ ranks: [{}, {}] }),
      ).metricsFn(() => {
        // What the stage folder holds while the run is on (the coordinator's view).
        const seen: string[] = [];
        const runs = (() => {
          try {
            return [...Deno.readDirSync(stageDir)];
          } catch {
            return []; // no stage in this run
          }
        })();
        for (const run of runs) {
          for (const f of Deno.readDirSync(`${stageDir}/${run.name}`)) seen.push(`${run.name.replace(/-\w+$/, "")}/${f.name}`);
        }
        stages.push(seen.sort());
      });
      observe(b, { chunk: ledger.chunk });
      const h = await b.run();
      await h.join();
      return { h, ledger, stages };
    };

    const memory = await run({ train: TRAIN }, (b) => b);
    // 300 samples of RAM and ~680 of disk per rank, for a share of 1000: every tier works.
    const streamed = await run(
      { pack },
      (b) =>
        b.vramPool(false).ramMaxUsage(0.5).diskStage(683 * RECORD / 2 ** 30).diskStageDir(stageDir)
          .cluster({ ranks: [{ ramBytes: 600 * RECORD }, { ramBytes: 600 * RECORD }] }),
    );

    memory.ledger.exactlyOnce("from memory");
    streamed.ledger.exactlyOnce("streamed");
    const h = streamed.h.history as RunEpochMetrics[];
    assertEquals(h.length, EPOCHS, "epochs");
    for (const m of h) {
      // The tiers served every sample trained, each from exactly one of them.
      const served = plane(m, "data_ram_hits") + plane(m, "data_disk_hits") + plane(m, "data_source_reads");
      assertEquals(served, sum(m.perRankSamples), `epoch ${m.epoch}: samples served by the tiers vs trained`);
      assert(m.perRankData!.every((d) => d.data_ram_bytes <= 300 * RECORD), `epoch ${m.epoch}: RAM within its budget`);
    }
    const last = h[EPOCHS - 1];
    for (const key of ["data_ram_hits", "data_disk_hits", "data_source_reads", "data_ram_evictions", "data_disk_spills", "data_disk_bytes"]) {
      assert(plane(last, key) > 0, `last epoch: ${key} is ${plane(last, key)}, expected > 0`);
    }
    assertEquals(plane(h[0], "data_ram_hits") + plane(h[0], "data_disk_hits"), 0, "epoch 0 reads everything from the source");
    assertEquals(plane(last, "data_vram_gathered"), 0, "vramPool(false): nothing gathered on the device");
    assertEquals(streamed.stages.at(-1), ["flodl-stage/rank0.stage", "flodl-stage/rank1.stage"], "one stage file per rank during the run");
    assertEquals([...Deno.readDirSync(stageDir)].length, 0, "the run's stage folder is removed at the end");

    // Same schedule, same bytes: the same training, whichever tier served a batch.
    const lossesOf = (r: typeof memory) => (r.h.history as RunEpochMetrics[]).map((m) => m.avgLoss);
    assertEquals(lossesOf(streamed), lossesOf(memory), "epoch losses from the pack equal those from memory");
    const acc = (r: typeof memory) => r.h.evals.filter((e: { value?: number }) => e.value !== undefined).at(-1)!.value!;
    assert(acc(memory) > 0.8, `accuracy from memory ${acc(memory)}`);
    assert(Math.abs(acc(streamed) - acc(memory)) <= 0.005, `accuracy from the pack ${acc(streamed)} vs memory ${acc(memory)}`);
  } finally {
    setProgramArgs({});
    await Deno.remove(dir, { recursive: true });
  }
});

gpuTest("one device: vramPool on and off (and FLODL_VRAM_POOL=off) give bit-identical losses; on, later epochs gather on the device", async () => {
  setProgramArgs({ train: TRAIN, test: TEST });
  const { mnistPack } = await import("../../fixtures/programs/mnist_pack.ts");
  // The program's own dataset is whichever its first import in this process chose: pin memory.
  const train = await loadMnist({ split: "train", limit: TRAIN, normalize: true });
  const run = async (tune: (b: any) => any) => {
    const losses: number[] = [];
    const b = tune(mnistPack.clone().dataset(train).batchSize(B).numEpochs(2).cluster({ ranks: [{}] }));
    observe(b, { batch: (e: { loss: number }) => void losses.push(e.loss) });
    const h = await b.run();
    await h.join();
    return { losses, history: h.history as RunEpochMetrics[] };
  };
  try {
    const on = await run((b) => b.vramPool(true));
    const off = await run((b) => b.vramPool(false));
    Deno.env.set("FLODL_VRAM_POOL", "off");
    const killed = await run((b) => b.vramPool(true)).finally(() => Deno.env.delete("FLODL_VRAM_POOL"));

    const perEpoch = Math.floor(TRAIN / B);
    assertEquals(on.losses.length, 2 * perEpoch, "batches");
    assertEquals(off.losses, on.losses, "vramPool off vs on: every batch loss bit for bit");
    assertEquals(killed.losses, on.losses, "FLODL_VRAM_POOL=off vs on: every batch loss bit for bit");
    const [e0, e1] = on.history.map((m) => m.perRankData![0]);
    assertEquals([e0.data_vram_gathered, e0.data_vram_uploaded], [0, perEpoch], "epoch 0 uploads every batch");
    assertEquals([e1.data_vram_gathered, e1.data_vram_uploaded], [perEpoch, 0], "epoch 1 gathers every batch on the device");
    assertEquals(e1.data_vram_resident, TRAIN, "the whole subset is resident");
    assertEquals(e1.data_ram_hits, undefined, "an in-memory dataset has no RAM tier");
    for (const r of [off, killed]) assertEquals(r.history[1].perRankData![0].data_vram_gathered, undefined, "no device pool");
  } finally {
    setProgramArgs({});
  }
});

gpuTest("a rank that dies with its stage file open: the run stops (maxFailure 1) and the stage folder is still removed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "flodl-dataplane-abort-" });
  const pack = `${dir}/mnist-${TRAIN}.safetensors`;
  const stageDir = `${dir}/stage`;
  try {
    await writeMnistPack(pack);
    setProgramArgs({ test: TEST, pack, exitRank: 1, exitAt: 15 });
    const { mnistPack } = await import("../../fixtures/programs/mnist_pack.ts");
    const b = mnistPack.clone().elche(ElCheConfig.cpuSync()).partitionRatios([0.5, 0.5]).batchSize(B).numEpochs(2)
      .heartbeatTimeoutSecs(20).maxFailure(MaxFailureThreshold.absolute(1)).cluster({ ranks: [{}, {}] })
      .vramPool(false).diskStage(0.01).diskStageDir(stageDir);
    let during: string[] = [];
    observe(b, {
      batch: () => {
        if (during.length) return;
        for (const run of Deno.readDirSync(stageDir)) during = [...Deno.readDirSync(`${stageDir}/${run.name}`)].map((f) => f.name).sort();
      },
    });
    const h = await b.run();
    await assertRejects(() => h.join(), Error, "max_failure_exceeded");
    assertEquals(during, ["rank0.stage", "rank1.stage"], "both ranks staged to disk while training");
    assertEquals([...Deno.readDirSync(stageDir)].length, 0, "the run's stage folder is removed after the failure");
  } finally {
    setProgramArgs({});
    await Deno.remove(dir, { recursive: true });
  }
});
