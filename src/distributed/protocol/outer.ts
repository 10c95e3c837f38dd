/**
 * Outer optimizers, applied to the parameter consensus between reduce and
 * scatter: outer gradient `g = prev_global − consensus`; OuterAvg (identity), SlowMo
 * (heavy-ball) and DiLoCo (Nesterov, resets the inner optimizer every round). f32 math.
 */

import type { OuterSpec } from "./messages.ts";

const f32 = Math.fround;

/** An outer optimizer (flodl `OuterOptimizer`), one instance per site. */
export interface OuterOptimizer {
  /** The class's name (`"SlowMo"`), for messages and the monitor. */
  readonly name: string;
  /** Ranks reset their inner optimizer (momentum, step count) after adopting. */
  readonly resetsInner: boolean;
  /**
   * The new global parameters from the previous global and this round's consensus.
   * @throws {RangeError} When lengths differ.
   */
  step(prevGlobal: Float32Array, consensus: Float32Array): Float32Array;
  /** Momentum to checkpoint (`<stem>.outer.fdl`); null when stateless or never stepped. */
  state(): Float32Array | null;
  /** Restore checkpointed momentum. */
  loadState(s: Float32Array): void;
}

/** Identity: the consensus is the new global (the default). */
export class OuterAvg implements OuterOptimizer {
  /** `"OuterAvg"`. */
  readonly name = "OuterAvg";
  /** False: the inner optimizer keeps its state. */
  readonly resetsInner = false;
  /** Returns `consensus` itself: the consensus is the new global. */
  step(prevGlobal: Float32Array, consensus: Float32Array): Float32Array {
    checkLengths("OuterAvg", prevGlobal, consensus);
    return consensus;
  }
  /** Always null: OuterAvg keeps no momentum. */
  state(): Float32Array | null {
    return null;
  }
  /** Does nothing: there is no momentum to restore. */
  loadState(): void {}
}

/** Outer learning rate and momentum μ. */
export interface MomentumOptions {
  /** Outer learning rate, finite and > 0. */
  lr: number;
  /** Momentum μ, in [0, 1). */
  momentum: number;
}

/** Shared body of {@link SlowMo} and {@link DiLoCo}: an outer step with momentum on the averaged change. */
export abstract class MomentumOuter implements OuterOptimizer {
  /** The subclass's name (`"SlowMo"`, `"DiLoCo"`). */
  abstract readonly name: string;
  /** Whether ranks reset their inner optimizer after adopting (DiLoCo does). */
  abstract readonly resetsInner: boolean;
  /** Outer learning rate. */
  readonly lr: number;
  /** Momentum μ. */
  readonly momentum: number;
  /** Momentum v, one value per parameter element; null until the first step or `loadState`. */
  protected v: Float32Array | null = null;

  /**
   * Check and keep the hyperparameters; the momentum starts empty.
   * @param o Outer learning rate and momentum.
   * @param what The optimizer's name, for messages.
   * @throws {RangeError} When `lr` is not finite and > 0, or `momentum` is not in [0, 1).
   */
  constructor(o: MomentumOptions, what: string) {
    if (!(Number.isFinite(o.lr) && o.lr > 0)) throw new RangeError(`${what}: lr must be finite and > 0, got ${o.lr}`);
    if (!(o.momentum >= 0 && o.momentum < 1)) {
      throw new RangeError(`${what}: momentum must be in [0, 1), got ${o.momentum}`);
    }
    this.lr = o.lr;
    this.momentum = o.momentum;
  }

  /**
   * `g = prev − consensus; v = μ·v + g; new = prev − lr·direction(v, g, μ)`, in f32.
   * @throws {RangeError} When the lengths differ, or differ from the momentum's.
   */
  step(prevGlobal: Float32Array, consensus: Float32Array): Float32Array {
    checkLengths(this.name, prevGlobal, consensus);
    if (this.v === null) this.v = new Float32Array(consensus.length);
    if (this.v.length !== consensus.length) {
      throw new RangeError(
        `${this.name}.step: momentum has ${this.v.length} elements, consensus has ${consensus.length}`,
      );
    }
    const v = this.v, mu = f32(this.momentum), lr = f32(this.lr);
    const out = new Float32Array(consensus.length);
    for (let i = 0; i < out.length; i++) {
      const g = f32(prevGlobal[i] - consensus[i]);
      v[i] = f32(mu * v[i]) + g;
      out[i] = prevGlobal[i] - f32(lr * this.direction(v[i], g, mu));
    }
    return out;
  }

  /** The step direction from the updated momentum and the gradient. */
  protected abstract direction(v: number, g: number, mu: number): number;

  /** A copy of the momentum v; null before the first step. */
  state(): Float32Array | null {
    return this.v ? new Float32Array(this.v) : null;
  }

  /** Replace the momentum v with a copy of `s`. */
  loadState(s: Float32Array): void {
    this.v = new Float32Array(s);
  }
}

/**
 * SlowMo: `v = μ·v + g; new = prev − lr·v` (typical lr 1.0, μ 0.9).
 * @example
 * ```ts
 * import { SlowMo } from "./outer.ts";
 * const o = new SlowMo({ lr: 1.0, momentum: 0.9 });
 * o.step(new Float32Array([1]), new Float32Array([0.5])); // [0.5]: first step, v = g
 * ```
 */
export class SlowMo extends MomentumOuter {
  /** `"SlowMo"`. */
  readonly name = "SlowMo";
  /** False: the inner optimizer keeps its state. */
  readonly resetsInner = false;
  /**
   * With outer learning rate `o.lr` and momentum `o.momentum`; the momentum starts empty.
   * @throws {RangeError} When `lr` is not finite and > 0, or `momentum` is not in [0, 1).
   */
  constructor(o: MomentumOptions) {
    super(o, "SlowMo");
  }
  /** Heavy-ball: the step follows the momentum `v`. */
  protected direction(v: number): number {
    return v;
  }
}

/**
 * DiLoCo (Nesterov outer momentum): `v = μ·v + g; new = prev − lr·(μ·v + g)`; ranks
 * reset their inner optimizer every round (typical lr 0.7, μ 0.9, large windows).
 */
export class DiLoCo extends MomentumOuter {
  /** `"DiLoCo"`. */
  readonly name = "DiLoCo";
  /** True: ranks reset their inner optimizer every round. */
  readonly resetsInner = true;
  /**
   * With outer learning rate `o.lr` and momentum `o.momentum`; the momentum starts empty.
   * @throws {RangeError} When `lr` is not finite and > 0, or `momentum` is not in [0, 1).
   */
  constructor(o: MomentumOptions) {
    super(o, "DiLoCo");
  }
  /** Nesterov: the step follows `μ·v + g`. */
  protected direction(v: number, g: number, mu: number): number {
    return f32(f32(mu * v) + g);
  }
}

/**
 * One site's outer loop: keeps `prev_global`, makes the first window a no-op
 * (prev = consensus, so momentum seeds at zero) and passes zero-mass rounds through.
 * `prev_global` is not checkpointed: after a resume the first window re-anchors.
 * @example
 * ```ts
 * import { OuterStepper, SlowMo } from "./outer.ts";
 * const s = new OuterStepper(new SlowMo({ lr: 1, momentum: 0.9 }));
 * s.apply(new Float32Array([1, 2])); // first window: returns the consensus unchanged
 * s.apply(null); // zero-mass round: null, nothing steps
 * ```
 */
export class OuterStepper {
  #prev: Float32Array | null = null;

  constructor(readonly optimizer: OuterOptimizer) {}

  /** The new global for this round's consensus, or null (keep local) for a zero-mass round. */
  apply(consensus: Float32Array | null): Float32Array | null {
    if (consensus === null) return null;
    const prev = this.#prev ?? consensus;
    const next = this.optimizer.step(prev, consensus);
    this.#prev = new Float32Array(next);
    return next;
  }

  /** Forget `prev_global` (the next window re-anchors). */
  reanchor(): void {
    this.#prev = null;
  }
}

function checkLengths(what: string, a: Float32Array, b: Float32Array): void {
  if (a.length !== b.length) {
    throw new RangeError(`${what}.step: prevGlobal has ${a.length} elements, consensus has ${b.length}`);
  }
}

/**
 * The {@link OuterSpec} a rank rebuilds `o` from (nccl-*: each rank steps its own replica,
 * flodl's outer optimizer), or undefined for an outer optimizer of another class (its factory is a
 * closure the ranks cannot get; the coordinator then steps it and sends the result).
 * @example
 * ```ts
 * import { describeOuter, DiLoCo, outerFromSpec } from "./outer.ts";
 * const spec = describeOuter(new DiLoCo({ lr: 0.7, momentum: 0.9 })); // { name: "DiLoCo", lr: 0.7, momentum: 0.9 }
 * outerFromSpec(spec!).name; // "DiLoCo"
 * ```
 */
export function describeOuter(o: OuterOptimizer): OuterSpec | undefined {
  // Exact classes only: a subclass may step differently.
  if (Object.getPrototypeOf(o) === OuterAvg.prototype) return { name: "OuterAvg" };
  for (const cls of [SlowMo, DiLoCo]) {
    if (Object.getPrototypeOf(o) === cls.prototype) {
      const m = o as MomentumOuter;
      return { name: m.name as "SlowMo" | "DiLoCo", lr: m.lr, momentum: m.momentum };
    }
  }
  return undefined;
}

/**
 * A fresh outer optimizer from its spec (no momentum yet).
 * @throws {RangeError} For an unknown name or bad hyperparameters.
 */
export function outerFromSpec(s: OuterSpec): OuterOptimizer {
  const o = build(s);
  if (s.state) o.loadState(s.state);
  return o;
}

function build(s: OuterSpec): OuterOptimizer {
  switch (s.name) {
    case "OuterAvg":
      return new OuterAvg();
    case "SlowMo":
      return new SlowMo({ lr: s.lr!, momentum: s.momentum! });
    case "DiLoCo":
      return new DiLoCo({ lr: s.lr!, momentum: s.momentum! });
    default:
      throw new RangeError(`outer optimizer "${(s as { name: string }).name}": expected OuterAvg, SlowMo or DiLoCo`);
  }
}
