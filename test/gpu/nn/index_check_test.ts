/** The nn forms take host targets and indices and refuse bad ones as PyTorch does, before any GPU work. */
import { Embedding, F, fromArray, setIndexChecks, Variable } from "../../../src/index.ts";
import { assertRejects, assertRelClose, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randn } from "../../util/random.ts";

gpuTest("F.crossEntropy and F.nllLoss check host targets; the loss equals the tensor-target loss", async () => {
  const logits = new Variable(fromArray(randn(4 * 10, mulberry32(1)), [4, 10]), true);
  assertThrows(() => F.crossEntropy(logits, [1, 2, 3, 12]), RangeError, "crossEntropy: target 12 at row 3 is out of range [0, 10)");
  assertThrows(() => F.nllLoss(logits, [10, 2, 3, 1]), RangeError, "nllLoss: target 10 at row 0 is out of range [0, 10)");
  const host = await F.crossEntropy(logits, [1, 2, 3, 9]).item();
  const tensor = await F.crossEntropy(logits, fromArray(new Int32Array([1, 2, 3, 9]))).item();
  assertRelClose([host], [tensor], 0, "host vs tensor targets");
});

gpuTest("Embedding.forward checks host indices and, in checked mode, GPU ones", async () => {
  const emb = new Embedding(6, 3, { seed: 2 });
  assertThrows(() => emb.forward([0, 6]), RangeError, "embedding: index 6 at position 1 is out of range [0, 6)");
  setIndexChecks(true);
  try {
    const y = emb.forward(fromArray(new Int32Array([5, -2])));
    await assertRejects(() => y.toArray(), RangeError, "embedding: index -2 at position 1 is out of range [0, 6)");
  } finally {
    setIndexChecks(false);
  }
});
