/**
 * ElChe's timing feed: marginal delivered time when every rank that moved has a
 * marginal sample, else compute-only time for every rank; Sync always compute-only. Scripted
 * per-batch timings go through `Cadence` as the coordinator feeds it, and the resulting
 * ElChe state is compared with a fresh ElChe fed by this file's own reading of the rule.
 */
import type { Module } from "../../../src/nn/mod.ts";
import type { BuilderState } from "../../../src/distributed/run/builder.ts";
import { Cadence, emptyWindow, timingFeed, type TimingWindow } from "../../../src/distributed/coordinator/control/cadence.ts";
import { type ApplyPolicy, defaultRunConfig } from "../../../src/distributed/coordinator/control/config.ts";
import { ElChe } from "../../../src/distributed/coordinator/control/elche.ts";
import { NoGuard } from "../../../src/distributed/coordinator/control/guards.ts";
import type { BatchEvent } from "../../../src/distributed/protocol/messages.ts";
import { resolveConfig } from "../../../src/distributed/run/validate_config.ts";
import { assert, assertEquals, assertRelClose } from "../../util/assert.ts";
import { mulberry32 } from "../../util/random.ts";

const ANCHOR = 10, PICKS = 1_000_000;

function cadence(policy: ApplyPolicy, world: number): Cadence {
  const c = { ...defaultRunConfig(), policy, batchSize: 1, numEpochs: 1 };
  c.elche = c.elche.with({ anchor: ANCHOR, metaController: false });
  const state = { guard: new NoGuard() } as unknown as BuilderState<Module>;
  return new Cadence(state, resolveConfig(c, { worldSize: world }), world, PICKS);
}

/** ElChe configured as `cadence()` configures it. */
function referenceElChe(policy: ApplyPolicy, world: number): ElChe {
  return new ElChe({ worldSize: world, policy, anchor: ANCHOR, maxAnchor: 1000, maxTotalBatches: PICKS });
}

/** One batch of rank r: delivered ms and compute-only ms (compute never exceeds delivered). */
interface Scripted {
  ms: number;
  computeMs: number;
}

/** A window of `counts[r]` batches per rank with seeded timings; rank r's compute is ~speed[r] ms. */
function script(counts: number[], speed: number[], rng: () => number): Scripted[][] {
  return counts.map((n, r) =>
    Array.from({ length: n }, () => {
      const computeMs = speed[r] * (0.8 + 0.4 * rng());
      return { computeMs, ms: computeMs + 40 * rng() }; // + data, transport and waits
    })
  );
}

function send(c: Cadence, w: Scripted[][]): void {
  w.forEach((batches, rank) => {
    for (const b of batches) {
      c.batch({ rank, epoch: 0, ms: b.ms, computeMs: b.computeMs, loss: 1, lr: 0.1, samples: 1 } satisfies BatchEvent);
    }
  });
}

/** This file's reading of ElChe's cadence rule, written with plain loops: [ms, batches, fill | null] or null. */
function expectedFeed(w: Scripted[][], policy: ApplyPolicy): [number[], number[], number[] | null] | null {
  const movers = w.filter((b) => b.length > 0);
  const delivered = policy !== "sync" && movers.length > 0 && movers.every((b) => b.length >= 2);
  const ms: number[] = [], n: number[] = [], fill: number[] = [];
  for (const b of w) {
    if (delivered) {
      let tail = 0;
      for (let i = 1; i < b.length; i++) tail += b[i].ms;
      ms.push(b.length >= 2 ? tail : 0);
      n.push(b.length >= 2 ? b.length - 1 : 0);
      fill.push(b.length >= 2 ? Math.max(0, b[0].ms - tail / (b.length - 1)) : 0);
    } else {
      let sum = 0;
      for (const x of b) sum += x.computeMs;
      ms.push(sum);
      n.push(b.length);
    }
  }
  if (!ms.some((x) => x > 0)) return null;
  return [ms, n, delivered ? fill : null];
}

/** Run `windows` through Cadence and through a reference ElChe; both must agree after every window. */
function replay(policy: ApplyPolicy, windows: Scripted[][][]): { cadence: Cadence; reference: ElChe } {
  const W = windows[0].length;
  const cad = cadence(policy, W), ref = referenceElChe(policy, W);
  windows.forEach((w, k) => {
    send(cad, w);
    cad.cycle(w.map((b) => b.length), [], 0, false);
    const want = expectedFeed(w, policy);
    if (want) {
      if (want[2]) ref.stageFill(want[2]);
      ref.reportTiming(want[0], want[1], 0);
    }
    ref.applyVerdict({ kind: "stable" });
    const label = `${policy} window ${k}`;
    assertRelClose(cad.elche.smoothedMsPerBatch, ref.smoothedMsPerBatch, 1e-12, `${label} smoothed ms/batch`);
    assertEquals(cad.elche.batchCounts, ref.batchCounts, `${label} batch counts`);
    assertEquals(cad.elche.anchorRank, ref.anchorRank, `${label} anchor rank`);
  });
  return { cadence: cad, reference: ref };
}

Deno.test("Cadence falls back to compute-only time for every rank when one mover has no marginal sample", () => {
  const rng = mulberry32(7);
  // Rank 0 computes 3x slower; rank 1 moves one batch per window (no marginal sample), with
  // a delivered time dominated by waits, so delivered time would call rank 1 the slow one.
  const windows = Array.from({ length: 7 }, () => script([5, 1], [30, 10], rng));
  for (const w of windows) w[1][0].ms = 500;
  const { cadence: c } = replay("cadence", windows);
  assertEquals(c.elche.anchorRank, 0, "the compute-slow rank anchors");
  assert(c.elche.batchCounts[1] > c.elche.batchCounts[0], `the compute-fast rank gets more batches, got ${c.elche.batchCounts}`);
});

Deno.test("Cadence and Async feed marginal delivered time when every mover has a marginal sample", () => {
  for (const policy of ["cadence", "async"] as const) {
    const rng = mulberry32(11);
    // Same compute speed; rank 1 waits ~100 ms per batch on data, which compute time hides.
    const windows = Array.from({ length: 7 }, () => script([7, 5], [20, 20], rng));
    for (const w of windows) for (const b of w[1]) b.ms += 100;
    const { cadence: c } = replay(policy, windows);
    assertEquals(c.elche.anchorRank, 1, `${policy}: the data-starved rank anchors`);
  }
});

Deno.test("Sync always feeds compute-only time, even with marginal samples everywhere", () => {
  const rng = mulberry32(13);
  const windows = Array.from({ length: 7 }, () => script([6, 6, 6], [30, 10, 10], rng));
  for (const w of windows) for (const b of w[1]) b.ms += 200; // delivered would elect rank 1
  const { cadence: c } = replay("sync", windows);
  assertEquals(c.elche.anchorRank, 0);
});

Deno.test("timingFeed: non-movers contribute (0, 0), the fill is the first batch's excess, all-zero windows are not fed", () => {
  const w: TimingWindow[] = [
    { first: 25, ms: 30, compute: 33, count: 4 }, // steady 10 ms/batch after a 25 ms first batch
    emptyWindow(),
    { first: 4, ms: 12, compute: 15, count: 3 }, // first batch faster than the steady rate: fill 0
  ];
  assertEquals(timingFeed(w, [4, 0, 3], "cadence"), {
    scale: "delivered",
    ms: [30, 0, 12],
    batches: [3, 0, 2],
    fill: [15, 0, 0],
  });
  assertEquals(timingFeed(w, [4, 0, 3], "sync"), { scale: "compute", ms: [33, 0, 15], batches: [4, 0, 3] });
  const one = { first: 9, ms: 0, compute: 7, count: 1 };
  assertEquals(timingFeed([w[0], one], [4, 1], "async")?.scale, "compute");
  assertEquals(timingFeed([emptyWindow(), emptyWindow()], [0, 0], "cadence"), null);
});

Deno.test("Cadence does not feed ElChe an all-zero window (it is not a calibration)", () => {
  const c = cadence("cadence", 2);
  send(c, script([3, 3], [20, 10], mulberry32(17)));
  c.cycle([3, 3], [], 0, false);
  assertEquals(c.elche.calibrationCount, 1);
  c.cycle([0, 0], [], 0, true);
  assertEquals(c.elche.calibrationCount, 1, "calibrations after an all-zero window");
});
