/**
 * Out-of-range class targets and embedding rows raise as in PyTorch: host indices before the
 * upload, GPU indices in checked mode at the next read back; the message names the op, the
 * bad index, its position and the valid range. Checked mode changes no result.
 */
import { fromArray } from "../../../../src/tensor/creation.ts";
import { setIndexChecks } from "../../../../src/tensor/index_check.ts";
import { embedding } from "../../../../src/tensor/ops/gather.ts";
import { crossEntropy, nllLoss } from "../../../../src/tensor/ops/loss.ts";
import { crossEntropyRef } from "../../../reference/loss.ts";
import { assert, assertRejects, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { mulberry32, randint, randn } from "../../../util/random.ts";

/** Run `fn` in checked mode, restoring the default (off) after. */
async function checked(fn: () => Promise<void>): Promise<void> {
  setIndexChecks(true);
  try {
    await fn();
  } finally {
    setIndexChecks(false);
  }
}

gpuTest("host targets out of range are refused before the upload, naming op, value, row and range", () => {
  const logits = fromArray(randn(5 * 10, mulberry32(1)), [5, 10]);
  assertThrows(() => crossEntropy(logits, [1, 2, 3, 12, 0]), RangeError, "crossEntropy: target 12 at row 3 is out of range [0, 10)");
  assertThrows(() => crossEntropy(logits, [1, -1, 3, 4, 0]), RangeError, "target -1 at row 1", "[0, 10)");
  assertThrows(() => nllLoss(logits, [0, 9, 10, 4, 0]), RangeError, "nllLoss: target 10 at row 2 is out of range [0, 10)");
  crossEntropy(logits, [0, 1, 2, 3, 7], { ignoreIndex: 7 }); // the ignored value passes
  assertThrows(() => crossEntropy(logits, [0, 1, 2, -100, 7], { ignoreIndex: 7 }), RangeError, "target -100 at row 3");
});

gpuTest("host targets equal to ignoreIndex pass, and host and tensor targets give the same loss", async () => {
  const rng = mulberry32(2);
  const n = 7, c = 10, x = randn(n * c, rng), t = Array.from(randint(n, c, rng));
  t[2] = -100;
  const logits = fromArray(x, [n, c]);
  const host = await crossEntropy(logits, t).toArray();
  const want = crossEntropyRef(x, n, c, t, { reduction: "mean" }, [1]).y;
  assertRelClose(host, want, 1e-4, "host targets");
  assertRelClose(await crossEntropy(logits, fromArray(Int32Array.from(t))).toArray(), host, 0, "tensor targets");
});

gpuTest("host embedding indices out of range are refused, with the position in the index", () => {
  const w = fromArray(randn(5 * 3, mulberry32(3)), [5, 3]);
  assertThrows(() => embedding(w, [0, 4, 5]), RangeError, "embedding: index 5 at position 2 is out of range [0, 5)");
  assertThrows(() => embedding(w, [-1]), RangeError, "index -1 at position 0", "[0, 5)");
});

gpuTest("checked mode: a bad GPU target throws at the next read back, once, then reads work again", async () => {
  await checked(async () => {
    const logits = fromArray(randn(6 * 10, mulberry32(4)), [6, 10]);
    const target = fromArray(new Int32Array([1, 2, -100, 12, 15, 0]));
    const loss = crossEntropy(logits, target);
    await assertRejects(() => loss.item(), RangeError, "crossEntropy: target 12 at row 3 is out of range [0, 10)");
    const ok = crossEntropy(logits, fromArray(new Int32Array([1, 2, -100, 9, 0, 0])));
    assert(Number.isFinite(await ok.item()), "valid targets read back after the error");
    const nll = nllLoss(logits, fromArray(new Int32Array([0, 0, 0, 0, 0, -3])), { ignoreIndex: 0 });
    await assertRejects(() => nll.item(), RangeError, "nllLoss: target -3 at row 5 is out of range [0, 10)");
  });
});

gpuTest("checked mode: a bad GPU embedding index names its position in a 2-D index", async () => {
  await checked(async () => {
    const w = fromArray(randn(5 * 3, mulberry32(5)), [5, 3]);
    const y = embedding(w, fromArray(new Int32Array([0, 1, 2, 3, 4, 9]), [2, 3]));
    await assertRejects(() => y.toArray(), RangeError, "embedding: index 9 at position [1, 2] is out of range [0, 5)");
  });
});

gpuTest("checked mode changes no result; with checks off a bad GPU target is not detected (NaN)", async () => {
  const rng = mulberry32(6);
  const n = 33, c = 7, x = randn(n * c, rng), t = randint(n, c, rng);
  const logits = fromArray(x, [n, c]), target = fromArray(t);
  const off = await crossEntropy(logits, target, { reduction: "none" }).toArray();
  let on: ArrayLike<number> = [];
  await checked(async () => {
    on = await crossEntropy(logits, target, { reduction: "none" }).toArray();
  });
  assertRelClose(on, off, 0, "checked vs unchecked");
  const bad = await crossEntropy(logits, fromArray(new Int32Array(n).fill(c))).item();
  assert(Number.isNaN(bad), `unchecked bad target gives NaN, got ${bad}`);
});

gpuTest("setIndexChecks refuses a non-boolean", () => {
  assertThrows(() => setIndexChecks(1 as unknown as boolean), TypeError, "setIndexChecks", "number");
});
