import {
  accumulate,
  bufferMass,
  ConsensusAccumulator,
  consensusWeights,
  divergence,
  easgdBlend,
  finish,
  paramMass,
} from "../../../src/distributed/coordinator/reduce/consensus.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";
import { mulberry32, randn } from "../../util/random.ts";

/** f64 reference: Σ m_k θ_k / Σ m_k. */
function weightedMean(frames: Float32Array[], masses: number[]): Float64Array {
  const out = new Float64Array(frames[0].length);
  const total = masses.reduce((a, b) => a + b, 0);
  frames.forEach((f, k) => f.forEach((x, i) => (out[i] += (masses[k] * x) / total)));
  return out;
}

Deno.test("paramMass: 0 for idle ranks at every γ, n^γ otherwise; bufferMass counts movers", () => {
  assertEquals([0, -2].map((n) => paramMass(n, 1)), [0, 0]);
  assertEquals([paramMass(0, 0), paramMass(0, -1)], [0, 0]); // not 0^0 = 1 nor 0^-1 = ∞
  assertEquals([paramMass(4, 1), paramMass(4, 0), paramMass(4, -1), paramMass(4, 0.5)], [4, 1, 0.25, 2]);
  assertEquals([bufferMass(0), bufferMass(7)], [0, 1]);
});

Deno.test("consensusWeights normalizes n^γ over ranks that moved, null for a zero-mass round", () => {
  assertRelClose(consensusWeights([0, 3, 5], 1)!, [0, 3 / 8, 5 / 8], 1e-15, "γ = 1");
  assertRelClose(consensusWeights([0, 3, 5], 0)!, [0, 1 / 2, 1 / 2], 1e-15, "γ = 0");
  const inv = 1 / 3 + 1 / 5;
  assertRelClose(consensusWeights([0, 3, 5], -1)!, [0, 1 / 3 / inv, 1 / 5 / inv], 1e-15, "γ = −1");
  assertEquals(consensusWeights([0, 0], 1), null);
});

Deno.test("ConsensusAccumulator sums weighted frames in f32 and divides once", () => {
  const rng = mulberry32(3);
  const frames = [0, 1, 2].map(() => randn(33, rng));
  for (const gamma of [1, 0, -1, 0.5]) {
    const steps = [2, 7, 5];
    const masses = steps.map((n) => (gamma === 0 ? 1 : n ** gamma));
    const acc = new ConsensusAccumulator(33);
    frames.forEach((f, k) => acc.add(f, paramMass(steps[k], gamma)));
    assertEquals(acc.frames, 3);
    assertRelClose(acc.finish()!, weightedMean(frames, masses), 1e-5, `γ = ${gamma}`);
  }
});

Deno.test("ConsensusAccumulator: dead ranks enter neither sum nor divisor; idle ranks weigh 0", () => {
  const rng = mulberry32(5);
  const frames = [0, 1, 2].map(() => randn(7, rng));
  const acc = new ConsensusAccumulator(7);
  acc.add(frames[0], paramMass(3, 1));
  acc.add(frames[2], paramMass(0, 1)); // idle: contributes nothing
  // frames[1] never arrives (dead rank)
  assertRelClose(acc.finish()!, frames[0], 1e-6, "only rank 0 moved");
  const zero = new ConsensusAccumulator(7);
  zero.add(frames[0], 0);
  assertEquals(zero.finish(), null);
});

Deno.test("relay folds of pre-scaled frames give the same consensus as direct accumulation", () => {
  const rng = mulberry32(11);
  const frames = [0, 1, 2].map(() => randn(129, rng));
  const m = [2, 3, 4];
  const relay = new Float32Array(129); // host A folds ranks 0 and 1, never divides
  accumulate(relay, frames[0], m[0]);
  accumulate(relay, frames[1], m[1]);
  const root = new ConsensusAccumulator(129);
  root.addPrescaled(relay, m[0] + m[1]);
  root.add(frames[2], m[2]);
  assertRelClose(root.finish()!, weightedMean(frames, m), 1e-5, "relay");
  assertThrows(() => accumulate(new Float32Array(3), new Float32Array(4), 1), RangeError, "4 elements", "3");
  assertEquals(finish(new Float32Array(2), 0), null);
});

Deno.test("easgdBlend: (1 − α)·local + α·consensus; α = 1 overwrites", () => {
  const rng = mulberry32(13);
  const local = randn(33, rng), cons = randn(33, rng);
  const want = Array.from(local, (l, i) => 0.7 * l + 0.3 * cons[i]);
  assertRelClose(easgdBlend(local, cons, 0.3), want, 1e-6, "α = 0.3");
  assertEquals([...easgdBlend(local, cons, 1)], [...cons]);
  assertThrows(() => easgdBlend(local, cons, 0), RangeError, "alpha", "got 0");
  assertThrows(() => easgdBlend(local, cons.subarray(1), 0.5), RangeError, "lengths differ");
});

Deno.test("divergence: ||pre − post|| / ||post|| over all tensors, f64 norms", () => {
  const rng = mulberry32(17);
  const pre = [randn(7, rng), randn(33, rng)], post = [randn(7, rng), randn(33, rng)];
  let d2 = 0, p2 = 0, q2 = 0;
  pre.forEach((t, k) =>
    t.forEach((x, i) => {
      const y = post[k][i];
      d2 += (x - y) ** 2;
      p2 += x * x;
      q2 += y * y;
    })
  );
  const got = divergence(pre, post);
  assertRelClose(
    [got.divergence, got.preNorm, got.postNorm],
    [Math.sqrt(d2 / q2), Math.sqrt(p2), Math.sqrt(q2)],
    1e-12,
    "div",
  );
  const flat = divergence(pre[1], post[1]);
  assert(flat.divergence > 0, "flat arrays accepted");
  assertEquals(divergence(pre[0], new Float32Array(7)).divergence, 0); // ||post|| = 0
  assertThrows(() => divergence(pre, [post[0]]), RangeError, "pre has 2 tensors, post has 1");
  assertThrows(() => divergence([pre[0]], [post[1]]), RangeError, "tensor 0", "7", "33");
});
