/**
 * A long run stays flat (faults issue): MNIST MLP, 2 ranks, 20 epochs on a subset;
 * each rank's GPU bytes (live + pooled) and the coordinator's heap measured at epochs 2
 * and 20. Deno only (the heap figure is Deno's).
 */
import { ElCheConfig, setProgramArgs } from "../../../src/index.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";

gpuTest("MNIST MLP, 2 ranks, 20 epochs: GPU memory and the coordinator's heap are flat between epochs 2 and 20", async () => {
  setProgramArgs({ train: 1280, test: 200 });
  const { mnist } = await import("../../fixtures/programs/mnist.ts");
  const gc = (globalThis as { gc?: () => void }).gc;
  const samples: { gpu: number[]; heap: number }[] = [];
  const h = await mnist.clone().elche(ElCheConfig.cpuCadence()).bf16Wire(true).batchSize(64).numEpochs(20)
    .cluster({ ranks: [{}, {}] })
    .metricsFn(async (m) => {
      if (m.epoch !== 1 && m.epoch !== 19) return;
      gc?.();
      const gpu = (await h.memory()).map((x) => x!.totalBytes);
      samples.push({ gpu, heap: Deno.memoryUsage().heapUsed });
    })
    .run();
  await h.join();
  setProgramArgs({});
  assertEquals(samples.length, 2, "measured at epochs 2 and 20");
  assertEquals(samples[1].gpu, samples[0].gpu, "each rank's GPU bytes (live + pooled) at epoch 20 vs 2");
  const growth = samples[1].heap - samples[0].heap;
  assert(growth < 8 * 2 ** 20, `coordinator heap grew by ${(growth / 2 ** 20).toFixed(1)} MiB between epochs 2 and 20 (limit 8 MiB)`);
});
