import { fromArray, manualSeed, rand } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import { dropout, dropoutOp } from "../../../../src/tensor/ops/dropout.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { mulberry32, randn } from "../../../util/random.ts";

/** The PCG-RXS-M-XS hash of shaders/fill.wgsl and shaders/dropout.wgsl, on the host. */
function pcg(v: number): number {
  const state = (Math.imul(v, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> ((state >>> 28) + 4)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}
/** Uniform [0, 1) number of element i under `seed` (24 bits). */
const unit = (seed: number, i: number) => (pcg((pcg(seed) + i) >>> 0) >>> 8) / 16777216;

gpuTest(
  "dropout keeps element i when u(seed, i) >= p and scales by 1/(1-p); backward applies the same mask",
  async () => {
    const rng = mulberry32(100);
    for (
      const [shape, p, seed] of [[[33, 7], 0.3, 1234], [[257], 0.5, 7], [[1], 0.9, 99], [
        [3, 5, 7],
        0.1,
        0xfffffff0,
      ]] as [number[], number, number][]
    ) {
      const n = shape.reduce((a, b) => a * b, 1);
      const x = randn(n, rng), dy = randn(n, rng);
      const mask = Float64Array.from({ length: n }, (_, i) => (unit(seed, i) >= p ? 1 / (1 - p) : 0));
      const { output, grads } = forwardBackward(
        dropoutOp,
        [fromArray(x, shape)],
        { p, training: true, seed },
        fromArray(dy, shape),
      );
      assertRelClose(await output.toArray(), x.map((v, i) => v * mask[i]), 1e-6, `y [${shape}] p ${p}`);
      assertRelClose(await grads[0]!.toArray(), dy.map((v, i) => v * mask[i]), 1e-6, `dx [${shape}] p ${p}`);
      // The same uniforms as rand(shape, { seed }): one seed, one mask, on every device.
      const u = await rand(shape, { seed }).toArray();
      assertEquals(Array.from(u, (v) => v >= p), Array.from(mask, (m) => m > 0), `mask = rand >= p [${shape}]`);
    }
  },
);

gpuTest("dropout drops about a fraction p and differs between seeds", async () => {
  const n = 4099, p = 0.3;
  const x = fromArray(new Float32Array(n).fill(1), [n]);
  const a = await dropout(x, p, { training: true, seed: 1 }).toArray();
  const b = await dropout(x, p, { training: true, seed: 2 }).toArray();
  const dropped = a.filter((v) => v === 0).length / n;
  assert(Math.abs(dropped - p) < 0.03, `dropped fraction ${dropped}, want about ${p}`);
  assert(a.some((v, i) => v !== b[i]), "seeds 1 and 2 gave the same mask");
});

gpuTest("dropout without a seed follows manualSeed; eval does not advance the stream", async () => {
  const x = fromArray(new Float32Array(129).fill(1), [129]);
  manualSeed(9);
  const a = await dropout(x, 0.5, { training: true }).toArray();
  manualSeed(9);
  const evalOut = dropout(x, 0.5, { training: false });
  const b = await dropout(x, 0.5, { training: true }).toArray();
  assertEquals(Array.from(b), Array.from(a), "same global seed, same mask");
  assert(evalOut === x, "eval returns the input itself");
});

gpuTest("dropout is the identity in eval and at p = 0, forward and backward", async () => {
  const x = fromArray([1, 2, 3]), dy = fromArray([4, 5, 6]);
  for (const attrs of [{ p: 0.5, training: false, seed: 3 }, { p: 0, training: true, seed: 3 }]) {
    const { output, grads } = forwardBackward(dropoutOp, [x], attrs, dy);
    assert(output === x, "output is the input");
    assertRelClose(await grads[0]!.toArray(), [4, 5, 6], 0, "dx = dy");
  }
});

gpuTest("dropout rejects p outside [0, 1) and a bad seed", () => {
  const x = fromArray([1, 2, 3]);
  assertThrows(() => dropout(x, 1, { training: true }), RangeError, "dropout", "p", "[0, 1)", "got 1");
  assertThrows(() => dropout(x, -0.1, { training: false }), RangeError, "p", "-0.1");
  assertThrows(() => dropout(x, NaN, { training: true }), RangeError, "p", "NaN");
  assertThrows(() => dropout(x, 0.5, { training: true, seed: -1 }), RangeError, "seed", "-1");
  assertThrows(() => dropout(fromArray(new Int32Array([1])), 0.5, { training: true }), TypeError, "dropout", "i32");
});
