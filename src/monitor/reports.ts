/**
 * `reports_per_epoch = x`: sub-epoch records are emitted only at reduce
 * boundaries, when the epoch's cumulative steps cross the next multiple of
 * `stepsPerEpoch / x`. A window crossing several thresholds fires once; at most x
 * reports per epoch; the count restarts each epoch.
 */

function check(stepsPerEpoch: number, x: number, who: string): void {
  if (!(Number.isFinite(stepsPerEpoch) && stepsPerEpoch > 0)) {
    throw new RangeError(`${who}: stepsPerEpoch must be a finite number > 0, got ${stepsPerEpoch}`);
  }
  if (!Number.isInteger(x) || x < 1) throw new RangeError(`${who}: reportsPerEpoch must be an integer >= 1, got ${x}`);
}

/**
 * The highest threshold index k in [0, x] with `steps >= k·stepsPerEpoch/x` (computed as
 * `floor(steps·x / stepsPerEpoch)` so no fractional threshold is rounded).
 */
function crossed(stepsPerEpoch: number, x: number, steps: number): number {
  return Math.min(x, Math.floor((Math.max(0, steps) * x) / stepsPerEpoch));
}

/**
 * Whether a reduce window that took the epoch's cumulative steps from `before` to
 * `after` fires a report, and its tick.
 * @returns The tick k in [1, x] (the highest threshold crossed: at least k/x of the
 *   epoch is done), or undefined when no new threshold was crossed.
 * @throws {RangeError} When stepsPerEpoch <= 0 or x is not an integer >= 1.
 * @example
 * ```ts
 * import { reportTick } from "./reports.ts";
 * reportTick(100, 4, 10, 60); // 2: thresholds 25 and 50 crossed, one report
 * reportTick(100, 4, 60, 70); // undefined
 * ```
 */
export function reportTick(stepsPerEpoch: number, x: number, before: number, after: number): number | undefined {
  check(stepsPerEpoch, x, "reportTick");
  const k0 = crossed(stepsPerEpoch, x, before), k1 = crossed(stepsPerEpoch, x, after);
  return k1 > k0 ? k1 : undefined;
}

/**
 * Tracks the cumulative in-epoch steps across reduces and says when a sub-epoch report
 * fires. Count steps the same way as `stepsPerEpoch` (e.g. Σ over ranks of the batches
 * a reduce folded, against the epoch's total batches).
 * @throws {RangeError} From the constructor when stepsPerEpoch <= 0 or x is not an integer >= 1.
 * @example
 * ```ts
 * import { ReportSchedule } from "./reports.ts";
 * const s = new ReportSchedule(100, 2);
 * s.onReduce(0, 30); // undefined
 * s.onReduce(0, 30); // 1 (60 >= 50)
 * s.onReduce(1, 10); // undefined: a new epoch starts from 0
 * ```
 */
export class ReportSchedule {
  #epoch: number | undefined;
  #steps = 0;
  #fired = 0;

  constructor(readonly stepsPerEpoch: number, readonly reportsPerEpoch: number) {
    check(stepsPerEpoch, reportsPerEpoch, "ReportSchedule");
  }

  /**
   * Fold one reduce window of `epoch` that ran `steps` steps.
   * @returns The report's tick in [1, x], or undefined when no report fires.
   */
  onReduce(epoch: number, steps: number): number | undefined {
    if (epoch !== this.#epoch) {
      this.#epoch = epoch;
      this.#steps = 0;
      this.#fired = 0;
    }
    this.#steps += steps;
    const k = crossed(this.stepsPerEpoch, this.reportsPerEpoch, this.#steps);
    if (k <= this.#fired) return undefined;
    this.#fired = k;
    return k;
  }

  /** Cumulative steps of the current epoch. */
  get steps(): number {
    return this.#steps;
  }
}
