/**
 * bf16 on the host: the wire format of the data-parallel trainer.
 * bf16 is the top 16 bits of an f32, rounded to nearest, ties to even; NaN stays NaN and
 * ±Inf stay ±Inf. Two bf16 go in one u32 word: element 2i in the low 16 bits, 2i+1 in the
 * high 16 bits. Bit-identical with shaders/bf16.wgsl (the GPU side, src/tensor/ops/bf16.ts).
 * No GPU here.
 */

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/**
 * bf16 bits of the f32 with bits `b` (u32).
 *
 * NOTE: round to nearest, ties to even, on the bits: adding 0x7FFF plus the lowest kept
 * bit carries into bit 16 exactly when the dropped half exceeds 0x8000, or equals it with
 * an odd kept part; a carry out of the largest finite value gives Inf, as rounding should.
 * A NaN keeps its top payload bits and gets the quiet bit (0x0040), so rounding can never
 * turn it into Inf. `>>> 16` wraps the sum to u32 first, matching WGSL's u32 arithmetic.
 */
export function bitsToBf16(b: number): number {
  if ((b & 0x7fffffff) >>> 0 > 0x7f800000) return ((b >>> 16) | 0x0040) & 0xffff;
  return (b + 0x7fff + ((b >>> 16) & 1)) >>> 16;
}

/**
 * bf16 bits (0..65535) of a number, rounded first to f32, then to bf16 (nearest, ties to even).
 * @example
 * ```ts
 * import { f32ToBf16 } from "./bf16.ts";
 * if (f32ToBf16(1) !== 0x3f80) throw new Error("1.0 is 0x3f80");
 * ```
 */
export function f32ToBf16(x: number): number {
  f32Scratch[0] = x;
  return bitsToBf16(u32Scratch[0]);
}

/**
 * The f32 value of bf16 bits (its bits shifted into the high half of an f32).
 * @throws {RangeError} When `bits` is not an integer in [0, 65535].
 * @example
 * ```ts
 * import { bf16ToF32 } from "./bf16.ts";
 * if (bf16ToF32(0xc040) !== -3) throw new Error("0xc040 is -3");
 * ```
 */
export function bf16ToF32(bits: number): number {
  if (!Number.isInteger(bits) || bits < 0 || bits > 0xffff) {
    throw new RangeError(`bf16ToF32: bits must be an integer in [0, 65535], got ${bits}`);
  }
  u32Scratch[0] = bits << 16;
  return f32Scratch[0];
}

/** Words needed for `n` bf16 values. */
export const bf16Words = (n: number): number => Math.ceil(n / 2);

/**
 * Pack f32 values as bf16, two per u32 word (element 2i low, 2i+1 high; an odd length pads
 * a zero). The bits are read straight from `src`'s memory, so NaN payloads survive as the
 * GPU kernel keeps them.
 * @param scale Multiplies each value in f32 before rounding (1: none). The product is
 *   rounded to f32 once, as the GPU's f32 multiply does.
 * @throws {RangeError} When `scale` is not a finite f32.
 * @example
 * ```ts
 * import { packBf16 } from "./bf16.ts";
 * const words = packBf16(Float32Array.of(1, -2, 0.5));
 * if (words.length !== 2 || words[0] !== ((0xc000 << 16) | 0x3f80) >>> 0) throw new Error("packed");
 * ```
 */
export function packBf16(src: Float32Array, scale = 1): Uint32Array<ArrayBuffer> {
  if (!Number.isFinite(Math.fround(scale))) throw new RangeError(`packBf16: scale must be a finite f32, got ${scale}`);
  const n = src.length;
  const out = new Uint32Array(bf16Words(n));
  const bits = new Uint32Array(src.buffer, src.byteOffset, n);
  const s = Math.fround(scale);
  const scaled = s !== 1;
  for (let i = 0; i < n; i++) {
    let h: number;
    if (scaled) {
      // x·s of two f32 is exact in f64 (48 significant bits), so fround rounds once.
      f32Scratch[0] = src[i] * s;
      h = bitsToBf16(u32Scratch[0]);
    } else h = bitsToBf16(bits[i]);
    out[i >> 1] |= (i & 1) ? h << 16 : h;
  }
  return out;
}

/**
 * Unpack `n` bf16 values from words made by {@link packBf16} (or the GPU pack) into f32.
 * Bits are written straight into the result's memory (NaN payloads survive).
 * @throws {RangeError} When `words` holds fewer than ceil(n / 2) words.
 * @example
 * ```ts
 * import { packBf16, unpackBf16 } from "./bf16.ts";
 * const back = unpackBf16(packBf16(Float32Array.of(1, 2, 3)), 3);
 * if (back[2] !== 3) throw new Error("round trip");
 * ```
 */
export function unpackBf16(words: Uint32Array, n: number): Float32Array<ArrayBuffer> {
  checkWords(words, n, "unpackBf16");
  const out = new Float32Array(n);
  const bits = new Uint32Array(out.buffer);
  for (let i = 0; i < n; i++) bits[i] = ((words[i >> 1] >>> ((i & 1) * 16)) & 0xffff) << 16;
  return out;
}

/**
 * Decode bf16 words and add `weight · value` into an f32 accumulator, element by element
 * (the coordinator's averaging of rank frames). The product and sum are rounded to f32 once.
 * @throws {RangeError} When `words` holds fewer than ceil(acc.length / 2) words.
 * @example
 * ```ts
 * import { accumulateBf16, packBf16 } from "./bf16.ts";
 * const acc = new Float32Array(2);
 * accumulateBf16(acc, packBf16(Float32Array.of(2, 4)), 0.5);
 * if (acc[1] !== 2) throw new Error("half of 4");
 * ```
 */
export function accumulateBf16(acc: Float32Array, words: Uint32Array, weight = 1): void {
  checkWords(words, acc.length, "accumulateBf16");
  for (let i = 0; i < acc.length; i++) {
    u32Scratch[0] = ((words[i >> 1] >>> ((i & 1) * 16)) & 0xffff) << 16;
    acc[i] += weight * f32Scratch[0];
  }
}

function checkWords(words: Uint32Array, n: number, op: string): void {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`${op}: n must be a non-negative integer, got ${n}`);
  if (words.length < bf16Words(n)) {
    throw new RangeError(`${op}: ${n} values need ${bf16Words(n)} words, got ${words.length}`);
  }
}
