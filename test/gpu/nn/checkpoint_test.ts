/**
 * loadCheckpointFile / saveCheckpointFile: named and positional files, bundle `.fdl` files,
 * every mismatch named, nothing changed on failure. Storage is in memory so the same module
 * runs under Deno and in Chromium.
 */
import { Parameter, type Variable } from "../../../src/autograd/mod.ts";
import { writeBundle } from "../../../src/distributed/coordinator/persistence/bundle.ts";
import { decodeSafetensors, encodeSafetensors, MemoryStorage, NotFoundError } from "../../../src/io/mod.ts";
import { loadCheckpointFile, saveCheckpointFile } from "../../../src/nn/checkpoint.ts";
import { Module } from "../../../src/nn/module.ts";
import { fromArray, type Tensor } from "../../../src/tensor/mod.ts";
import { assert, assertEquals, assertRejects } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randn } from "../../util/random.ts";

class Dense extends Module {
  weight: Parameter;
  bias: Parameter;
  constructor(out: number, inp: number, rng: () => number) {
    super();
    this.weight = new Parameter(fromArray(randn(out * inp, rng), [out, inp]));
    this.bias = new Parameter(fromArray(randn(out, rng), [out]));
  }
  forward(x: Variable): Variable {
    return x;
  }
}

/** Two layers with the same member names (so positional keys matter) and an f32 buffer. */
class Net extends Module {
  fc1: Dense;
  fc2: Dense;
  stats: Tensor;
  constructor(seed: number, hidden = 33) {
    super();
    const rng = mulberry32(seed);
    this.fc1 = new Dense(hidden, 7, rng);
    this.fc2 = new Dense(7, hidden, rng);
    this.stats = this.registerBuffer("stats", fromArray(randn(7, rng), [7]));
  }
  forward(x: Variable): Variable {
    return x;
  }
}

async function state(m: Module): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (const [k, t] of m.stateDict()) {
    const a = await t.toArray();
    out[k] = [...new Uint32Array(a.buffer, a.byteOffset, a.length)]; // bits, so the copy is exact
  }
  return out;
}

gpuTest("saveCheckpointFile then loadCheckpointFile (named keys) restores a module bit for bit", async () => {
  const storage = new MemoryStorage();
  const src = new Net(1), dst = new Net(2);
  await saveCheckpointFile(src, "runs/net.safetensors", { storage, metadata: { epoch: "4" } });
  const file = decodeSafetensors(await storage.read("runs/net.safetensors"));
  assertEquals(Object.keys(file.tensors), ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "stats"], "named keys");
  const r = await loadCheckpointFile(dst, "runs/net.safetensors", { storage });
  assertEquals([r.keys, r.missing, r.unexpected, r.metadata.epoch], ["named", [], [], "4"], "result");
  assertEquals(await state(dst), await state(src), "values");
});

gpuTest("positional files (saveCheckpointFile keys: positional, or a bundle's .fdl) load by position", async () => {
  const storage = new MemoryStorage();
  const src = new Net(3), dst = new Net(4);
  await saveCheckpointFile(src, "p.fdl", { storage, keys: "positional" });
  const file = decodeSafetensors(await storage.read("p.fdl"));
  assertEquals(Object.keys(file.tensors), ["p0", "p1", "p2", "p3", "b0"], "positional keys");
  assertEquals(JSON.parse(file.metadata.param_names), ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"], "names");
  const r = await loadCheckpointFile(dst, "p.fdl", { storage });
  assertEquals(r.keys, "positional", "detected from metadata");
  assertEquals(await state(dst), await state(src), "values");

  // A consensus bundle written from host data (what the coordinator holds).
  const host = new Net(5), into = new Net(6);
  const toHost = (list: [string, Tensor][]) =>
    Promise.all(
      list.map(async ([name, t]) => ({ name, shape: [...t.shape], data: await t.toArray() as Float32Array })),
    );
  await writeBundle(storage, "runs/b", {
    model: {
      params: await toHost(host.namedParameters().map(([n, p]) => [n, p.data])),
      buffers: await toHost(host.namedBuffers()),
    },
    meta: { epoch: 0, global_step: 0, sync_round: 0, world_size_at_save: 1, save_reason: "checkpoint" },
  });
  assertEquals((await loadCheckpointFile(into, "runs/b.fdl", { storage })).keys, "positional", "bundle .fdl");
  assertEquals(await state(into), await state(host), "bundle values");

  // Positional keys without metadata (another writer) are detected from the keys alone.
  const bare: Record<string, { dtype: "F32"; shape: number[]; data: Float32Array }> = {};
  for (const [k, t] of Object.entries(file.tensors)) {
    bare[k] = { dtype: "F32", shape: t.shape, data: t.data as Float32Array };
  }
  await storage.write("bare.fdl", encodeSafetensors(bare));
  const again = new Net(7);
  assertEquals((await loadCheckpointFile(again, "bare.fdl", { storage })).keys, "positional", "detected from keys");
  assertEquals(await state(again), await state(src), "bare values");
});

gpuTest("loadCheckpointFile names every mismatch and changes nothing", async () => {
  const storage = new MemoryStorage();
  await saveCheckpointFile(new Net(8, 9), "small.fdl", { storage, keys: "positional" });
  await saveCheckpointFile(new Net(8, 9), "small.safetensors", { storage });
  const dst = new Net(9);
  const before = await state(dst);
  await assertRejects(
    () => loadCheckpointFile(dst, "small.fdl", { storage }),
    Error,
    `Cannot load "small.fdl" into Net (3 problems)`,
    `"p0" (fc1.weight) is [9,7], model expects [33,7]`,
    `"p1" (fc1.bias) is [9], model expects [33]`,
    `"p2" (fc2.weight) is [7,9], model expects [7,33]`,
  );
  await assertRejects(
    () => loadCheckpointFile(dst, "small.safetensors", { storage }),
    Error,
    `Cannot load "small.safetensors" into Net (3 problems)`,
    `"fc1.weight" is [9,7], model expects [33,7]`,
  );
  // Missing and unexpected keys (a file from a model with other names).
  const t = (n: number) => ({ dtype: "F32" as const, shape: [n], data: new Float32Array(n) });
  await storage.write(
    "other.safetensors",
    encodeSafetensors({ "fc1.weight": { ...t(231), shape: [33, 7] }, extra: t(2) }),
  );
  const e = await assertRejects(
    () => loadCheckpointFile(dst, "other.safetensors", { storage }),
    Error,
    `missing "fc1.bias" (model expects [33])`,
    `missing "stats" (model expects [7])`,
    `unexpected "extra" [2]`,
  );
  assert(e.message.includes("(5 problems)"), e.message);
  const lax = await loadCheckpointFile(dst, "other.safetensors", { storage, strict: false });
  assertEquals([lax.missing.length, lax.unexpected], [4, ["extra"]], "non-strict reports what it skipped");
  // A hostile file (header claiming 10 GB) is refused before anything is allocated.
  const hostile = new Uint8Array(16);
  new DataView(hostile.buffer).setBigUint64(0, 10_000_000_000n, true);
  await storage.write("hostile.fdl", hostile);
  await assertRejects(
    () => loadCheckpointFile(dst, "hostile.fdl", { storage }),
    RangeError,
    `"hostile.fdl"`,
    "exceeds the limit",
  );
  await assertRejects(() => loadCheckpointFile(dst, "none.fdl", { storage }), NotFoundError, `"none.fdl"`);
  const afterStrict = await state(dst);
  // Only the non-strict load above wrote (fc1.weight); undo that in the comparison.
  assertEquals({ ...afterStrict, "fc1.weight": before["fc1.weight"] }, before, "everything else unchanged");
  assertEquals(afterStrict["fc1.weight"], new Array(231).fill(0), "the non-strict load wrote fc1.weight");
});
