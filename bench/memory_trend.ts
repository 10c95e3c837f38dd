/**
 * Is a memory curve flat? bench/memory.ts samples a quantity once per epoch (process RSS,
 * JS heap, the pool's GPU bytes); after a warm-up the samples may oscillate (collections make
 * a sawtooth) but must not trend up. The trend is the least-squares slope over the epochs
 * after warm-up; its growth over that span (slope × epochs) is compared with an allowance.
 */

/** Least-squares slope of y over x (units of y per unit of x); NaN for fewer than 2 points. */
export function fitSlope(x: readonly number[], y: readonly number[]): number {
  if (x.length !== y.length) throw new RangeError(`fitSlope: ${x.length} x values but ${y.length} y values`);
  const n = x.length;
  if (n < 2) return NaN;
  const mx = x.reduce((a, b) => a + b, 0) / n, my = y.reduce((a, b) => a + b, 0) / n;
  let sxy = 0, sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) ** 2;
  }
  if (sxx === 0) throw new RangeError("fitSlope: every x value is the same");
  return sxy / sxx;
}

/** One quantity's trend after warm-up. */
export interface Trend {
  /** What was sampled ("rss", "heap", "gpu"). */
  name: string;
  /** Bytes per epoch, least squares over the epochs after warm-up. */
  slopePerEpoch: number;
  /** slopePerEpoch × (last epoch − first epoch after warm-up): the growth the trend amounts to. */
  fittedGrowth: number;
  /** Last sample − first sample after warm-up (two points: sensitive to where the sawtooth falls). */
  endToEnd: number;
  /** The allowance on fittedGrowth, bytes. */
  allowance: number;
  flat: boolean;
}

/**
 * The trend of `bytes` (one sample per epoch, `epochs[i]` its epoch) over the epochs ≥ `warm`:
 * flat when the fitted growth over that span is below `allowance` bytes.
 * @throws {RangeError} When fewer than 3 epochs lie after warm-up (no trend to speak of).
 */
export function flatVerdict(name: string, epochs: readonly number[], bytes: readonly number[], warm: number, allowance: number): Trend {
  const keep = epochs.map((e, i) => [e, bytes[i]] as const).filter(([e]) => e >= warm);
  if (keep.length < 3) {
    throw new RangeError(`flatVerdict: ${name} has ${keep.length} samples at epoch >= ${warm} (the warm-up); at least 3 are needed for a trend`);
  }
  const x = keep.map(([e]) => e), y = keep.map(([, b]) => b);
  const slopePerEpoch = fitSlope(x, y);
  const fittedGrowth = slopePerEpoch * (x[x.length - 1] - x[0]);
  return { name, slopePerEpoch, fittedGrowth, endToEnd: y[y.length - 1] - y[0], allowance, flat: fittedGrowth < allowance };
}
