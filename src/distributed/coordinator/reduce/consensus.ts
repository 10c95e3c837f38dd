/**
 * Consensus math: realized-work masses, the sum-and-divide-once
 * accumulation of the CPU averaging plane, the EASGD blend and the divergence measure.
 *
 * NOTE: f32 semantics. Every product and sum is rounded to f32 exactly once, as one f32
 * operation would round it (a double result rounded to float is the correctly rounded float
 * result for +, −, ×, ÷, since 53 >= 2·24 + 2), so the coordinator matches a rank doing the
 * same arithmetic on the GPU.
 */
import type { SyncAck } from "../../protocol/messages.ts";

const f32 = Math.fround;

/**
 * Parameter mass of a rank that took `n` steps: 0 if n <= 0 (also avoids 0^0 = 1 and
 * 0^negative = ∞), n if γ = 1, else n^γ.
 */
export function paramMass(n: number, gamma: number): number {
  if (!(n > 0)) return 0;
  return gamma === 1 ? n : n ** gamma;
}

/** Buffer mass: 1 for a rank that moved, 0 otherwise (buffers are a plain mean over movers). */
export function bufferMass(n: number): number {
  return n > 0 ? 1 : 0;
}

/**
 * Normalized consensus weights `m_k / Σ m` for the given step counts; null for a
 * zero-mass round (no consensus: every rank keeps its local state).
 * @example
 * ```ts
 * import { consensusWeights } from "./consensus.ts";
 * consensusWeights([1, 3], 1); // [0.25, 0.75]
 * consensusWeights([0, 0], 1); // null
 * ```
 */
export function consensusWeights(steps: readonly number[], gamma: number): number[] | null {
  const m = steps.map((n) => paramMass(n, gamma));
  const sum = m.reduce((a, b) => a + b, 0);
  return sum > 0 ? m.map((x) => x / sum) : null;
}

/**
 * `acc += mass · frame` elementwise in f32 (what a rank's pre-scale plus the controller's
 * sum do). With `mass` 1 it folds an already pre-scaled frame.
 * @throws {RangeError} When the lengths differ.
 */
export function accumulate(acc: Float32Array, frame: ArrayLike<number>, mass: number): void {
  if (acc.length !== frame.length) {
    throw new RangeError(`accumulate: frame has ${frame.length} elements, accumulator has ${acc.length}`);
  }
  const m = f32(mass);
  if (m === 1) {
    for (let i = 0; i < acc.length; i++) acc[i] += frame[i];
  } else {
    for (let i = 0; i < acc.length; i++) acc[i] += f32(m * frame[i]);
  }
}

/**
 * Divide once by the summed mass (multiply by its f32 reciprocal, as the bf16 wire path
 * does), in place; null when the mass is 0 (zero-mass round: keep local).
 */
export function finish(acc: Float32Array, massSum: number): Float32Array | null {
  if (!(massSum > 0)) return null;
  const inv = f32(1 / massSum);
  for (let i = 0; i < acc.length; i++) acc[i] = f32(acc[i] * inv);
  return acc;
}

/**
 * Sum-and-count consensus over the frames actually received (dead ranks enter neither sum
 * nor divisor); relays may fold partial sums with {@link ConsensusAccumulator.addPrescaled}.
 * @example
 * ```ts
 * import { ConsensusAccumulator, paramMass } from "./consensus.ts";
 * const acc = new ConsensusAccumulator(2);
 * acc.add(new Float32Array([1, 2]), paramMass(1, 1));
 * acc.add(new Float32Array([3, 4]), paramMass(3, 1));
 * acc.finish(); // Float32Array [2.5, 3.5]
 * ```
 */
export class ConsensusAccumulator {
  readonly sum: Float32Array;
  massSum = 0;
  frames = 0;

  constructor(readonly length: number) {
    this.sum = new Float32Array(length);
  }

  /** Fold a raw frame with its mass. */
  add(frame: ArrayLike<number>, mass: number): void {
    if (mass > 0) accumulate(this.sum, frame, mass);
    this.massSum += mass;
    this.frames += 1;
  }

  /** Fold a frame a rank (or relay) already multiplied by `mass` (a sum of masses for a relay fold). */
  addPrescaled(frame: ArrayLike<number>, mass: number): void {
    accumulate(this.sum, frame, 1);
    this.massSum += mass;
    this.frames += 1;
  }

  /** The consensus (a new array), or null for a zero-mass round. */
  finish(): Float32Array | null {
    return finish(new Float32Array(this.sum), this.massSum);
  }
}

/**
 * EASGD elastic blend (cpu-async): `(1 − α)·local + α·consensus`, in f32, into `out`
 * (default: a new array). α = 1 is a plain overwrite.
 * @throws {RangeError} When lengths differ or α is outside (0, 1].
 */
export function easgdBlend(
  local: ArrayLike<number>,
  consensus: ArrayLike<number>,
  alpha: number,
  out = new Float32Array(local.length),
): Float32Array {
  if (!(alpha > 0 && alpha <= 1)) throw new RangeError(`easgdBlend: alpha must be in (0, 1], got ${alpha}`);
  if (local.length !== consensus.length || out.length !== local.length) {
    throw new RangeError(
      `easgdBlend: lengths differ: local ${local.length}, consensus ${consensus.length}, out ${out.length}`,
    );
  }
  const a = f32(alpha), b = f32(1 - alpha);
  for (let i = 0; i < out.length; i++) out[i] = f32(b * local[i]) + f32(a * consensus[i]);
  return out;
}

/** The norms of a SyncAck as {@link divergence} measures them: every field present. */
export type Divergence = Required<Omit<SyncAck, "rank">>;

/** ||post|| below this makes the relative divergence meaningless; report 0. */
export const DIVERGENCE_EPS = 1e-10;

/**
 * Divergence of a rank's pre-sync parameters from the consensus: global L2 norms over all
 * parameter tensors, each tensor's squared norm summed in f64, then combined.
 * @param pre Parameters before adopting, one array per tensor (or one flat array).
 * @param post The consensus, same layout.
 * @throws {RangeError} When the layouts differ.
 */
export function divergence(
  pre: ArrayLike<number> | readonly ArrayLike<number>[],
  post: ArrayLike<number> | readonly ArrayLike<number>[],
): Divergence {
  const P = asTensors(pre), Q = asTensors(post);
  if (P.length !== Q.length) throw new RangeError(`divergence: pre has ${P.length} tensors, post has ${Q.length}`);
  let pre2 = 0, post2 = 0, diff2 = 0;
  for (let t = 0; t < P.length; t++) {
    const p = P[t], q = Q[t];
    if (p.length !== q.length) {
      throw new RangeError(`divergence: tensor ${t} has ${p.length} elements in pre, ${q.length} in post`);
    }
    let a = 0, b = 0, d = 0;
    for (let i = 0; i < p.length; i++) {
      a += p[i] * p[i];
      b += q[i] * q[i];
      d += (p[i] - q[i]) * (p[i] - q[i]);
    }
    pre2 += a;
    post2 += b;
    diff2 += d;
  }
  const preNorm = Math.sqrt(pre2), postNorm = Math.sqrt(post2);
  return { divergence: postNorm > DIVERGENCE_EPS ? Math.sqrt(diff2) / postNorm : 0, preNorm, postNorm };
}

function asTensors(x: ArrayLike<number> | readonly ArrayLike<number>[]): readonly ArrayLike<number>[] {
  return x.length > 0 && typeof (x as ArrayLike<unknown>)[0] !== "number"
    ? (x as readonly ArrayLike<number>[])
    : [x as ArrayLike<number>];
}
