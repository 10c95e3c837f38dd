import type { Scheduler } from "./scheduler.ts";

/**
 * Reduce the learning rate when a metric stops improving (flodl's `PlateauScheduler`, like
 * PyTorch's `ReduceLROnPlateau` in "min" mode with zero threshold). Not a function of the
 * step: feed it a metric with {@link observe} (lower is better, e.g. each epoch's loss).
 * After `patience` observations in a row without a new best, the LR is multiplied by
 * `factor` (floored at `minLr`) and the count restarts. NaN never counts as an improvement.
 * @throws {RangeError} From the constructor: baseLr, minLr finite and >= 0; patience an
 *   integer >= 1; factor in (0, 1].
 * @example
 * ```ts
 * import { PlateauScheduler } from "./plateau.ts";
 * const s = new PlateauScheduler(0.1, 2, 0.5, 1e-4);
 * for (const loss of [1, 0.9, 0.95, 0.93]) s.observe(loss);
 * console.log(s.lr()); // 0.05
 * ```
 */
export class PlateauScheduler implements Scheduler {
  #lr: number;
  #best = Infinity;
  #wait = 0;

  /** Start at `baseLr`; multiply by `factor` after `patience` observations without a new best. */
  constructor(
    /** Learning rate until the first reduction, finite and >= 0. */
    readonly baseLr: number,
    /** Observations in a row without a new best before a reduction, an integer >= 1. */
    readonly patience: number,
    /** Multiplier of each reduction, in (0, 1]. */
    readonly factor: number,
    /** Floor of the learning rate, finite and >= 0. Default 0. */
    readonly minLr = 0,
  ) {
    if (!(baseLr >= 0 && Number.isFinite(baseLr))) {
      throw new RangeError(`PlateauScheduler: baseLr must be a finite number >= 0, got ${baseLr}`);
    }
    if (!Number.isInteger(patience) || patience < 1) {
      throw new RangeError(`PlateauScheduler: patience must be an integer >= 1, got ${patience}`);
    }
    if (!(factor > 0 && factor <= 1)) throw new RangeError(`PlateauScheduler: factor must be in (0, 1], got ${factor}`);
    if (!(minLr >= 0 && Number.isFinite(minLr))) {
      throw new RangeError(`PlateauScheduler: minLr must be a finite number >= 0, got ${minLr}`);
    }
    this.#lr = baseLr;
  }

  /** Feed one observation of the metric (lower is better); returns the current LR. */
  observe(metric: number): number {
    if (metric < this.#best) {
      this.#best = metric;
      this.#wait = 0;
    } else if (++this.#wait >= this.patience) {
      this.#lr = Math.max(this.#lr * this.factor, this.minLr);
      this.#wait = 0;
    }
    return this.#lr;
  }

  /** The current LR; the step is ignored (the LR depends only on the observations). */
  lr(_step = 0): number {
    return this.#lr;
  }

  /** Best metric seen so far (Infinity before the first observation). */
  get best(): number {
    return this.#best;
  }

  /** Observations since the last improvement or reduction. */
  get wait(): number {
    return this.#wait;
  }
}
