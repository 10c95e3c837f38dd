/**
 * Deterministic data order: the per-epoch permutation every rank and
 * the controller derive on their own, epoch slices, the augment pick space, and the
 * per-pick PRNG key of `transform`.
 *
 * NOTE: flodl shuffles with Rust's SmallRng; we use xoshiro128** seeded through
 * SplitMix64, so orders differ from flodl's (this only matters when resuming a flodl
 * checkpoint's coverage, which the resume path refuses by seed anyway).
 */

const M64 = (1n << 64n) - 1n;

/** SplitMix64 step on a u64 state; returns [next state, output]. */
function splitmix64(state: bigint): [bigint, bigint] {
  const s = (state + 0x9e3779b97f4a7c15n) & M64;
  let z = s;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M64;
  return [s, z ^ (z >> 31n)];
}

/**
 * A fast seeded PRNG (xoshiro128**, 32-bit state words) seeded from a u64 through
 * SplitMix64. Identical sequences in every JS engine.
 * @example
 * ```ts
 * import { Rng } from "./permutation.ts";
 * const r = new Rng(7n);
 * r.below(10); // an integer in [0, 10)
 * ```
 */
export class Rng {
  #s = new Uint32Array(4);

  /** A generator whose sequence depends only on `seed` (taken as a u64). */
  constructor(seed: bigint | number) {
    let st = BigInt.asUintN(64, BigInt(seed));
    for (let i = 0; i < 2; i++) {
      let out: bigint;
      [st, out] = splitmix64(st);
      this.#s[2 * i] = Number(out & 0xffffffffn);
      this.#s[2 * i + 1] = Number(out >> 32n);
    }
    // xoshiro must not start from the all-zero state.
    if ((this.#s[0] | this.#s[1] | this.#s[2] | this.#s[3]) === 0) this.#s[0] = 1;
  }

  /**
   * A generator started from raw xoshiro128** state words (test vectors, saved streams).
   * @throws {RangeError} Unless given 4 words, not all zero.
   */
  static fromState(words: readonly number[]): Rng {
    if (words.length !== 4 || words.every((w) => w >>> 0 === 0)) {
      throw new RangeError(`Rng.fromState: need 4 u32 words, not all zero, got [${words.join(", ")}]`);
    }
    const r = new Rng(0);
    r.#s.set(words.map((w) => w >>> 0));
    return r;
  }

  /** Next 32-bit unsigned integer. */
  nextU32(): number {
    const s = this.#s;
    const result = Math.imul(rotl(Math.imul(s[1], 5), 7), 9) >>> 0;
    const t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }

  /** Uniform float in [0, 1) with 53 random bits. */
  next(): number {
    const hi = this.nextU32() >>> 5, lo = this.nextU32() >>> 6;
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  /** Uniform integer in [0, n), unbiased (rejection), for 1 <= n <= 2^32. */
  below(n: number): number {
    if (!(Number.isInteger(n) && n >= 1 && n <= 2 ** 32)) {
      throw new RangeError(`Rng.below: n must be an integer in [1, 2^32], got ${n}`);
    }
    const reject = (2 ** 32 - n) % n; // values below this would favour small results
    for (;;) {
      const x = this.nextU32();
      if (x >= reject) return x % n;
    }
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/**
 * The order of epoch `epoch`: Fisher-Yates over 0..n-1 with a PRNG seeded `seed + epoch`.
 * @param seed Base shuffle seed (a safe integer >= 0).
 * @param epoch Data pass index (with epochSplits > 1, the pass `floor(e / splits)`).
 * @param n Pick space (dataset length × augment).
 * @example
 * ```ts
 * import { permutation } from "./permutation.ts";
 * permutation(42, 0, 5); // the same 5-element order on every rank
 * ```
 */
export function permutation(seed: number, epoch: number, n: number): Uint32Array {
  if (!Number.isInteger(n) || n < 0 || n > 2 ** 32) {
    throw new RangeError(`permutation: n must be an integer in [0, 2^32], got ${n}`);
  }
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = i;
  const rng = new Rng(BigInt(seed) + BigInt(epoch));
  for (let i = n - 1; i > 0; i--) {
    const j = rng.below(i + 1);
    const t = out[i];
    out[i] = out[j];
    out[j] = t;
  }
  return out;
}

/** Where epoch `e` lives when each data pass is cut into `splits` slices of floor(P / splits) picks. */
export interface EpochSlice {
  /** Data pass whose permutation the slice reads. */
  pass: number;
  /** First pick position of the slice within that permutation. */
  offset: number;
  /** Picks in the slice; the remainder P mod splits of each pass is not trained. */
  size: number;
}

/**
 * Slice of the pass permutation that epoch `epoch` trains.
 * @example
 * ```ts
 * import { epochSlice } from "./permutation.ts";
 * epochSlice(5, 2, 101); // { pass: 2, offset: 50, size: 50 }
 * ```
 */
export function epochSlice(epoch: number, splits: number, pickSpace: number): EpochSlice {
  if (!Number.isInteger(splits) || splits < 1) {
    throw new RangeError(`epochSlice: splits must be an integer >= 1, got ${splits}`);
  }
  const size = Math.floor(pickSpace / splits);
  return { pass: Math.floor(epoch / splits), offset: (epoch % splits) * size, size };
}

/** Pick p of an augmented epoch names sample `floor(p / k)`, view `p % k`. */
export function pickToSample(pick: number, augment: number): { sample: number; view: number } {
  return { sample: Math.floor(pick / augment), view: pick % augment };
}

/**
 * The key of one delivered row; per-view randomness in `transform` must come from `rng()`.
 * @example
 * ```ts
 * import { PickKey } from "./permutation.ts";
 * const u = new PickKey(12, 1, 3, 42).rng().next(); // same value on every rank, every time
 * ```
 */
export class PickKey {
  /** The key of one delivered row; the framework makes these for `transform`. */
  constructor(
    /** The dataset index of the row's sample. */
    readonly sample: number,
    /** Which of the sample's `augment` views this row is (0-based). */
    readonly repeat: number,
    /** The epoch the row is delivered in. */
    readonly epoch: number,
    /** The run's base shuffle seed (`DdpRunConfig.seed`). */
    readonly seed: number,
  ) {}

  /**
   * The u64 mix of flodl's pick keys (wrapping arithmetic):
   * `h = seed·0x9E3779B97F4A7C15 + epoch·0xBF58476D1CE4E5B9; h ^= sample·0x94D049BB133111EB;
   * h ^= repeat·0xD6E8FEB86659FD93; h ^= h >> 33`.
   */
  mix(): bigint {
    let h = (BigInt(this.seed) * 0x9e3779b97f4a7c15n + BigInt(this.epoch) * 0xbf58476d1ce4e5b9n) & M64;
    h ^= (BigInt(this.sample) * 0x94d049bb133111ebn) & M64;
    h ^= (BigInt(this.repeat) * 0xd6e8feb86659fd93n) & M64;
    return h ^ (h >> 33n);
  }

  /** A PRNG seeded by {@link mix}. */
  rng(): Rng {
    return new Rng(this.mix());
  }
}
