/**
 * Stop and resume on MNIST: a 3-rank MLP run loses a worker in epoch 2 with
 * maxFailure(absolute(1)): the bundle says max_failure_exceeded and join() rejects saying
 * so; a second run loads the bundle in its factories (loadCheckpointFile, loadStateFile)
 * and resumes; over both runs every sample is trained once per epoch, and the final
 * accuracy is within 0.5 points of an uninterrupted run's. (Heartbeat 15 s: a cold 32×32 matmul
 * pipeline compiles for seconds on lavapipe, during which a rank cannot beat.)
 */
import { ElCheConfig, MaxFailureThreshold, permutation, readBundleMeta, setProgramArgs } from "../../../src/index.ts";
import { FsStorage } from "../../../src/io/mod.ts";
import { observe } from "../../../src/distributed/run/builder.ts";
import { assert, assertEquals, assertRejects } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";

// 12,480 = 65 batches of 64 per rank: the static split leaves no partial batch to drop.
const TRAIN = 12480, TEST = 10000, EPOCHS = 2, B = 64;

gpuTest("MNIST MLP: max_failure_exceeded bundle, resume in the factories, each sample once, accuracy within 0.5 points", async () => {
  const dir = await Deno.makeTempDir({ prefix: "flodl-resume-" });
  const stem = `${dir}/mlp`;
  try {
    const run = async (args: Record<string, unknown>, tune: (b: any) => any, ledger?: Uint8Array[]) => {
      setProgramArgs({ train: TRAIN, test: TEST, ...args });
      const { mnist } = await import("../../fixtures/programs/mnist.ts");
      // cpu-sync with a static split: one step per rank per reduce whatever the timing, so the
      // uninterrupted and the resumed run differ only by the failure, not by scheduling noise.
      const b = tune(mnist.clone().elche(ElCheConfig.cpuSync()).partitionRatios([1 / 3, 1 / 3, 1 / 3]).bf16Wire(true).batchSize(B).numEpochs(EPOCHS)
        .heartbeatTimeoutSecs(15).cluster({ ranks: [{}, {}, {}] }));
      if (ledger) {
        observe(b, {
          chunk: (e: number, _r: number, o: number, n: number) => {
            const perm = permutation(42, e, TRAIN);
            for (let i = o; i < o + n; i++) ledger[e][perm[i]]++;
          },
        });
      }
      return await b.run();
    };
    const last = (h: { evals: { value?: number }[] }) => h.evals.filter((e) => e.value !== undefined).at(-1)!.value!;

    // The reference: an uninterrupted run.
    const whole = await run({}, (b) => b);
    await whole.join();
    const want = last(whole);

    // Run 1: rank 2's worker vanishes in epoch 2.
    const ledger = Array.from({ length: EPOCHS }, () => new Uint8Array(TRAIN));
    const h1 = await run({ exitRank: 2, exitAt: 90 }, (b) => b.savePath(stem).maxFailure(MaxFailureThreshold.absolute(1)), ledger);
    await assertRejects(() => h1.join(), Error, "max_failure_exceeded", stem);
    const meta = await readBundleMeta(new FsStorage(dir), "mlp");
    assertEquals(meta.save_reason, "max_failure_exceeded", "bundle reason");
    // Keep only the work the bundle's consensus holds (run 1's ledger can include chunks after it).
    for (let e = 0; e < EPOCHS; e++) {
      const cov = meta.coverage!.per_epoch.find((c) => c.epoch === e);
      if (e >= meta.epoch && !cov) ledger[e].fill(0);
      if (!cov) continue;
      const perm = permutation(42, e, TRAIN);
      for (const [o, n] of cov.uncovered_ranges) for (let i = o; i < o + n; i++) ledger[e][perm[i]] = 0;
    }
    // Run 2: the factories load the bundle; the run continues from its trajectory.
    const h2 = await run({ load: stem }, (b) => b.savePath(stem).resumeFrom(stem), ledger);
    await h2.join();
    ledger.forEach((c, e) => {
      const bad = [...c.keys()].filter((i) => c[i] !== 1);
      assert(bad.length === 0, `epoch ${e}: ${bad.length} samples not trained exactly once`);
    });
    const got = last(h2);
    assert(Math.abs(got - want) <= 0.005, `resumed accuracy ${got} vs uninterrupted ${want}: more than 0.5 points apart`);
  } finally {
    setProgramArgs({});
    await Deno.remove(dir, { recursive: true });
  }
});
