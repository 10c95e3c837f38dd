/**
 * dropout2d and Dropout2d (src/nn/functional.ts, src/nn/dropout.ts): each (sample, channel)
 * plane is dropped whole or kept whole and scaled by 1 / (1 − p), the gradient is the same
 * mask times dy, a seed repeats its mask, eval and p = 0 are the identity, and the errors
 * name the argument. (PyTorch draws from another generator: no golden values, properties.)
 */
import { Dropout2d, F, fromArray, Variable } from "../../../src/index.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { count, mulberry32, randn } from "../../util/random.ts";

gpuTest("dropout2d drops or keeps whole planes, scales the kept by 1/(1-p), and its gradient is the same mask", async () => {
  const rng = mulberry32(2810);
  const shape = [4, 40, 3, 5], n = count(shape), plane = 15, p = 0.3;
  const x = randn(n, rng), dy = randn(n, rng);
  for (let i = 0; i < n; i++) if (x[i] === 0) x[i] = 1; // a kept zero would pass for a dropped one
  const input = new Variable(fromArray(x, shape), true);
  const y = F.dropout2d(input, p, true, 1234);
  y.backward(fromArray(dy, shape));
  const out = await y.data.toArray(), dx = await input.grad!.toArray();
  let dropped = 0;
  for (let k = 0; k < n / plane; k++) {
    const at = (j: number) => k * plane + j;
    const kept = out[at(0)] !== 0;
    if (!kept) dropped++;
    const scale = kept ? 1 / (1 - p) : 0;
    for (let j = 0; j < plane; j++) {
      assertRelClose([out[at(j)]], [x[at(j)] * scale], 1e-6, `plane ${k} y[${j}]`);
      assertRelClose([dx[at(j)]], [dy[at(j)] * scale], 1e-6, `plane ${k} dx[${j}]`);
    }
  }
  // 160 planes at p = 0.3: 48 expected, σ ≈ 5.8; [20, 80] fails only a broken mask.
  if (!(dropped >= 20 && dropped <= 80)) throw new Error(`dropout2d dropped ${dropped} of 160 planes at p = 0.3`);
  const again = await F.dropout2d(new Variable(fromArray(x, shape)), p, true, 1234).data.toArray();
  assertEquals(Array.from(again), Array.from(out), "the same seed gives the same mask");
});

gpuTest("Dropout2d is the identity in eval mode and at p = 0; it refuses a non-4-D input and p outside [0, 1)", async () => {
  const x = new Variable(fromArray(new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]), [2, 2, 2, 1]));
  const layer = new Dropout2d(0.5).eval();
  assertEquals(Array.from(await layer.forward(x).data.toArray()), [1, 2, 3, 4, 5, 6, 7, 8]);
  assertEquals(Array.from(await F.dropout2d(x, 0).data.toArray()), [1, 2, 3, 4, 5, 6, 7, 8]);
  assertThrows(() => new Dropout2d(1), RangeError, "Dropout2d", "[0, 1)", "1");
  assertThrows(() => F.dropout2d(x, -0.1), RangeError, "dropout2d", "p", "-0.1");
  assertThrows(() => F.dropout2d(new Variable(fromArray(new Float32Array(6), [2, 3])), 0.5), RangeError, "dropout2d", "[N, C, H, W]", "[2,3]");
});
