/**
 * bf16 bit patterns for the pack/unpack tests (test/unit/tensor/bf16_test.ts on the host,
 * test/gpu/tensor/ops/bf16_test.ts on the GPU), written from the format, not from src/.
 */

/**
 * f32 bit patterns at the edges of rounding to bf16: ties, neighbours of ties, subnormals,
 * zeros, infinities, NaN payloads, overflow.
 */
export const SPECIAL_BITS: readonly number[] = [
  0x00000000,
  0x80000000, // ±0
  0x7f800000,
  0xff800000, // ±Inf
  0x7f800001,
  0xff800001,
  0x7fc00000,
  0xffc00000,
  0x7fffffff,
  0xffffffff,
  0x7f808000,
  0x7fbfffff,
  0x7fa00000, // NaNs
  0x7f7fffff,
  0xff7fffff, // max finite: rounds up to ±Inf
  0x7f7f8000,
  0x7f7f7fff,
  0x7f7e8000, // tie at the max (odd: up to Inf), just below, even tie
  0x3f808000,
  0x3f818000,
  0x3f808001,
  0x3f807fff, // ties 1.0+half ulp (even: down), odd kept part (up), neighbours
  0x00000001,
  0x80000001,
  0x00008000,
  0x00018000,
  0x0000ffff,
  0x007fffff,
  0x807f8000,
  0x00400000, // subnormals
  0x00800000,
  0x007f8000,
  0x007fc000, // smallest normal; subnormal ties rounding into it
];

/**
 * The dropped low halves that make an exact tie (0x8000) and its two neighbours: with a random
 * high half, `(hi | low) >>> 0` gives ties at random exponents and both parities of the kept part.
 */
export const TIE_LOWS: readonly number[] = [0x8000, 0x7fff, 0x8001];

/** Whether bf16 bits `h` (16 bits) are a NaN: exponent all ones, mantissa not zero. */
export const isNanBf16 = (h: number): boolean => (h & 0x7f80) === 0x7f80 && (h & 0x7f) !== 0;

/** bf16 bits `h` with a NaN made quiet (the quiet bit 0x40 set), as packing does; other values unchanged. */
export const quietBf16 = (h: number): number => (isNanBf16(h) ? h | 0x0040 : h);

/** All 65536 bf16 patterns in order, two per word: pattern 2i in the low half of word i, 2i+1 in the high. */
export function allBf16Words(): Uint32Array<ArrayBuffer> {
  const words = new Uint32Array(32768);
  for (let u = 0; u < 65536; u++) words[u >> 1] |= (u & 1) ? u << 16 : u;
  return words;
}
