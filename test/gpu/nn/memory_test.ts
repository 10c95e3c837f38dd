/**
 * GPU memory is flat across training steps: the MNIST MLP trained
 * for 300 steps holds exactly the same pooled + live bytes at step 300 as at step 20, and
 * creates no new buffers after warm-up; every step records with few submits.
 */
import { Adam, crossEntropy, fromArray, Variable } from "../../../src/index.ts";
import { mlp } from "../../../src/zoo/mod.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randint, uniform } from "../../util/random.ts";

gpuTest("MNIST MLP, 300 steps: pooled + live GPU bytes at step 300 equal those at step 20", async (device) => {
  const model = mlp(device);
  const opt = new Adam(model.parameters(), { lr: 1e-3 });
  const rng = mulberry32(9);
  const batches = Array.from({ length: 8 }, () => ({ x: uniform(64 * 784, rng), y: randint(64, 10, rng) }));
  let at20 = 0, created20 = 0, pending: Promise<ArrayLike<number>> | undefined;
  const submits0 = device.submits;
  for (let step = 1; step <= 300; step++) {
    const b = batches[step % batches.length];
    const x = fromArray(b.x, [64, 1, 28, 28]), y = fromArray(b.y, [64]);
    const loss = crossEntropy(model.forward(new Variable(x)), y);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    const read = loss.data.toArray();
    device.endStep();
    if (pending) await pending;
    pending = read;
    if (step === 20) {
      const m = device.memory();
      at20 = m.totalBytes;
      created20 = m.created;
    }
  }
  await pending;
  const m = device.memory();
  assertEquals(m.totalBytes, at20, "pooled + live bytes at step 300 vs step 20");
  assertEquals(m.created, created20, "buffers created after step 20");
  const perStep = (device.submits - submits0) / 300;
  assert(perStep <= 2, `a step took ${perStep} submits on average; expected at most 2 (the step and its loss read-back)`);
  model.parameters().forEach((p) => p.data.dispose());
});
