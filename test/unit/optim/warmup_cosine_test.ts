/**
 * flodl's Warmup(inner = Cosine to a floor), the schedule of ddp-bench's gpt-nano ("warmup 20%
 * then cosine to 1e-5"), against the whole float64 formula written
 * out here without the inner scheduler.
 */
import { CosineScheduler, WarmupScheduler } from "../../../src/optim/mod.ts";
import { assert } from "../../util/assert.ts";

/** peak·(t+1)/w while t < w; then floor + ½(peak − floor)(1 + cos(π·min(t − w, T)/T)), T = total − w. */
function warmupCosine(peak: number, floor: number, total: number, warmup: number, t: number): number {
  if (t < warmup) return peak * (t + 1) / warmup;
  const decay = total - warmup;
  const u = Math.min(t - warmup, decay) / decay;
  return floor + 0.5 * (peak - floor) * (1 + Math.cos(Math.PI * u));
}

function close(got: number, want: number, label: string): void {
  assert(Math.abs(got - want) <= 1e-12 * Math.max(Math.abs(want), 1e-12), `${label}: got ${got}, want ${want}`);
}

const CASES = [
  { peak: 3e-4, floor: 1e-5, total: 1000, warmup: 200 }, // gpt-nano: 20% warmup
  { peak: 0.1, floor: 0, total: 97, warmup: 13 },
  { peak: 0.05, floor: 0.05, total: 10, warmup: 3 }, // floor = peak: flat after the ramp
  { peak: 1e-3, floor: 1e-4, total: 31, warmup: 0 }, // no warmup: cosine from step 0
];

for (const c of CASES) {
  Deno.test(`Warmup(Cosine(${c.peak} -> ${c.floor}), ${c.warmup} of ${c.total} steps) matches the f64 formula`, () => {
    const s = new WarmupScheduler(new CosineScheduler(c.peak, c.floor, c.total - c.warmup), c.peak, c.warmup);
    for (let t = 0; t < c.total + 25; t++) {
      close(s.lr(t), warmupCosine(c.peak, c.floor, c.total, c.warmup, t), `step ${t}`);
    }
    if (c.warmup > 0) close(s.lr(c.warmup - 1), c.peak, "the ramp ends at the peak");
    close(s.lr(c.warmup), c.peak, "the decay starts at the peak");
    close(s.lr(c.total), c.floor, "the floor at the last step");
    close(s.lr(c.total + 24), c.floor, "and after it");
  });
}
