/** Seeded test inputs (mulberry32), independent of src/. */

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `n` standard normal values rounded to f32 (Box-Muller on mulberry32). */
export function randn(n: number, rng: () => number, scale = 1): Float32Array<ArrayBuffer> {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const u1 = 1 - rng(), u2 = rng();
    out[i] = scale * Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }
  return out;
}

/** `n` uniform values in [lo, hi) rounded to f32. */
export function uniform(n: number, rng: () => number, lo = 0, hi = 1): Float32Array<ArrayBuffer> {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = lo + (hi - lo) * rng();
  return out;
}

/** `n` integers in [0, k). */
export function randint(n: number, k: number, rng: () => number): Int32Array<ArrayBuffer> {
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(rng() * k);
  return out;
}

/** Product of a shape. */
export const count = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);
