/**
 * bf16 on the host (src/tensor/bf16.ts) against an independent rounding reference: the two
 * bf16 neighbours of a value, compared by distance in f64, ties to the even one. The bit
 * trick under test is not used here.
 */
import { accumulateBf16, bf16ToF32, bitsToBf16, f32ToBf16, packBf16, unpackBf16 } from "../../../src/tensor/bf16.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";
import { allBf16Words, isNanBf16, quietBf16, SPECIAL_BITS, TIE_LOWS } from "../../util/bf16_bits.ts";
import { mulberry32 } from "../../util/random.ts";

/** Magnitude of bf16 bits without the sign; exponent 255 with mantissa 0 counts as 2^128 (the overflow target). */
function magnitude(m: number): number {
  const e = (m >> 7) & 0xff, f = m & 0x7f;
  return e === 0 ? f * 2 ** -133 : (1 + f / 128) * 2 ** (e - 127);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const valueOfBits = (b: number) => ((u32[0] = b), f32[0]);

/** bf16 bits of the f32 with bits `b`: nearest bf16 by value, ties to even; NaN keeps its top bits and is made quiet. */
function refBf16(b: number): number {
  const sign = (b >>> 16) & 0x8000;
  const abs = b & 0x7fffffff;
  if (abs > 0x7f800000) return ((b >>> 16) | 0x0040) & 0xffff; // the format's NaN rule
  if (abs === 0x7f800000) return sign | 0x7f80;
  const x = Math.abs(valueOfBits(b));
  const lo = abs >>> 16; // truncation toward zero: the neighbour at or below |x|
  const dLo = x - magnitude(lo), dHi = magnitude(lo + 1) - x;
  const pick = dLo < dHi ? lo : dHi < dLo ? lo + 1 : (lo & 1) === 0 ? lo : lo + 1;
  return sign | pick;
}

Deno.test("every bf16 pattern decodes to its value and encodes back to itself (NaN: made quiet)", () => {
  const words = allBf16Words();
  for (let u = 0; u < 65536; u++) {
    const v = bf16ToF32(u);
    if (isNanBf16(u)) assert(Number.isNaN(v), `0x${u.toString(16)} decodes to NaN`);
    else {
      const want = (u & 0x8000 ? -1 : 1) * (((u & 0x7fff) === 0x7f80) ? Infinity : magnitude(u & 0x7fff));
      assert(Object.is(v, want), `0x${u.toString(16)} decodes to ${v}, want ${want}`);
      assertEquals(f32ToBf16(v), u, `f32ToBf16(bf16ToF32(0x${u.toString(16)}))`);
    }
  }
  // Through arrays the NaN payload bits survive too: only the quiet bit is added.
  const back = packBf16(unpackBf16(words, 65536));
  for (let u = 0; u < 65536; u++) {
    const got = (back[u >> 1] >>> ((u & 1) * 16)) & 0xffff;
    assertEquals(got, quietBf16(u), `array round trip of 0x${u.toString(16)}`);
  }
});

Deno.test("rounding of special and random f32 bit patterns matches the nearest-even reference", () => {
  const rng = mulberry32(2024);
  const bits = [...SPECIAL_BITS];
  for (let i = 0; i < 200_000; i++) bits.push(Math.floor(rng() * 2 ** 32));
  // Exact ties and their neighbours at random exponents, both parities of the kept part.
  for (let i = 0; i < 20_000; i++) {
    const hi = Math.floor(rng() * 65536) << 16;
    for (const low of TIE_LOWS) bits.push((hi | low) >>> 0);
  }
  for (const b of bits) {
    const want = refBf16(b);
    assertEquals(bitsToBf16(b), want, `bitsToBf16(0x${b.toString(16)})`);
    if ((b & 0x7fffffff) <= 0x7f800000) {
      assertEquals(f32ToBf16(valueOfBits(b)), want, `f32ToBf16 of 0x${b.toString(16)}`);
    }
  }
  assertEquals(bitsToBf16(0x7f7fffff), 0x7f80, "max finite rounds up into Inf");
  assertEquals(bitsToBf16(0x7f800001), 0x7fc0, "a NaN whose payload sits in the dropped bits stays NaN");
});

Deno.test("packBf16 puts element 2i low and 2i+1 high, pads odd lengths with 0, and pre-scales in f32", () => {
  const rng = mulberry32(7);
  const src = Float32Array.from({ length: 33 }, () => (rng() - 0.5) * 10);
  const words = packBf16(src);
  assertEquals(words.length, 17, "words for 33 values");
  for (let i = 0; i < 33; i++) {
    const h = (words[i >> 1] >>> ((i & 1) * 16)) & 0xffff;
    assertEquals(h, refBf16(((f32[0] = src[i]), u32[0])), `element ${i}`);
  }
  assertEquals(words[16] >>> 16, 0, "padding");
  const scaled = packBf16(src, 1 / 3);
  const s = Math.fround(1 / 3);
  for (let i = 0; i < 33; i++) {
    const h = (scaled[i >> 1] >>> ((i & 1) * 16)) & 0xffff;
    assertEquals(h, refBf16(((f32[0] = Math.fround(src[i] * s)), u32[0])), `scaled element ${i}`);
  }
  const un = unpackBf16(words, 33);
  for (let i = 0; i < 33; i++) assertEquals(un[i], bf16ToF32(refBf16(((f32[0] = src[i]), u32[0]))), `unpacked ${i}`);
});

Deno.test("accumulateBf16 adds weight·value into the f32 accumulator", () => {
  const rng = mulberry32(8);
  const src = Float32Array.from({ length: 9 }, () => rng() * 4 - 2);
  const acc = Float32Array.from({ length: 9 }, () => rng());
  const start = Float32Array.from(acc);
  accumulateBf16(acc, packBf16(src), 0.25);
  for (let i = 0; i < 9; i++) {
    const v = bf16ToF32(refBf16(((f32[0] = src[i]), u32[0])));
    assertEquals(acc[i], Math.fround(start[i] + 0.25 * v), `acc ${i}`);
  }
});

Deno.test("bf16 helpers reject bad arguments naming them", () => {
  assertThrows(() => bf16ToF32(65536), RangeError, "bf16ToF32", "65536");
  assertThrows(() => unpackBf16(new Uint32Array(2), 5), RangeError, "unpackBf16", "3 words", "got 2");
  assertThrows(() => accumulateBf16(new Float32Array(3), new Uint32Array(1)), RangeError, "accumulateBf16", "2 words");
  assertThrows(() => packBf16(new Float32Array(2), NaN), RangeError, "packBf16", "scale", "NaN");
});
