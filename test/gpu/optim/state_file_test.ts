/**
 * saveStateFile / loadStateFile: an optimizer's state survives a file exactly and steps on
 * identically; mismatches and corrupt files are refused naming the file, changing nothing.
 */
import { Parameter } from "../../../src/autograd/mod.ts";
import { readBundleOptim, writeBundle } from "../../../src/distributed/coordinator/persistence/bundle.ts";
import { MemoryStorage, NotFoundError } from "../../../src/io/mod.ts";
import { Adam, SGD } from "../../../src/optim/mod.ts";
import { hostOptimizerState, loadStateFile, saveStateFile } from "../../../src/optim/state_file.ts";
import { fromArray } from "../../../src/tensor/mod.ts";
import { assert, assertEquals, assertRejects } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { parametersOf, problem, release, setGrads } from "./harness.ts";

async function bitsOf(t: { toArray(): Promise<Float32Array | Int32Array | Uint32Array> }): Promise<number[]> {
  const a = await t.toArray();
  return [...new Uint32Array(a.buffer, a.byteOffset, a.length)];
}

async function snapshot(
  opt: Adam | SGD,
): Promise<{ tensors: Record<string, number[]>; scalars: Record<string, number> }> {
  const sd = opt.stateDict();
  const tensors: Record<string, number[]> = {};
  for (const [k, t] of Object.entries(sd.tensors)) tensors[k] = await bitsOf(t);
  return { tensors, scalars: sd.scalars };
}

gpuTest("saveStateFile then loadStateFile restores Adam exactly, and both step on identically", async () => {
  const storage = new MemoryStorage();
  const pr = problem(71, 3);
  const a = parametersOf(pr), b = parametersOf(pr);
  const optA = new Adam(a, { lr: 0.01 }), optB = new Adam(b, { lr: 0.5 });
  for (let t = 0; t < 2; t++) {
    setGrads(a, pr.grads[t]);
    optA.step();
  }
  await saveStateFile(optA, "runs/adam.optim", { storage });
  // B gets A's parameters too, so one more step must match bit for bit.
  for (let i = 0; i < b.length; i++) b[i].data.write(await a[i].data.toArray());
  assertEquals(await loadStateFile(optB, "runs/adam.optim", { storage }), true, "loaded");
  assertEquals(await snapshot(optB), await snapshot(optA), "state");
  assertEquals(optB.lr, 0.01, "lr comes from the file");
  setGrads(a, pr.grads[2]);
  setGrads(b, pr.grads[2]);
  optA.step();
  optB.step();
  for (let i = 0; i < a.length; i++) {
    assertEquals(await bitsOf(b[i].data), await bitsOf(a[i].data), `param ${i} after a step`);
  }
  release(a, optA);
  release(b, optB);
});

gpuTest("loadStateFile: ifExists resolves false on a missing file; otherwise NotFoundError", async () => {
  const storage = new MemoryStorage();
  const params = parametersOf(problem(72, 0));
  const opt = new SGD(params, { lr: 0.1, momentum: 0.9 });
  assertEquals(await loadStateFile(opt, "fresh.optim", { storage, ifExists: true }), false, "missing, ifExists");
  await assertRejects(() => loadStateFile(opt, "fresh.optim", { storage }), NotFoundError, `"fresh.optim"`);
  release(params, opt);
});

gpuTest("loadStateFile refuses mismatched and corrupt files naming the file, and changes nothing", async () => {
  const storage = new MemoryStorage();
  const pr = problem(73, 1);
  const src = parametersOf(pr);
  const sgd = new SGD(src, { lr: 0.1, momentum: 0.9 });
  setGrads(src, pr.grads[0]);
  sgd.step();
  await saveStateFile(sgd, "sgd.optim", { storage });
  // Target: Adam over the same shapes, already stepped once.
  const dst = parametersOf(pr);
  const adam = new Adam(dst, { lr: 0.01 });
  setGrads(dst, pr.grads[0]);
  adam.step();
  const before = await snapshot(adam);
  await assertRejects(
    () => loadStateFile(adam, "sgd.optim", { storage }),
    Error,
    `Cannot load "sgd.optim" into Adam`,
    `unexpected tensor "0.momentum_buffer"`,
  );
  // Shapes that differ: an Adam over other shapes.
  const other = [new Parameter(fromArray(new Float32Array(5), [5]))];
  const small = new Adam(other, { lr: 0.01 });
  setGrads(other, [new Float32Array(5).fill(1)]);
  small.step();
  await saveStateFile(small, "small.optim", { storage });
  await assertRejects(
    () => loadStateFile(adam, "small.optim", { storage }),
    RangeError,
    `Cannot load "small.optim" into Adam`,
    `"0.exp_avg" is [5]`,
    `is [7]`,
  );
  const bytes = await storage.read("sgd.optim");
  await storage.write("cut.optim", bytes.subarray(0, bytes.length - 3));
  await assertRejects(() => loadStateFile(adam, "cut.optim", { storage }), RangeError, `"cut.optim"`);
  assertEquals(await snapshot(adam), before, "state unchanged");
  release(src, sgd);
  release(dst, adam);
  release(other, small);
});

gpuTest("a bundle's .optim (written from hostOptimizerState) loads with loadStateFile", async () => {
  const storage = new MemoryStorage();
  const pr = problem(74, 1);
  const a = parametersOf(pr), b = parametersOf(pr);
  const optA = new Adam(a, { lr: 0.02 }), optB = new Adam(b, { lr: 0.02 });
  setGrads(a, pr.grads[0]);
  optA.step();
  const host = await hostOptimizerState(optA);
  await writeBundle(storage, "runs/b", {
    model: { params: [{ name: "w", shape: [1], data: new Float32Array(1) }], buffers: [] },
    optim: host,
    meta: { epoch: 0, global_step: 1, sync_round: 1, world_size_at_save: 1, save_reason: "graceful_shutdown" },
  });
  assertEquals((await readBundleOptim(storage, "runs/b"))!.scalars, host.scalars, "scalars in the bundle");
  assert(await loadStateFile(optB, "runs/b.optim", { storage }), "loaded");
  assertEquals(await snapshot(optB), await snapshot(optA), "state");
  release(a, optA);
  release(b, optB);
});
