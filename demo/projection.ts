/**
 * A fixed random projection of flat parameter vectors to 3-D: three seeded Gaussian
 * directions, orthonormalised, so every frame of a run (and every run of the same model)
 * lands in the same coordinates and differences between ranks keep their proportions.
 */

/** A point of the 3-D view. */
export type Vec3 = [number, number, number];

/** Seed of the projection: the same directions for every run of the page. */
export const PROJECTION_SEED = 20_240_613;

/** mulberry32: a small seeded generator of uniform numbers in [0, 1). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal samples (Box–Muller) from a uniform generator. */
function gaussian(next: () => number): () => number {
  let spare: number | undefined;
  return () => {
    if (spare !== undefined) {
      const s = spare;
      spare = undefined;
      return s;
    }
    const u = 1 - next(), v = next();
    const r = Math.sqrt(-2 * Math.log(u));
    spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  };
}

function dot(a: Float32Array | Float64Array, b: Float32Array | Float64Array): number {
  // NOTE: f64 accumulation: 200k-term dot products of f32 values lose digits in f32.
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/**
 * Three orthonormal directions of an `n`-dimensional parameter space, drawn from a seeded
 * Gaussian; `project(v)` is the three dot products.
 * @throws {RangeError} When `n` is not an integer >= 3.
 */
export class RandomProjection {
  readonly n: number;
  readonly #dirs: Float64Array[];

  constructor(n: number, seed = PROJECTION_SEED) {
    if (!Number.isInteger(n) || n < 3) throw new RangeError(`RandomProjection: n must be an integer >= 3, got ${n}`);
    this.n = n;
    const g = gaussian(mulberry32(seed));
    this.#dirs = [];
    for (let k = 0; k < 3; k++) {
      const d = new Float64Array(n);
      for (let i = 0; i < n; i++) d[i] = g();
      // Gram–Schmidt against the earlier directions, then unit length.
      for (const e of this.#dirs) {
        const c = dot(d, e);
        for (let i = 0; i < n; i++) d[i] -= c * e[i];
      }
      const norm = Math.sqrt(dot(d, d));
      for (let i = 0; i < n; i++) d[i] /= norm;
      this.#dirs.push(d);
    }
  }

  /**
   * The three coordinates of `v` (its first `n` values).
   * @throws {RangeError} When `v` is shorter than `n`.
   */
  project(v: Float32Array): Vec3 {
    if (v.length < this.n) throw new RangeError(`RandomProjection.project: need ${this.n} values, got ${v.length}`);
    const [a, b, c] = this.#dirs;
    let x = 0, y = 0, z = 0;
    for (let i = 0; i < this.n; i++) {
      const t = v[i];
      x += t * a[i];
      y += t * b[i];
      z += t * c[i];
    }
    return [x, y, z];
  }
}
