/**
 * Death at the barrier (NCCL): a rank that vanishes inside an nccl-* collective,
 * after writing its slot and before the first barrier, leaves its peers waiting there. The
 * coordinator learns it from the silence, aborts the group (the survivors return with
 * nothing changed), rebuilds it over the survivors with new numbering and retries the
 * reduce; the run completes with every sample trained exactly once per epoch. maxFailure
 * stops such a run with a bundle (the consensus read from the slab) that resumeFrom
 * continues under nccl-cadence.
 */
import { ElCheConfig, MaxFailureThreshold, readBundleMeta, setProgramArgs } from "../../../src/index.ts";
import { FsStorage } from "../../../src/io/mod.ts";
import { SAMPLES, tiny } from "../../fixtures/programs/tiny.ts";
import { assert, assertEquals, assertRejects } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { Ledger } from "../../util/ledger.ts";

const B = 16, EPOCHS = 3;

gpuTest("nccl-cadence, 3 ranks: rank 2 vanishes at the barrier; the survivors rebuild the group, retry the reduce and finish, every sample once per epoch", async () => {
  setProgramArgs({ faultRank: 2, faultAt: 8, fault: "exit-at-barrier" });
  const ledger = new Ledger(SAMPLES, EPOCHS);
  const lost: string[] = [], warnings: string[] = [];
  const reduces: { round: number; steps: number[] }[] = [];
  const b = tiny.clone().elche(ElCheConfig.ncclCadence()).bf16Wire(false).batchSize(B).numEpochs(EPOCHS).lrScaleRatio(0)
    .heartbeatTimeoutSecs(2).cluster({ ranks: [{}, {}, {}] });
  const { observe } = await import("../../../src/distributed/run/builder.ts");
  observe(b, {
    chunk: ledger.chunk,
    rankLost: (r, why) => lost.push(`${r}: ${why}`),
    reduce: (e) => reduces.push({ round: e.round, steps: [...e.steps] }),
  });
  const warn = console.warn;
  console.warn = (...a: unknown[]) => void warnings.push(a.join(" "));
  let state;
  try {
    const h = await b.run();
    state = await h.join();
  } finally {
    console.warn = warn;
    setProgramArgs({});
  }
  assertEquals(lost.length, 1, "one rank lost");
  assert(lost[0].startsWith("2: ") && /silent/.test(lost[0]), `loss reason: ${lost[0]}`);
  const retry = warnings.find((w) => /the collective was aborted \(rank 2 lost\); retrying over ranks 0, 1/.test(w));
  assert(retry, `the coordinator aborted and rebuilt the group; warnings: ${warnings.join(" | ")}`);
  const round = Number(/reduce (\d+)/.exec(retry!)![1]);
  const retried = reduces.find((r) => r.round === round);
  assert(retried && retried.steps[2] === 0 && retried.steps[0] > 0 && retried.steps[1] > 0, `reduce ${round} folded the survivors only: ${JSON.stringify(retried)}`);
  assert(state.params.size === 2, "the run finished with a consensus");
  ledger.exactlyOnce("exit-at-barrier");
});

function threeRanks() {
  return tiny.clone().elche(ElCheConfig.ncclCadence()).bf16Wire(false).batchSize(B).numEpochs(EPOCHS).lrScaleRatio(0)
    .heartbeatTimeoutSecs(2).cluster({ ranks: [{}, {}, {}] });
}

gpuTest("nccl-cadence: maxFailure(absolute(1)) after a death at the barrier writes a max_failure_exceeded bundle; resumeFrom finishes; each sample once per epoch over both runs", async () => {
  const dir = await Deno.makeTempDir({ prefix: "flodl-nccl-faults-" });
  const stem = `${dir}/ckpt`;
  const warn = console.warn;
  console.warn = () => {};
  try {
    const ledger = new Ledger(SAMPLES, EPOCHS);
    setProgramArgs({ faultRank: 2, faultAt: 20, fault: "exit-at-barrier" });
    const h1 = await threeRanks().savePath(stem).maxFailure(MaxFailureThreshold.absolute(1)).run();
    await assertRejects(() => h1.join(), Error, "max_failure_exceeded", stem);
    const meta = await readBundleMeta(new FsStorage(dir), "ckpt");
    assertEquals(meta.save_reason, "max_failure_exceeded", "bundle reason");
    // Run 1's work the bundle's consensus holds: everything outside its uncovered ranges.
    ledger.heldBy(meta);
    setProgramArgs({});
    const b = threeRanks().savePath(stem).resumeFrom(stem);
    const { observe } = await import("../../../src/distributed/run/builder.ts");
    observe(b, { chunk: ledger.chunk });
    const state = await (await b.run()).join();
    assert(state.params.size === 2, "the resumed run finished with a consensus");
    ledger.exactlyOnce("stop + resume");
    assertEquals((await readBundleMeta(new FsStorage(dir), "ckpt")).save_reason, "checkpoint", "final bundle after resume");
  } finally {
    console.warn = warn;
    setProgramArgs({});
    await Deno.remove(dir, { recursive: true });
  }
});
