/**
 * Process memory stays flat over thousands of training steps (bench/README.md "Memory").
 * Deno frees a WebGPU bind group, command encoder, pass or command buffer only when V8
 * collects its wrapper, and V8 does not count that memory; one new bind group per dispatch
 * grew a 2-rank `npm start` by 30–50 KiB per step while the JS heap and the pool stayed
 * flat. The device now reuses bind groups and asks V8 for a collection every
 * NATIVE_OBJECTS_PER_COLLECT such objects. Deno only (`_deno_test`): browsers have no RSS.
 */
import { Adam, crossEntropy, Device, fromArray, Linear, ReLU, Sequential, Variable } from "../../src/index.ts";
import { assert, assertEquals } from "../util/assert.ts";
import { gpuTest } from "../util/gpu.ts";
import { mulberry32, randint, uniform } from "../util/random.ts";

/** Steps before the baseline: pipelines compiled, pool and bind-group cache filled, malloc arenas grown. */
const WARM = 300;
/** Measured steps. Eight layers make ~100 dispatches a step: one new bind group each grew ~1.2 KiB. */
const STEPS = 2500;
/**
 * Allowed RSS growth. On this loop (lavapipe) the fixed engine grew 41.6 MiB (mostly the
 * JS heap's own growth in the test process), the old one 280.8 MiB (115 KiB/step).
 */
const LIMIT_MIB = 96;

gpuTest(
  "2,500 steps of a small 9-layer MLP after warm-up: RSS grows < 96 MiB, bind groups mostly reused, no new GPU bytes",
  async () => {
    // A device of its own: the shared test device's pool also receives the buffers of other
    // tests' tensors as they are collected, and those extra free buffers rotate through this
    // loop's bind-group keys.
    const device = await Device.request({ label: "memory-test" });
    try {
      await loop(device);
    } finally {
      device.destroy();
    }
  },
);

async function loop(device: Device): Promise<void> {
  {
    const hidden = Array.from({ length: 7 }, () => [new Linear(16, 16, { device }), new ReLU()]).flat();
    const model = new Sequential(new Linear(32, 16, { device }), new ReLU(), ...hidden, new Linear(16, 4, { device }));
    const opt = new Adam(model.parameters(), { lr: 1e-3 });
    const rng = mulberry32(5);
    const batches = Array.from({ length: 4 }, () => ({ x: uniform(8 * 32, rng), y: randint(8, 4, rng) }));
    let pending: Promise<ArrayLike<number>> | undefined, rss0 = 0, heap0 = 0;
    let base = device.memory();
    for (let step = 1; step <= WARM + STEPS; step++) {
      const b = batches[step % batches.length];
      const loss = crossEntropy(
        model.forward(new Variable(fromArray(b.x, [8, 32], { device }))),
        fromArray(b.y, [8], { device }),
      );
      loss.backward();
      opt.step();
      opt.zeroGrad();
      const read = loss.data.toArray();
      device.endStep();
      if (pending) await pending;
      pending = read;
      if (step === WARM) {
        base = device.memory();
        ({ rss: rss0, heapUsed: heap0 } = Deno.memoryUsage());
      }
    }
    await pending;
    const m = device.memory(), { rss, heapUsed } = Deno.memoryUsage();
    const grewMiB = (rss - rss0) / 2 ** 20;
    assert(
      grewMiB < LIMIT_MIB,
      `RSS grew ${grewMiB.toFixed(1)} MiB over ${STEPS} steps (${((rss - rss0) / STEPS / 1024).toFixed(1)} KiB/step; ` +
        `JS heap ${(heap0 / 2 ** 20).toFixed(1)} -> ${(heapUsed / 2 ** 20).toFixed(1)} MiB); limit ${LIMIT_MIB} MiB`,
    );
    // Mostly cache hits. Not zero: when a read-back settles relative to the next step's
    // allocations depends on timing, so under load the pool can hand a step other buffers
    // than the last (seen: 8 new bind groups a step here). The old engine made one per
    // dispatch, about 100 a step.
    const created = m.bindGroupsCreated - base.bindGroupsCreated;
    assert(created < STEPS * 20, `${created} bind groups created in ${STEPS} steps after warm-up (~100 dispatches a step)`);
    assertEquals(m.totalBytes, base.totalBytes, "pooled + live GPU bytes after warm-up");
    assert(m.collections > base.collections, `no collection ran in ${STEPS} steps (collections ${m.collections})`);
    model.parameters().forEach((p) => p.data.dispose());
  }
}
