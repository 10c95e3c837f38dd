/**
 * bf16 pack/unpack on the GPU must be bit-identical with the host's (src/tensor/bf16.ts, whose
 * rounding test/unit/tensor/bf16_test.ts checks against a nearest-even reference): pack on the
 * GPU, read back, compare word for word; unpack every bf16 pattern and compare bits.
 */
import { packBf16, unpackBf16 } from "../../../../src/tensor/bf16.ts";
import { fromArray } from "../../../../src/tensor/creation.ts";
import { packBf16Tensor, packBf16Tensors, unpackBf16Tensor } from "../../../../src/tensor/ops/bf16.ts";
import { Tensor } from "../../../../src/tensor/tensor.ts";
import { assertEquals, assertThrows } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { allBf16Words, quietBf16, SPECIAL_BITS, TIE_LOWS } from "../../../util/bf16_bits.ts";
import { mulberry32, randn } from "../../../util/random.ts";

/** First differing word, as a message, or "" when equal. */
function firstDiff(got: Uint32Array, want: Uint32Array, bits?: Uint32Array): string {
  if (got.length !== want.length) return `length ${got.length}, want ${want.length}`;
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i]) {
      const inputs = bits ? ` (inputs 0x${bits[2 * i]?.toString(16)}, 0x${bits[2 * i + 1]?.toString(16)})` : "";
      return `word ${i}: got 0x${got[i].toString(16)}, want 0x${want[i].toString(16)}${inputs}`;
    }
  }
  return "";
}

function bitsInput(n: number, seed: number): Uint32Array<ArrayBuffer> {
  const rng = mulberry32(seed);
  const bits = new Uint32Array(n);
  bits.set(SPECIAL_BITS);
  let i = SPECIAL_BITS.length;
  // Exact ties (and neighbours) at random exponents and both parities, then random patterns.
  for (; i < 3 * 4096; i += 3) {
    const hi = Math.floor(rng() * 65536) << 16;
    TIE_LOWS.forEach((low, k) => (bits[i + k] = (hi | low) >>> 0));
  }
  for (; i < n; i++) bits[i] = Math.floor(rng() * 2 ** 32);
  return bits;
}

for (const n of [100_001, 7, 1]) {
  gpuTest(`packBf16Tensor matches packBf16 word for word on ${n} f32 bit patterns (odd count)`, async () => {
    const bits = bitsInput(Math.max(n, SPECIAL_BITS.length + 3 * 4096), 31 + n).subarray(0, n);
    const x = new Float32Array(bits.buffer, 0, n);
    const words = packBf16Tensor(fromArray(x));
    assertEquals(words.dtype, "u32", "dtype");
    assertEquals(words.shape, [Math.ceil(n / 2)], "shape");
    const got = await words.toArray() as Uint32Array;
    assertEquals(firstDiff(got, packBf16(x), bits), "", "GPU vs host pack");
  });
}

gpuTest("unpackBf16Tensor of every bf16 pattern gives the host's f32 bits", async () => {
  const words = allBf16Words();
  const y = unpackBf16Tensor(fromArray(words), [256, 256]);
  assertEquals(y.shape, [256, 256], "shape");
  const got = new Uint32Array((await y.toF32()).buffer);
  assertEquals(firstDiff(got, new Uint32Array(unpackBf16(words, 65536).buffer)), "", "GPU vs host unpack");
  // And back: the GPU pack of the unpacked values restores every pattern, NaNs made quiet.
  const again = await packBf16Tensor(y).toArray() as Uint32Array;
  const want = Uint32Array.from(words, (w) => (quietBf16(w & 0xffff) | (quietBf16(w >>> 16) << 16)) >>> 0);
  assertEquals(firstDiff(again, want), "", "GPU pack of GPU unpack");
});

gpuTest("packBf16Tensor with a scale matches packBf16 with the same scale on normal values", async () => {
  const rng = mulberry32(5);
  const x = randn(4097, rng, 100);
  x[0] = Infinity;
  x[1] = -Infinity;
  x[2] = 3.4e38; // times 3 overflows to Inf in f32
  for (const scale of [3, 1 / 7, -0.5]) {
    const got = await packBf16Tensor(fromArray(x), scale).toArray() as Uint32Array;
    assertEquals(firstDiff(got, packBf16(x, scale)), "", `scale ${scale}`);
  }
});

gpuTest("packBf16Tensors packs views of one buffer in place, word for word as packBf16 of their concatenation", async (device) => {
  // Odd sizes: words straddle two tensors; an empty one; rows of the arena left as padding.
  const sizes = [3, 0, 1, 4097, 7, 1, 256, 33];
  const align = device.limits.minStorageBufferOffsetAlignment / 4;
  const offsets: number[] = [];
  let total = 0;
  for (const n of sizes) offsets.push(total), total += Math.max(1, Math.ceil(n / align)) * align;
  const arenaBits = bitsInput(Math.max(total, SPECIAL_BITS.length + 3 * 4096), 77).subarray(0, total);
  const arena = fromArray(new Float32Array(arenaBits.buffer, 0, total));
  const views = sizes.map((n, k) => Tensor.view(arena, offsets[k], [n]));
  const n = sizes.reduce((a, b) => a + b, 0);
  const concat = new Uint32Array(n);
  let at = 0;
  sizes.forEach((m, k) => (concat.set(arenaBits.subarray(offsets[k], offsets[k] + m), at), at += m));
  const launched: string[] = [];
  const dev = device as unknown as Record<string, unknown>;
  const orig = device.dispatch.bind(device);
  dev.dispatch = (d: { entry: string }) => (launched.push(d.entry), orig(d as never));
  let words: Tensor;
  try {
    words = packBf16Tensors(views);
  } finally {
    delete dev.dispatch;
  }
  assertEquals(launched, ["pack_gather_forward"], "one dispatch");
  assertEquals(words.shape, [Math.ceil(n / 2)], "words");
  const got = await words.toArray() as Uint32Array;
  assertEquals(firstDiff(got, packBf16(new Float32Array(concat.buffer)), concat), "", "gathered GPU pack vs host pack");
  // A single view and views in reverse order (frame order is the list's, not the buffer's).
  const rev = [...views].reverse();
  const revBits = new Uint32Array(n);
  at = 0;
  for (const k of sizes.map((_, i) => sizes.length - 1 - i)) {
    revBits.set(arenaBits.subarray(offsets[k], offsets[k] + sizes[k]), at), at += sizes[k];
  }
  const gotRev = await packBf16Tensors(rev).toArray() as Uint32Array;
  assertEquals(firstDiff(gotRev, packBf16(new Float32Array(revBits.buffer))), "", "reversed order");
  const one = await packBf16Tensors([views[3]]).toArray() as Uint32Array;
  assertEquals(firstDiff(one, packBf16(new Float32Array(concat.buffer, 4 * 4, 4097))), "", "one view");
});

gpuTest("bf16 tensor ops reject wrong dtypes and sizes naming both", () => {
  const f = fromArray(new Float32Array(5));
  const w = fromArray(new Uint32Array(3));
  assertThrows(() => packBf16Tensor(w), TypeError, "packBf16Tensor", "f32", "u32");
  assertThrows(() => packBf16Tensor(f, NaN), RangeError, "packBf16Tensor", "scale", "NaN");
  assertThrows(() => unpackBf16Tensor(f, [5]), TypeError, "unpackBf16Tensor", "u32", "f32");
  assertThrows(() => unpackBf16Tensor(w, [7]), RangeError, "unpackBf16Tensor", "[7]", "4 words", "got 3");
  assertEquals(unpackBf16Tensor(w, [2, 3]).shape, [2, 3], "6 values in 3 words");
  assertThrows(() => packBf16Tensors([f, fromArray(new Float32Array(2))]), RangeError, "packBf16Tensors", "tensor 1", "buffer");
  assertThrows(() => packBf16Tensors([f, w]), TypeError, "packBf16Tensors", "tensor 1", "u32");
});
