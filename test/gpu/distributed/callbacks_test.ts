/**
 * Callbacks and metrics: eval on the elected rank in eval mode with a final eval
 * tagged numEpochs, epochFn once per epoch, recordScalar roll-ups, metricsFn; the Async
 * policy with EASGD and outer optimizers; the cooperative tier.
 */
import {
  DiLoCo,
  ElCheConfig,
  EvalCadence,
  type EpochMetrics,
  Reduction,
  setProgramArgs,
  SlowMo,
} from "../../../src/index.ts";
import { tiny, tinyCallbacks, tinyOuter } from "../../fixtures/programs/tiny.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";

gpuTest("evalFn runs every epoch and once more at the end, in eval mode; epochFn, recordScalar and metricsFn report per epoch", async () => {
  setProgramArgs({});
  const results: [number, number][] = [];
  const metrics: EpochMetrics[] = [];
  const h = await tinyCallbacks.clone().elche(ElCheConfig.cpuCadence()).batchSize(16).numEpochs(3).lrScaleRatio(0)
    .cluster({ ranks: [{}, {}] })
    .evalEvery(EvalCadence.epochs(1))
    .evalResultFn((epoch, acc) => void results.push([epoch, acc]))
    .metricsFn((m) => void metrics.push(m))
    .scalarReduction("epoch_fn", Reduction.Max)
    .checkpointEvery(1)
    .run();
  await h.join();
  assertEquals(results.map(([e]) => e), [1, 2, 3], "eval at boundaries 1 and 2, and the final one tagged numEpochs");
  assert(results[2][1] > 0.9, `final held-out accuracy ${results[2][1]} should beat 0.9 on separable blobs`);
  assertEquals(metrics.map((m) => m.epoch), [0, 1, 2], "metricsFn per epoch, in order");
  for (const m of metrics) {
    assertEquals(m.scalars.rows, 16, `epoch ${m.epoch} mean rows per batch`);
    assertEquals(m.scalars.epoch_fn, m.epoch + 1, `epoch ${m.epoch}: epochFn fired (max over ranks)`);
  }
  assertEquals(h.history.length, 3, "handle history");
});

gpuTest("cpu-async with EASGD streams ranks through epochs and still converges; SlowMo and DiLoCo outer optimizers train", async () => {
  setProgramArgs({});
  const base = (b = tiny) => b.clone().elche(ElCheConfig.cpuAsync()).batchSize(16).numEpochs(3).lrScaleRatio(0).cluster({ ranks: [{}, {}] });
  for (const [name, b] of [
    ["async", base()],
    ["slowmo", base(tinyOuter).elche(ElCheConfig.cpuCadence()).outerOptimizer(() => new SlowMo({ lr: 1, momentum: 0.5 }))],
    ["diloco", base(tinyOuter).elche(ElCheConfig.cpuCadence()).outerOptimizer(() => new DiLoCo({ lr: 0.7, momentum: 0.5 }))],
  ] as const) {
    const h = await b.run();
    await h.join();
    const first = h.history[0].avgLoss, last = h.history[h.history.length - 1].avgLoss;
    assert(last < first * 0.7, `${name}: loss ${first.toFixed(3)} → ${last.toFixed(3)} should fall by 30%`);
    const total = h.history.reduce((a, m) => a + m.perRankSamples.reduce((x, y) => x + y, 0), 0);
    assertEquals(total, 3 * 768, `${name}: every sample once per epoch`);
  }
});

gpuTest("the cooperative tier (intoWorker) trains a single device to the same kind of result", async () => {
  setProgramArgs({});
  const w = await tiny.clone().elche(ElCheConfig.cpuCadence()).batchSize(16).numEpochs(2).cluster({ ranks: [{}] }).intoWorker();
  let plans = 0, steps = 0;
  const { crossEntropy, Variable } = await import("../../../src/index.ts");
  for (let plan = await w.nextPlan(); plan; plan = await w.nextPlan()) {
    plans++;
    for (let batch = await w.nextBatch(); batch; batch = await w.nextBatch()) {
      const loss = crossEntropy(w.model().forward(new Variable(batch[0])), batch[1]);
      loss.backward();
      steps++;
      if ((await w.step(loss)).shutdown) break;
    }
  }
  const state = await w.finish();
  assertEquals([plans, steps], [2, 96], "one plan per epoch, 48 batches each");
  assert(state !== null && state.params.has("weight"), "finish() gives the trained state");
  const m = w.pollMetrics();
  assertEquals(m.length, 2, "two epochs of metrics");
  assert(m[1].avgLoss < m[0].avgLoss, "loss falls");
});

gpuTest("shutdown() stops a run cooperatively: join resolves with the consensus of what was trained", async () => {
  setProgramArgs({});
  const h = await tiny.clone().elche(ElCheConfig.cpuCadence()).batchSize(16).numEpochs(50).cluster({ ranks: [{}, {}] }).run();
  const first = await h.nextMetrics();
  assert(first !== null && first.epoch === 0, "one epoch ran");
  const state = await h.shutdown();
  assert(state.params.has("weight") && state.params.get("weight")!.data.every(Number.isFinite), "a finite consensus");
  assert(h.history.length < 50, `stopped early (${h.history.length} epochs)`);
  h.pollMetrics();
  assertEquals(await h.nextMetrics(), null, "nextMetrics() is null once the run is over and the queue drained");
});
