/**
 * RankActivity (the timeline's rank lanes) against a float64 reference that intersects
 * every span with every bin directly, on random batches, slowdowns and reduces; fitRange
 * (the eval axis); and the recorder that feeds both.
 */
import { DashboardRecorder, fitRange, RankActivity } from "../../../src/monitor/mod.ts";
import { assert, assertEquals, assertRelClose } from "../../util/assert.ts";
import { mulberry32 } from "../../util/random.ts";

type Span = { rank: number; kind: "compute" | "throttle" | "reduce"; a: number; b: number };

/** A random run: per rank, batches back to back with random gaps; reduces over random subsets. */
function randomRun(seed: number, world: number, slowdown: number[]) {
  const rng = mulberry32(seed);
  const spans: Span[] = [];
  const t0 = 1_700_000_000_000 + rng() * 1000;
  const events: { t: number; run: (a: RankActivity) => void }[] = [];
  for (let r = 0; r < world; r++) {
    let t = t0 + (r === 0 ? 0 : 1 + rng() * 50);
    for (let i = 0; i < 37 + r * 5; i++) {
      const ms = 3 + rng() * 90;
      const end = t + ms;
      const work = i === 0 ? ms : ms / slowdown[r]; // the first batch (compilation) is not stretched
      spans.push({ rank: r, kind: "compute", a: t, b: t + work });
      if (work < ms) spans.push({ rank: r, kind: "throttle", a: t + work, b: end });
      const rank = r;
      events.push({ t: end, run: (a) => a.batch(rank, end, ms, slowdown[rank]) });
      t = end + (rng() < 0.3 ? rng() * 200 : 0);
    }
  }
  for (let k = 0; k < 9; k++) {
    const end = t0 + 100 + rng() * 3000, ms = 1 + rng() * 60;
    const ranks = Array.from({ length: world }, (_, r) => r).filter(() => rng() < 0.7);
    for (const r of ranks) spans.push({ rank: r, kind: "reduce", a: end - ms, b: end });
    events.push({ t: end, run: (a) => a.reduce(end, ms, ranks) });
  }
  // Fed in this order, rank 0's first batch (starting at t0) comes first and fixes t0.
  return { t0, spans, events };
}

/** Reference: ms of `kind` on `rank` inside [t0 + i·bin, t0 + (i+1)·bin), summed in float64. */
function reference(spans: Span[], t0: number, bin: number, bins: number, rank: number, kind: Span["kind"]): number[] {
  const out = new Array<number>(bins).fill(0);
  for (const s of spans) {
    if (s.rank !== rank || s.kind !== kind) continue;
    for (let i = 0; i < bins; i++) {
      const a = t0 + i * bin, b = a + bin;
      out[i] += Math.max(0, Math.min(b, s.b) - Math.max(a, s.a));
    }
  }
  return out;
}

for (const [label, maxBins] of [["fine bins", 100_000], ["bins merged under maxBins", 37]] as const) {
  Deno.test(`RankActivity (${label}): compute, throttle and reduce ms per bin match a float64 reference`, () => {
    const slowdown = [1, 2.5, 1.25];
    const run = randomRun(7 + maxBins, 3, slowdown);
    const act = new RankActivity(maxBins, 7);
    for (const e of run.events) e.run(act);
    assertEquals(act.t0, run.t0, "t0: start of the first batch seen");
    assert(act.length <= maxBins, `bins ${act.length} <= ${maxBins}`);
    if (maxBins < 100) assert(act.binMs > 7, `bin widened from 7 ms to ${act.binMs}`);
    else assertEquals(act.binMs, 7, "bin kept");
    for (let r = 0; r < 3; r++) {
      for (const kind of ["compute", "throttle", "reduce"] as const) {
        const got = act.ranks[r][kind];
        const want = reference(run.spans, run.t0, act.binMs, got.length, r, kind);
        assertRelClose(got, want, 1e-9, `rank ${r} ${kind}`);
        const total = run.spans.filter((s) => s.rank === r && s.kind === kind).reduce((a, s) => a + s.b - s.a, 0);
        assertRelClose([got.reduce((a, b) => a + b, 0)], [total], 1e-9, `rank ${r} ${kind} total`);
      }
      // Idle fills each bin's part of the rank's active span that no batch or reduce covers.
      for (let i = 0; i < act.length; i++) {
        const b = act.bin(r, i);
        const a = act.t0! + i * act.binMs;
        const from = Math.min(...run.spans.filter((s) => s.rank === r && s.kind !== "reduce").map((s) => s.a));
        const to = Math.max(...run.spans.filter((s) => s.rank === r && s.kind !== "reduce").map((s) => s.b));
        const span = Math.max(0, Math.min(a + act.binMs, to) - Math.max(a, from));
        const busy = b.compute + b.throttle + b.reduce;
        assert(busy <= act.binMs * (1 + 1e-12), `rank ${r} bin ${i}: busy ${busy} within ${act.binMs}`);
        const idle = Math.max(0, span - busy);
        assert(Math.abs(b.idle - idle) <= 1e-9 * act.binMs, `rank ${r} bin ${i} idle: got ${b.idle}, want ${idle}`);
      }
    }
    // The JSON form reloads to the same bins.
    const back = new RankActivity().load(JSON.parse(JSON.stringify(act)));
    assertEquals(JSON.stringify(back), JSON.stringify(act), "toJSON/load round trip");
  });
}

Deno.test("fitRange: fits the values; a fraction stays in [0, 1]; one value still gets a height", () => {
  const rng = mulberry32(3);
  for (let k = 0; k < 50; k++) {
    const xs = Array.from({ length: 1 + Math.floor(rng() * 5) }, () => rng());
    const [lo, hi] = fitRange(xs, true)!;
    assert(lo >= 0 && hi <= 1 && lo < hi, `[${lo}, ${hi}] inside [0, 1]`);
    assert(lo <= Math.min(...xs) && hi >= Math.max(...xs), `[${lo}, ${hi}] holds ${xs}`);
  }
  // After one epoch at 0.91: no more 0 to 1.5.
  const [lo, hi] = fitRange([0.91], true)!;
  assert(lo >= 0.8 && lo < 0.91 && hi > 0.91 && hi <= 1, `one accuracy: [${lo}, ${hi}]`);
  const [a, b] = fitRange([250, null, NaN, 250])!;
  assert(a < 250 && b > 250, `a constant gets a height: [${a}, ${b}]`);
  const [c, d] = fitRange([-3, 7], true)!;
  assert(c < -3 && d > 7, "values outside [0, 1] are not clipped");
  assertEquals(fitRange([null, NaN]), null, "nothing to fit");
});

Deno.test("DashboardRecorder: batches and reduces fill the rank lanes at the recorder's clock, throttle from slowdown", () => {
  let t = 1000;
  const rec = new DashboardRecorder({ worldSize: 2, slowdown: [1, 4], now: () => t });
  t = 1100;
  rec.batch({ rank: 0, epoch: 0, loss: 1, ms: 100 });
  t = 1200;
  rec.batch({ rank: 1, epoch: 0, loss: 1, ms: 200 }); // first batch: compilation, never throttle
  t = 1220;
  rec.batch({ rank: 1, epoch: 0, loss: 1, ms: 20 });
  t = 1230;
  rec.reduce({ round: 0, epoch: 0, ms: 20, steps: [1, 0] });
  const a = rec.data().activity!;
  const sum = (xs: number[]) => xs.reduce((p, q) => p + q, 0);
  assertEquals(a.t0, 1000, "t0: the first batch's start");
  assertRelClose([sum(a.ranks[0].compute), sum(a.ranks[1].compute), sum(a.ranks[1].throttle)], [100, 205, 15], 1e-12, "ms");
  assertRelClose([sum(a.ranks[0].reduce), sum(a.ranks[1].reduce), sum(a.sync)], [20, 0, 20], 1e-12, "reduce ms");
  assertEquals(rec.data().slowdown, [1, 4]);
});
