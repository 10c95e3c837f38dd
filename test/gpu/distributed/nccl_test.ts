/**
 * The nccl-* modes end to end on the tiny program (test/fixtures/programs/tiny.ts): real
 * rank workers reduce among themselves through a SharedArrayBuffer slab
 * (coordinator/reduce/reduce_nccl.ts). nccl-sync computes what cpu-sync and one rank on the
 * union batches compute; nccl-cadence follows ElChe as cpu-cadence does. Runs under deno
 * test and in Chromium (the dev server sends the COOP/COEP headers shared memory needs).
 */
import {
  crossEntropy,
  DiLoCo,
  ElCheConfig,
  type OuterOptimizer,
  setProgramArgs,
  SGD,
  Trainer,
  Variable,
} from "../../../src/index.ts";
import { blobs, tiny, tiny320, TinyLinear, tinyOuter } from "../../fixtures/programs/tiny.ts";
import { assert, assertEquals, assertRelClose } from "../../util/assert.ts";
import { flatParams } from "../../util/flat_params.ts";
import { gpuTest } from "../../util/gpu.ts";
import { interleavedDataset } from "../../util/interleaved_dataset.ts";

/** The program pinned to a mode (every knob set, so runs do not leak into each other). */
function configure(mode: "nccl-sync" | "cpu-sync" | "nccl-cadence" | "cpu-cadence", o: { batch: number; epochs: number; slowdown?: number[] }, program = tiny) {
  setProgramArgs({});
  const slowdown = o.slowdown ?? [1, 1];
  return program.clone()
    .elche(ElCheConfig.defaultFor(mode))
    .bf16Wire(false)
    .batchSize(o.batch)
    .numEpochs(o.epochs)
    .lrScaleRatio(0)
    .cluster({ ranks: slowdown.map((s) => ({ slowdown: s })) });
}

gpuTest("nccl-sync with 2 ranks on half batches equals cpu-sync and 1 rank on whole batches (plain SGD, within 1e-5)", async () => {
  const b = 8, steps = 20, P = 2 * b * steps;
  // Single-rank dataset whose batch k is the union of the two ranks' batch k (as trainer_test.ts).
  const one = interleavedDataset(blobs(P, 5), b);
  const single = await Trainer.builder(
    (device) => new TinyLinear(device),
    (params) => new SGD(params, { lr: 0.05 }),
    (model, [bx, by]) => crossEntropy(model.forward(new Variable(bx)), by),
  ).dataset(one).batchSize(2 * b).numEpochs(1).cluster({ ranks: [{}] }).run();
  const want = flatParams(await single.join());

  const run = async (mode: "nccl-sync" | "cpu-sync") => {
    // A static split keeps Sync at one step per rank per reduce, whatever the timing (Sync
    // never grows its anchor; the coordinator counts a chunk's steps from its reply too, so a
    // batch event arriving after the reply cannot open a second step in the window).
    const h = await configure(mode, { batch: b, epochs: 1 }, tiny320).partitionRatios([0.5, 0.5]).run();
    const got = flatParams(await h.join());
    const m = h.history[0];
    assertEquals(m.perRankSamples, [b * steps, b * steps], `${mode}: each rank trained its half`);
    assertEquals(m.reduces, steps, `${mode}: one reduce per step`);
    return { got, bytes: m.wireBytesPerReduce };
  };
  const nccl = await run("nccl-sync"), cpu = await run("cpu-sync");
  assertRelClose(nccl.got, want, 1e-5, "nccl-sync vs single rank");
  assertRelClose(nccl.got, cpu.got, 1e-5, "nccl-sync vs cpu-sync");
  assert(cpu.bytes > 0, `cpu-sync ships frames through the coordinator (${cpu.bytes} bytes per reduce)`);
  assertEquals(nccl.bytes, 0, "nccl-sync: no parameter byte through the coordinator");
});

gpuTest("nccl-cadence follows ElChe as cpu-cadence: with one rank 3x slower, the fast rank trains more than 1.5x the slow one's batches in both, and reduce counts within 2x", async () => {
  const run = async (mode: "nccl-cadence" | "cpu-cadence") => {
    const h = await configure(mode, { batch: 8, epochs: 3, slowdown: [1, 3] }).run();
    await h.join();
    return h.history;
  };
  const nccl = await run("nccl-cadence"), cpu = await run("cpu-cadence");
  const reduces = (hs: typeof nccl) => hs.reduce((a, m) => a + m.reduces, 0);
  const [rn, rc] = [reduces(nccl), reduces(cpu)];
  assert(rn >= rc / 2 && rn <= rc * 2, `reduces: nccl-cadence ${rn}, cpu-cadence ${rc} (expected within 2x of each other)`);
  // A reduce per batch would be 768 / 8 / 2 = 48 per epoch: ElChe's windows keep both far below it.
  assert(rn < 3 * 48 / 2, `nccl-cadence ran ${rn} reduces in 3 epochs: ElChe's windows did not grow`);
  // The fast rank's share over epochs 2-3 (after calibration) follows the speed ratio in each
  // mode. Not compared across the two runs: they run one after the other, and a change of
  // machine load between them moved the ratio 2.6 -> 5.6 while both modes did their job.
  const ratio = (hs: typeof nccl) => (hs[1].perRankSamples[0] + hs[2].perRankSamples[0]) / (hs[1].perRankSamples[1] + hs[2].perRankSamples[1]);
  const [qn, qc] = [ratio(nccl), ratio(cpu)];
  // NOTE: in Chromium every worker's WebGPU work runs in one GPU process, so step times are
  // not independent there (see trainer_test.ts): only the direction is asserted.
  if (typeof (globalThis as { Deno?: unknown }).Deno === "undefined") {
    assert(qn > 1, `nccl-cadence fast/slow batches ${qn.toFixed(2)}, expected > 1`);
    return;
  }
  for (const [mode, q] of [["nccl-cadence", qn], ["cpu-cadence", qc]] as const) {
    assert(q > 1.5, `${mode} fast/slow batches over epochs 2-3: ${q.toFixed(2)}, expected > 1.5 (the slow rank is 3x slower)`);
  }
});

gpuTest("nccl-sync with an outer optimizer (DiLoCo) equals cpu-sync with it (within 1e-5): each rank steps its own replica, no parameter through the coordinator; an outer optimizer of another class is stepped on the coordinator and sent", async () => {
  /** DiLoCo behind another class: the ranks cannot rebuild it, so the coordinator steps it. */
  class Wrapped implements OuterOptimizer {
    readonly name = "Wrapped";
    readonly resetsInner = true;
    readonly #inner = new DiLoCo({ lr: 0.7, momentum: 0.5 });
    step(prev: Float32Array, consensus: Float32Array): Float32Array {
      return this.#inner.step(prev, consensus);
    }
    state(): Float32Array | null {
      return this.#inner.state();
    }
    loadState(s: Float32Array): void {
      this.#inner.loadState(s);
    }
  }
  const run = async (mode: "nccl-sync" | "cpu-sync", outer: () => OuterOptimizer) => {
    const h = await configure(mode, { batch: 16, epochs: 1 }, tinyOuter).partitionRatios([0.5, 0.5])
      .outerOptimizer(outer).run();
    const got = flatParams(await h.join());
    assertEquals(h.history[0].reduces, 768 / 16 / 2, `${mode}: one reduce per step`);
    return { got, bytes: h.history[0].wireBytesPerReduce };
  };
  const diloco = () => new DiLoCo({ lr: 0.7, momentum: 0.5 });
  const nccl = await run("nccl-sync", diloco), cpu = await run("cpu-sync", diloco);
  assertRelClose(nccl.got, cpu.got, 1e-5, "nccl-sync + DiLoCo vs cpu-sync + DiLoCo");
  assertEquals(nccl.bytes, 0, "nccl-sync + DiLoCo: the ranks step their replicas, no parameter byte through the coordinator");
  const wrapped = await run("nccl-sync", () => new Wrapped());
  assertRelClose(wrapped.got, cpu.got, 1e-5, "nccl-sync + a custom outer optimizer (stepped on the coordinator) vs cpu-sync + DiLoCo");
  assert(wrapped.bytes > 0, `a custom outer optimizer's step is sent to the ranks (${wrapped.bytes} bytes per reduce)`);
});
