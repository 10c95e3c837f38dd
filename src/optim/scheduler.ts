/**
 * Learning-rate schedules as pure functions of the step, with flodl's semantics
 * (flodl/src/nn/scheduler.rs): every rank builds the same schedule and asks
 * `lr(globalStep + stepsSinceAvg)`. Steps are 0-based.
 * Bad arguments are rejected at construction, never clamped.
 */

/** A learning rate as a function of the step. */
export interface Scheduler {
  /**
   * Learning rate at `step` (0-based).
   * @throws {RangeError} When `step` is not an integer >= 0.
   */
  lr(step: number): number;
}

function checkStep(step: number, who: string): void {
  if (!Number.isInteger(step) || step < 0) throw new RangeError(`${who}.lr: step must be an integer >= 0, got ${step}`);
}

function checkFinite(who: string, name: string, v: number): void {
  if (typeof v !== "number" || !Number.isFinite(v)) {
    throw new RangeError(`${who}: ${name} must be a finite number, got ${v}`);
  }
}

function checkCount(who: string, name: string, v: number, min: number): void {
  if (!Number.isInteger(v) || v < min) throw new RangeError(`${who}: ${name} must be an integer >= ${min}, got ${v}`);
}

/**
 * Staircase decay: `baseLr · gamma^floor(step / stepSize)`.
 * @throws {RangeError} When stepSize is not an integer >= 1 or a value is not finite.
 * @example
 * ```ts
 * import { StepDecay } from "./scheduler.ts";
 * const s = new StepDecay(0.1, 10, 0.5);
 * console.log(s.lr(9), s.lr(10)); // 0.1 0.05
 * ```
 */
export class StepDecay implements Scheduler {
  /** Decay `baseLr` by `gamma` every `stepSize` steps (PyTorch's `StepLR`). */
  constructor(
    /** Learning rate of steps 0..stepSize−1. */
    readonly baseLr: number,
    /** Steps between decays, an integer >= 1. */
    readonly stepSize: number,
    /** Factor applied at each decay (0.5 halves the LR). */
    readonly gamma: number,
  ) {
    checkFinite("StepDecay", "baseLr", baseLr);
    checkCount("StepDecay", "stepSize", stepSize, 1);
    checkFinite("StepDecay", "gamma", gamma);
  }
  lr(step: number): number {
    checkStep(step, "StepDecay");
    return this.baseLr * this.gamma ** Math.floor(step / this.stepSize);
  }
}

/**
 * Exponential decay: `baseLr · gamma^step`.
 * @example
 * ```ts
 * import { ExponentialLR } from "./scheduler.ts";
 * console.log(new ExponentialLR(0.1, 0.9).lr(2)); // ≈ 0.081
 * ```
 */
export class ExponentialLR implements Scheduler {
  /** Decay `baseLr` by `gamma` every step (PyTorch's `ExponentialLR`). */
  constructor(
    /** Learning rate at step 0. */
    readonly baseLr: number,
    /** Factor applied per step. */
    readonly gamma: number,
  ) {
    checkFinite("ExponentialLR", "baseLr", baseLr);
    checkFinite("ExponentialLR", "gamma", gamma);
  }
  lr(step: number): number {
    checkStep(step, "ExponentialLR");
    return this.baseLr * this.gamma ** step;
  }
}

/**
 * Decay by `gamma` at each milestone: `baseLr · gamma^(milestones ≤ step)`. Milestones may come
 * in any order.
 * @throws {RangeError} When a milestone is not an integer >= 0.
 * @example
 * ```ts
 * import { MultiStepLR } from "./scheduler.ts";
 * console.log(new MultiStepLR(0.1, [30, 60], 0.1).lr(30)); // ≈ 0.01
 * ```
 */
export class MultiStepLR implements Scheduler {
  /** The milestone steps, sorted ascending (a frozen copy of the constructor's). */
  readonly milestones: readonly number[];
  /**
   * Decay `baseLr` by `gamma` at each of `milestones` (integers >= 0, any order), PyTorch's `MultiStepLR`.
   * @throws {TypeError} When `milestones` is not an array.
   */
  constructor(
    /** Learning rate before the first milestone. */
    readonly baseLr: number,
    milestones: readonly number[],
    /** Factor applied at each milestone. */
    readonly gamma: number,
  ) {
    checkFinite("MultiStepLR", "baseLr", baseLr);
    checkFinite("MultiStepLR", "gamma", gamma);
    if (!Array.isArray(milestones)) throw new TypeError(`MultiStepLR: milestones must be an array, got ${milestones}`);
    milestones.forEach((m, i) => checkCount("MultiStepLR", `milestones[${i}]`, m, 0));
    this.milestones = Object.freeze([...milestones].sort((a, b) => a - b));
  }
  lr(step: number): number {
    checkStep(step, "MultiStepLR");
    return this.baseLr * this.gamma ** this.milestones.filter((m) => step >= m).length;
  }
}

/**
 * Cosine annealing from `baseLr` to `minLr` over `totalSteps`, then flat at `minLr`:
 * `minLr + ½(baseLr − minLr)(1 + cos(π · min(step, T) / T))`.
 * @throws {RangeError} When totalSteps is not an integer >= 1.
 * @example
 * ```ts
 * import { CosineScheduler } from "./scheduler.ts";
 * console.log(new CosineScheduler(0.1, 0.001, 100).lr(100)); // 0.001
 * ```
 */
export class CosineScheduler implements Scheduler {
  /** Anneal from `baseLr` to `minLr` over `totalSteps`, then hold (PyTorch's `CosineAnnealingLR` up to T_max). */
  constructor(
    /** Learning rate at step 0. */
    readonly baseLr: number,
    /** Learning rate at `totalSteps` and after. */
    readonly minLr: number,
    /** Length of the annealing (T), an integer >= 1. */
    readonly totalSteps: number,
  ) {
    checkFinite("CosineScheduler", "baseLr", baseLr);
    checkFinite("CosineScheduler", "minLr", minLr);
    checkCount("CosineScheduler", "totalSteps", totalSteps, 1);
  }
  lr(step: number): number {
    checkStep(step, "CosineScheduler");
    const t = Math.min(step, this.totalSteps) / this.totalSteps;
    return this.minLr + 0.5 * (this.baseLr - this.minLr) * (1 + Math.cos(Math.PI * t));
  }
}

/**
 * Linear warmup, then another schedule: `targetLr · (step + 1) / warmupSteps` for
 * step < warmupSteps, then `inner.lr(step − warmupSteps)` (the inner schedule starts at 0).
 * @throws {RangeError} When warmupSteps is not an integer >= 0.
 * @example
 * ```ts
 * import { CosineScheduler, WarmupScheduler } from "./scheduler.ts";
 * const s = new WarmupScheduler(new CosineScheduler(0.1, 0, 90), 0.1, 10);
 * console.log(s.lr(0), s.lr(9), s.lr(10)); // 0.01 0.1 0.1
 * ```
 */
export class WarmupScheduler implements Scheduler {
  /**
   * Warm up linearly to `targetLr` over `warmupSteps`, then follow `inner`.
   * @throws {TypeError} When `inner` has no `lr(step)` method.
   */
  constructor(
    /** The schedule after the warmup; it sees steps counted from the warmup's end. */
    readonly inner: Scheduler,
    /** Learning rate reached at the warmup's last step (`warmupSteps − 1`). */
    readonly targetLr: number,
    /** Steps of the warmup, an integer >= 0 (0: `inner` from step 0). */
    readonly warmupSteps: number,
  ) {
    if (typeof inner?.lr !== "function") {
      throw new TypeError("WarmupScheduler: inner must be a Scheduler (an object with lr(step))");
    }
    checkFinite("WarmupScheduler", "targetLr", targetLr);
    checkCount("WarmupScheduler", "warmupSteps", warmupSteps, 0);
  }
  lr(step: number): number {
    checkStep(step, "WarmupScheduler");
    if (step < this.warmupSteps) return this.targetLr * (step + 1) / this.warmupSteps;
    return this.inner.lr(step - this.warmupSteps);
  }
}

/**
 * One-cycle policy (Smith 2018): linear from maxLr/25 to maxLr over the first
 * `round(totalSteps · warmupFrac)` steps, then cosine down to maxLr/25 at `totalSteps`,
 * flat after.
 * @param warmupFrac Fraction of the steps spent rising, in [0, 1]. Default 0.3.
 * @throws {RangeError} When totalSteps is not an integer >= 1 or warmupFrac is outside [0, 1].
 * @example
 * ```ts
 * import { OneCycleLR } from "./scheduler.ts";
 * const s = new OneCycleLR(0.01, 100);
 * console.log(s.lr(0), s.lr(30), s.lr(100)); // 0.0004 0.01 0.0004
 * ```
 */
export class OneCycleLR implements Scheduler {
  /** Steps of the rising phase. */
  readonly warmupSteps: number;
  /** One cycle over `totalSteps` that peaks at `maxLr` and starts and ends at maxLr/25. */
  constructor(
    /** Peak learning rate; the cycle starts and ends at maxLr/25. */
    readonly maxLr: number,
    /** Length of the cycle, an integer >= 1; the LR stays at maxLr/25 after it. */
    readonly totalSteps: number,
    /** Fraction of the steps spent rising, in [0, 1]. Default 0.3. */
    readonly warmupFrac = 0.3,
  ) {
    checkFinite("OneCycleLR", "maxLr", maxLr);
    checkCount("OneCycleLR", "totalSteps", totalSteps, 1);
    if (!(warmupFrac >= 0 && warmupFrac <= 1)) {
      throw new RangeError(`OneCycleLR: warmupFrac must be in [0, 1], got ${warmupFrac}`);
    }
    this.warmupSteps = Math.round(totalSteps * warmupFrac);
  }
  lr(step: number): number {
    checkStep(step, "OneCycleLR");
    const s = Math.min(step, this.totalSteps);
    const min = this.maxLr / 25;
    if (s < this.warmupSteps) return min + (s / this.warmupSteps) * (this.maxLr - min);
    const decay = Math.max(this.totalSteps - this.warmupSteps, 1);
    const t = (s - this.warmupSteps) / decay;
    return min + 0.5 * (this.maxLr - min) * (1 + Math.cos(Math.PI * t));
  }
}

/**
 * Triangular cyclic learning rate (Smith 2017): rises linearly from baseLr to maxLr over
 * `stepSizeUp` steps, falls back over `stepSizeDown`, and repeats:
 * `baseLr + (maxLr − baseLr) · scale`, scale = pos/up rising, 1 − (pos − up)/down falling,
 * pos = step mod (up + down).
 * @throws {RangeError} When a half-cycle length is not an integer >= 1.
 * @example
 * ```ts
 * import { CyclicLR } from "./scheduler.ts";
 * const s = new CyclicLR(0.001, 0.01, 4);
 * console.log(s.lr(0), s.lr(4), s.lr(8)); // 0.001 ≈0.01 0.001
 * ```
 */
export class CyclicLR implements Scheduler {
  /** Cycle between `baseLr` and `maxLr` (PyTorch's `CyclicLR`, mode "triangular"). */
  constructor(
    /** Lower bound, the LR at step 0 and at each cycle's start. */
    readonly baseLr: number,
    /** Upper bound, reached after `stepSizeUp` steps. */
    readonly maxLr: number,
    /** Steps of the rising half-cycle, an integer >= 1. */
    readonly stepSizeUp: number,
    /** Steps of the falling half-cycle, an integer >= 1. Default `stepSizeUp`. */
    readonly stepSizeDown = stepSizeUp,
  ) {
    checkFinite("CyclicLR", "baseLr", baseLr);
    checkFinite("CyclicLR", "maxLr", maxLr);
    checkCount("CyclicLR", "stepSizeUp", stepSizeUp, 1);
    checkCount("CyclicLR", "stepSizeDown", stepSizeDown, 1);
  }
  lr(step: number): number {
    checkStep(step, "CyclicLR");
    const up = this.stepSizeUp, down = this.stepSizeDown;
    const pos = step % (up + down);
    const scale = pos <= up ? pos / up : 1 - (pos - up) / down;
    return this.baseLr + (this.maxLr - this.baseLr) * scale;
  }
}
