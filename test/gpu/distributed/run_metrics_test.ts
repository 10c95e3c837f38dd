/**
 * What a single-device run reports (in process, no workers): per-batch delivered and
 * compute-only ms kept apart, and history entries carrying every
 * `RunEpochMetrics` field the multi-rank coordinator fills.
 */
import { type BatchEvent, observe, type RunEpochMetrics, Trainer, SGD, crossEntropy, Variable } from "../../../src/index.ts";
import { blobs, TinyLinear } from "../../fixtures/programs/tiny.ts";
import { assert, assertEquals, assertRelClose } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";

const SAMPLES = 96, BATCH = 16, EPOCHS = 2;

gpuTest("a single-device run keeps data time out of compute ms, and its history carries the RunEpochMetrics fields", async () => {
  const b = Trainer.builder(
    (device) => new TinyLinear(device),
    (params) => new SGD(params, { lr: 0.05 }),
    (model, [x, y]) => crossEntropy(model.forward(new Variable(x)), y),
  )
    .dataset(blobs(SAMPLES, 5))
    // Slow delivery (longer than Deno's ~10 ms map polling, so the step is back first):
    // the data wait belongs to delivered time, never to compute time.
    .transform(async (rows) => {
      await new Promise((r) => setTimeout(r, 40));
      return rows;
    })
    .batchSize(BATCH)
    .numEpochs(EPOCHS)
    .cluster({ ranks: [{}] });
  const events: BatchEvent[] = [];
  observe(b, { batch: (e) => events.push(e) });
  const h = await b.run();
  await h.join();

  const perEpoch = SAMPLES / BATCH;
  assertEquals(events.length, EPOCHS * perEpoch, "batch events");
  for (const e of events) {
    assert(Number.isFinite(e.computeMs) && e.computeMs > 0, `computeMs must be finite and > 0, got ${e.computeMs}`);
    assert(e.computeMs <= e.ms, `computeMs ${e.computeMs} exceeds the delivered ms ${e.ms}`);
  }
  const sum = (xs: number[]) => xs.reduce((a, x) => a + x, 0);
  const compute = sum(events.map((e) => e.computeMs)), delivered = sum(events.map((e) => e.ms));
  assert(compute < delivered, `Σ computeMs ${compute} must be below Σ delivered ms ${delivered}`);

  // The type is what the entries hold: no cast needed to read the run counters.
  const history: RunEpochMetrics[] = h.history;
  assertEquals(history.length, EPOCHS, "history entries");
  history.forEach((m, epoch) => {
    for (const key of ["reduces", "wireBytesPerReduce", "reduceMs", "anchor", "batchCounts"] as const) {
      assert(key in m, `history[${epoch}] lacks ${key}`);
    }
    assertEquals(
      { reduces: m.reduces, wire: m.wireBytesPerReduce, reduceMs: m.reduceMs, counts: m.batchCounts },
      { reduces: 0, wire: 0, reduceMs: 0, counts: [perEpoch] },
      `history[${epoch}] run counters`,
    );
    const ofEpoch = events.filter((e) => e.epoch === epoch);
    assertRelClose(m.perRankComputeOnlyMs, [sum(ofEpoch.map((e) => e.computeMs))], 1e-9, `history[${epoch}] compute-only ms`);
  });
});
