import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import { ropeAttrs, ropeOp, ropeTable, rotaryEmbedding } from "../../../../src/tensor/ops/rope.ts";
import { ropeRef } from "../../../reference/rope.ts";
import { assertRelClose, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { count, mulberry32, randn } from "../../../util/random.ts";

const CASES: { shape: number[]; base: number; offset: number; interleaved: boolean }[] = [
  { shape: [7, 6], base: 10000, offset: 0, interleaved: false },
  { shape: [2, 3, 9, 10], base: 10000, offset: 5, interleaved: false },
  { shape: [3, 33, 2], base: 500, offset: 0, interleaved: true },
  { shape: [1, 2, 128, 64], base: 10000, offset: 0, interleaved: true },
  { shape: [1, 1, 129, 32], base: 10000, offset: 3, interleaved: false }, // angles past 100 rad
];

for (const c of CASES) {
  gpuTest(
    `rotaryEmbedding [${c.shape}] offset ${c.offset} interleaved ${c.interleaved}: y and dx match f64 reference`,
    async (device) => {
      const rng = mulberry32(c.shape.length * 7 + c.offset);
      const n = count(c.shape), t = c.shape.at(-2)!, d = c.shape.at(-1)!;
      const x = randn(n, rng), dy = randn(n, rng);
      const want = ropeRef(x, t, d, c, dy);
      const tab = ropeTable(device, c.offset + t, d, c.base);
      const { output, grads } = forwardBackward(ropeOp, [fromArray(x, c.shape), tab], c, fromArray(dy, c.shape));
      assertRelClose(await output.toArray(), want.y, 1e-4, "y");
      assertRelClose(await grads[0]!.toArray(), want.dx, 1e-4, "dx");
    },
  );
}

gpuTest("rotaryEmbedding grows its cached table when a longer sequence comes", async () => {
  const rng = mulberry32(77);
  const short = randn(4 * 8, rng), long = randn(40 * 8, rng);
  const opts = { base: 10000, offset: 0, interleaved: false };
  const a = rotaryEmbedding(fromArray(short, [4, 8]));
  const b = rotaryEmbedding(fromArray(long, [40, 8]));
  assertRelClose(await a.toArray(), ropeRef(short, 4, 8, opts, short).y, 1e-4, "short");
  assertRelClose(await b.toArray(), ropeRef(long, 40, 8, opts, long).y, 1e-4, "long");
});

gpuTest("rotaryEmbedding rejects an odd head dim, a bad base and a bad offset, naming them", () => {
  assertThrows(() => rotaryEmbedding(fromArray(new Float32Array(15), [3, 5])), RangeError, "D must be even", "[3,5]");
  assertThrows(() => ropeAttrs({ base: 1 }), RangeError, "base", "1");
  assertThrows(() => ropeAttrs({ offset: -2 }), RangeError, "offset", "-2");
});
