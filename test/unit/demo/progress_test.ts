/**
 * The demo's status line while it trains (demo/progress.ts): a warm-up that counts seconds
 * before any batch, then each rank's batches and a samples/s rate computed here from the
 * same batches.
 */
import { RunProgress } from "../../../demo/progress.ts";
import { assert, assertEquals, assertRelClose } from "../../util/assert.ts";
import { mulberry32 } from "../../util/random.ts";

Deno.test("RunProgress: warm-up line before any batch, then batches per rank, samples/s, epoch and loss", () => {
  const p = new RunProgress(3, 2, 1000);
  const warm = p.text(1000 + 41_400);
  assert(/^Warming up: 3 ranks compile their GPU pipelines/.test(warm), warm);
  assert(warm.endsWith("41 s"), warm);
  assertEquals(p.rate(50_000), undefined, "no rate before a batch");

  const rng = mulberry32(11);
  let t = 70_000;
  const seen: { t: number; samples: number; rank: number }[] = [];
  for (let i = 0; i < 200; i++) {
    t += rng() * 120;
    const rank = rng() < 0.5 ? 0 : 1; // rank 2 still compiling
    const samples = 16 + Math.floor(rng() * 48);
    p.batch(rank, samples, t);
    seen.push({ t, samples, rank });
  }
  // Reference: samples in the 5 s before t, per second (the run is longer than 5 s).
  const inWindow = seen.filter((b) => b.t >= t - 5000).reduce((a, b) => a + b.samples, 0);
  assertRelClose([p.rate(t)!], [inWindow / 5], 1e-12, "samples/s");
  const line = p.text(t);
  const counts = [0, 1, 2].map((r) => seen.filter((b) => b.rank === r).length);
  assert(line.startsWith(`Epoch 1/2 · batches: rank 0 ${counts[0]}, rank 1 ${counts[1]}, rank 2 0 · `), line);
  assert(line.includes(`${(inWindow / 5).toFixed(0)} samples/s`), line);
  assert(line.includes("still compiling: rank 2"), line);

  p.batch(2, 32, t);
  p.epoch(1, 0.123456);
  const after = p.text(t + 10);
  assert(after.startsWith("Epoch 2/2 · "), after);
  assert(after.includes("loss 0.1235") && !after.includes("compiling"), after);
  p.epoch(2, 0.1);
  assert(p.text(t + 20).startsWith("Epoch 2/2 · "), "the last epoch is not followed by 3/2");
});
