/**
 * bench/memory_trend.ts: the least-squares slope against a float64 fit done by hand
 * (normal equations), and the flat/grows verdict on a sawtooth with and without a trend.
 */
import { fitSlope, flatVerdict } from "../../../bench/memory_trend.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";

Deno.test("fitSlope matches the normal equations on uneven points", () => {
  const x = [0, 1, 3, 4, 7], y = [2, 3.5, 2, 9, 11];
  // slope = (n Σxy − Σx Σy) / (n Σx² − (Σx)²)
  const n = 5, sx = 15, sy = 27.5, sxy = 0 * 2 + 1 * 3.5 + 3 * 2 + 4 * 9 + 7 * 11, sxx = 0 + 1 + 9 + 16 + 49;
  assertRelClose([fitSlope(x, y)], [(n * sxy - sx * sy) / (n * sxx - sx * sx)], 1e-12, "slope");
  assert(Number.isNaN(fitSlope([1], [2])), "one point has no slope");
  assertThrows(() => fitSlope([1, 2], [1]), RangeError, "2 x values", "1 y values");
  assertThrows(() => fitSlope([3, 3], [1, 2]), RangeError, "every x value is the same");
});

Deno.test("flatVerdict: a sawtooth without trend is flat, the same sawtooth on a slope grows; warm-up epochs are left out", () => {
  const MiB = 2 ** 20, epochs = Array.from({ length: 50 }, (_, i) => i);
  const saw = (e: number) => 400 * MiB + (e % 4) * 2 * MiB; // ±3 MiB teeth, no trend
  // A big warm-up ramp (epochs 0–9) that the verdict must not count.
  const flat = epochs.map((e) => (e < 10 ? 300 * MiB + e * 10 * MiB : saw(e)));
  const t = flatVerdict("rss", epochs, flat, 10, 5 * MiB);
  assert(t.flat, `sawtooth judged growing: fitted ${t.fittedGrowth / MiB} MiB`);
  assert(Math.abs(t.fittedGrowth) < 1 * MiB, `fitted growth ${t.fittedGrowth / MiB} MiB`);
  const growing = epochs.map((e) => saw(e) + e * 0.25 * MiB); // 10 MiB over epochs 10..49
  const g = flatVerdict("rss", epochs, growing, 10, 5 * MiB);
  assert(!g.flat, "a 0.25 MiB/epoch trend judged flat");
  assertRelClose([g.slopePerEpoch], [0.25 * MiB], 0.05, "slope");
  assertEquals(g.endToEnd, growing[49] - growing[10], "end to end");
  // Exact bytes (the pool): one byte of allowance, constant → flat, one more buffer → grows.
  assert(flatVerdict("gpu", epochs, epochs.map(() => 4096), 10, 1).flat, "constant pool bytes");
  assert(!flatVerdict("gpu", epochs, epochs.map((e) => (e < 30 ? 4096 : 8192)), 10, 1).flat, "pool grew by a buffer");
  assertThrows(() => flatVerdict("heap", [0, 1, 2], [1, 2, 3], 1, 1), RangeError, "heap", "2 samples", "at least 3");
});
