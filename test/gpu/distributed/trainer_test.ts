/**
 * Trainer.builder end to end on the tiny program (test/fixtures/programs/tiny.ts):
 * ranks are real Web Workers re-entering that module, each with its own device.
 * Runs under deno test and in Chromium.
 */
import {
  ApplyPolicy,
  AverageBackend,
  ElCheConfig,
  RankLostError,
  setProgramArgs,
  Trainer,
  Variable,
  crossEntropy,
  SGD,
} from "../../../src/index.ts";
import { blobs, TinyLinear, tiny, tiny320 } from "../../fixtures/programs/tiny.ts";
import { assert, assertEquals, assertRejects, assertRelClose } from "../../util/assert.ts";
import { flatParams } from "../../util/flat_params.ts";
import { gpuTest } from "../../util/gpu.ts";
import { interleavedDataset } from "../../util/interleaved_dataset.ts";

/** The tiny program pinned to a configuration (every knob set, so runs do not leak into each other). */
function configure(
  o: { ranks: number; policy: ApplyPolicy; bf16: boolean; batch: number; epochs: number; slowdown?: number[] },
  program = tiny,
) {
  setProgramArgs({});
  return program.clone()
    .elche(o.policy === "sync" ? ElCheConfig.cpuSync() : o.policy === "async" ? ElCheConfig.cpuAsync() : ElCheConfig.cpuCadence())
    .policy(o.policy)
    .backend(AverageBackend.Cpu)
    .bf16Wire(o.bf16)
    .batchSize(o.batch)
    .numEpochs(o.epochs)
    .lrScaleRatio(0)
    .cluster({ ranks: Array.from({ length: o.ranks }, (_, r) => ({ slowdown: o.slowdown?.[r] ?? 1 })) });
}

gpuTest("cpu-sync with 2 ranks on half batches equals 1 rank on whole batches (f32 wire within 1e-5, bf16 within its rounding)", async () => {
  const b = 8, steps = 20, P = 2 * b * steps;
  // Single-rank dataset whose batch k is the union of the two ranks' batch k.
  const one = interleavedDataset(blobs(P, 5), b);
  const single = await Trainer.builder(
    (device) => new TinyLinear(device),
    (params) => new SGD(params, { lr: 0.05 }),
    (model, [bx, by]) => crossEntropy(model.forward(new Variable(bx)), by),
  ).dataset(one).batchSize(2 * b).numEpochs(1).cluster({ ranks: [{}] }).run();
  const want = flatParams(await single.join());

  const run = async (bf16: boolean) => {
    // A static split (partitionRatios) keeps Sync at one step per rank per reduce, whatever the timing.
    const builder = configure({ ranks: 2, policy: ApplyPolicy.Sync, bf16, batch: b, epochs: 1 }, tiny320).partitionRatios([0.5, 0.5]);
    const h = await builder.run();
    const got = flatParams(await h.join());
    const m = h.history[0];
    assertEquals(m.perRankSamples, [b * steps, b * steps], "each rank trained its half");
    assertEquals(m.reduces, steps, `one reduce per step (anchor ${m.anchor}, counts ${m.batchCounts})`);
    return got;
  };
  const f32 = await run(false);
  assertRelClose(f32, want, 1e-5, "f32 wire vs single rank");
  // bf16: every reduce rounds each value by at most 2^-9 relative, so after `steps` reduces
  // the norm-wise deviation stays under steps · 2^-9 (and is not zero: rounding happened).
  const bf16 = await run(true);
  let d2 = 0, w2 = 0;
  for (let i = 0; i < want.length; i++) {
    d2 += (bf16[i] - want[i]) ** 2;
    w2 += want[i] ** 2;
  }
  const rel = Math.sqrt(d2 / w2), bound = steps * 2 ** -9;
  assert(rel > 0 && rel <= bound, `bf16 wire: norm-wise deviation ${rel.toExponential(2)}, expected in (0, ${bound.toExponential(2)}]`);
});

gpuTest("bf16 wire ships exactly half the bytes of f32 per reduce; join() is the exact f32 consensus, not bf16-rounded", async () => {
  const run = async (bf16: boolean) => {
    // Two epochs: the last reduce (in epoch 2) ships f32 frames either way; compare epoch 1's.
    const h = await configure({ ranks: 2, policy: ApplyPolicy.Cadence, bf16, batch: 16, epochs: 2 }).run();
    const state = await h.join();
    return { bytes: h.history[0].wireBytesPerReduce, state };
  };
  const f32 = await run(false), bf16 = await run(true);
  assert(f32.bytes > 0, "f32 bytes counted");
  assertEquals(bf16.bytes * 2, f32.bytes, "bf16 bytes per reduce × 2");
  // The last reduce ships f32 frames. Averaging bf16 frames leaves about half
  // the values bf16-representable (low 16 bits zero); exact f32 averages almost none.
  const values = flatParams(bf16.state);
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const representable = bits.filter((b) => (b & 0xffff) === 0).length;
  assert(representable <= 2, `join() with bf16 wire: ${representable} of ${values.length} values are bf16-representable (rounded frames)`);
});

gpuTest("a rank that throws mid-epoch makes join() reject naming the rank and the cause", async () => {
  const b = configure({ ranks: 2, policy: ApplyPolicy.Cadence, bf16: false, batch: 16, epochs: 3 });
  setProgramArgs({ faultRank: 1, faultAt: 7, fault: "throw" });
  const h = await b.run();
  const e = await assertRejects(() => h.join(), RankLostError, "rank 1", "injected failure at step 7");
  assertEquals((e as RankLostError).rank, 1, "error carries the rank");
  setProgramArgs({});
});

gpuTest("with one rank 3x slower, cpu-cadence gives the fast rank its measured speed ratio (~3x) in batches and runs far fewer reduces than cpu-sync", async () => {
  const run = async (policy: ApplyPolicy) => {
    const h = await configure({ ranks: 2, policy, bf16: true, batch: 8, epochs: 4, slowdown: [1, 3] }).run();
    await h.join();
    return h.history;
  };
  const cadence = await run(ApplyPolicy.Cadence);
  // After calibration (the last two epochs), the fast rank's share should track the speed
  // ratio the ranks had: ms of compute per sample as each measured it (the slow rank's
  // includes its sleep). Nominally 3, but the slow rank's sleep frees the CPU for the other
  // one, more so under load (2 cores): 4.33 once, and ElChe then rightly gave it 4.33x.
  const last = [cadence[2], cadence[3]];
  const sum = (f: (m: typeof cadence[0]) => number) => last.reduce((a, m) => a + f(m), 0);
  const fast = sum((m) => m.perRankSamples[0]), slow = sum((m) => m.perRankSamples[1]);
  const ratio = fast / slow;
  const msPerSample = (r: number) => sum((m) => m.perRankComputeOnlyMs[r]) / sum((m) => m.perRankSamples[r]);
  const speed = msPerSample(1) / msPerSample(0);
  // NOTE: in Chromium every worker's WebGPU work runs in the one GPU process (SwiftShader
  // serializes it), so a rank's sleep frees the device for the other and step times are not
  // independent: there only the direction is asserted. Deno gives each rank its own device.
  const isDeno = typeof (globalThis as { Deno?: unknown }).Deno !== "undefined";
  if (isDeno) {
    assert(speed > 2, `the slow rank's ms per sample is ${speed.toFixed(2)}x the fast one's: expected about 3 (slowdown [1, 3])`);
    assert(
      ratio > speed * 0.7 && ratio < speed * 1.3,
      `fast/slow batch ratio over the last two epochs is ${ratio.toFixed(2)} (${fast}/${slow}), expected the measured speed ratio ${speed.toFixed(2)} ± 30%`,
    );
  } else assert(ratio > 2, `fast/slow batch ratio ${ratio.toFixed(2)} (${fast}/${slow}): the fast rank should get clearly more`);
  const sync = await run(ApplyPolicy.Sync);
  const reduces = (h: { reduces: number }[]) => h.reduce((a, m) => a + m.reduces, 0);
  assert(reduces(cadence) * 3 <= reduces(sync), `cadence ran ${reduces(cadence)} reduces, sync ${reduces(sync)}: expected at most a third`);
});
