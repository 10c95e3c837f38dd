/**
 * The data plane on a real device: batches gathered from the device pool, read through the
 * RAM tier, or uploaded, are bit-identical to the dataset's own batches (f32 with NaN
 * payloads and -0, i32, u32 of random bits), and the counters say which tier served. A
 * batch the pool lacks some samples of reads and writes only those, then gathers.
 */
import { ArrayDataSet, DataPlane, type HostBatch, vramCapacity } from "../../../src/data/mod.ts";
import type { Tensor } from "../../../src/tensor/mod.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randint, randn } from "../../util/random.ts";

const N = 301, B = 16;

function dataset(seed: number): ArrayDataSet {
  const rng = mulberry32(seed);
  const x = randn(N * 6, rng);
  const xb = new Uint32Array(x.buffer);
  xb[7] = 0x7fc12345; // a NaN payload
  xb[8] = 0x80000000; // -0
  const bits = new Uint32Array(N);
  for (let i = 0; i < N; i++) bits[i] = Math.floor(rng() * 2 ** 32);
  return new ArrayDataSet([
    { name: "x", data: x, shape: [N, 2, 3] },
    { name: "y", data: randint(N, 7, rng), shape: [N] },
    { name: "bits", data: bits, shape: [N] },
  ]);
}

async function assertBitsEqual(got: Tensor[], want: HostBatch, label: string): Promise<void> {
  assertEquals(got.length, want.length, `${label}: fields`);
  for (let k = 0; k < got.length; k++) {
    assertEquals(got[k].shape, want[k].shape, `${label}: field ${k} shape`);
    assertEquals(got[k].dtype, ["f32", "i32", "u32"][k], `${label}: field ${k} dtype`);
    const a = new Uint32Array((await got[k].toArray()).buffer);
    const b = new Uint32Array(want[k].data.buffer, want[k].data.byteOffset, want[k].data.length);
    const bad = a.findIndex((v, i) => v !== b[i]);
    assert(bad < 0 && a.length === b.length, `${label}: field ${k} differs at ${bad}: ${a[bad]} vs ${b[bad]}`);
  }
}

/** Three epochs of shuffled batches through the plane, each checked against the dataset. */
async function epochs(plane: DataPlane, ds: ArrayDataSet, device: { endStep(): void }, seed: number): Promise<Set<number>> {
  const rng = mulberry32(seed);
  const served = new Set<number>();
  for (let e = 0; e < 3; e++) {
    const perm = Array.from({ length: N }, (_, i) => i).sort(() => rng() - 0.5);
    const batches: number[][] = [];
    for (let s = 0; s + B <= N; s += B) batches.push(perm.slice(s, s + B));
    for (let b = 0; b < batches.length; b++) {
      const got = await plane.batch(batches[b], batches.slice(b + 1));
      await assertBitsEqual(got, ds.getBatch(batches[b]), `epoch ${e} batch ${b}`);
      device.endStep();
      batches[b].forEach((i) => served.add(i));
    }
  }
  return served;
}

gpuTest("DataPlane: a pool holding the set gathers every batch after the first epoch, bit for bit", async (device) => {
  const ds = dataset(1);
  const record = 6 * 4 + 4 + 4;
  assertEquals(vramCapacity(ds.fields, device, 1e9, N), N, "capacity capped by the dataset");
  assertEquals(vramCapacity(ds.fields, device, 100 * record + 3, N), 100, "capacity from the budget in whole samples");
  assertThrows(() => vramCapacity(ds.fields, device, -5, N), RangeError, "vramMaxUsage", "-5");
  const plane = new DataPlane(ds, device, { vramBytes: N * record, tiers: { ramBytes: 50 * record } });
  const served = await epochs(plane, ds, device, 2);
  const st = plane.stats();
  const perEpoch = Math.floor(N / B);
  assertEquals(st.batches, 3 * perEpoch, "batches served");
  assertEquals(st.vram?.resident, served.size, "every sample served is resident");
  // Epoch 1 uploads; later batches are gathered unless they hold a sample the first epoch's
  // dropped tail never uploaded.
  assert(st.vram!.uploaded >= perEpoch && st.vram!.gathered >= perEpoch, `gathered ${st.vram!.gathered}, uploaded ${st.vram!.uploaded}`);
  assertEquals(st.vram!.gathered + st.vram!.uploaded, 3 * perEpoch, "each batch gathered or uploaded");
  // A batch the pool lacks a few samples of reads only those: each sample leaves the host once.
  assertEquals(st.tiers!.ramHits + st.tiers!.sourceReads, served.size, "samples read from the host tiers, over three epochs");
  await plane.close();
});

gpuTest("DataPlane: a pool smaller than the set and a RAM tier still serve exact batches", async (device) => {
  const ds = dataset(3);
  const record = 6 * 4 + 4 + 4;
  const plane = new DataPlane(ds, device, { vramBytes: 120 * record, tiers: { ramBytes: 80 * record }, prefetch: 3 });
  await epochs(plane, ds, device, 4);
  const st = plane.stats();
  assertEquals(st.vram?.resident, 120, "the pool filled and stopped");
  assert(st.tiers!.ramHits > 0 && st.tiers!.sourceReads > 0, `RAM served some (${st.tiers!.ramHits}), the source the rest (${st.tiers!.sourceReads})`);
  assertThrows(() => new DataPlane(ds, device, { prefetch: -1 }), RangeError, "prefetch", "-1");
  await plane.close();
});
