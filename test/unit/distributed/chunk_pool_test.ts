import { type Chunk, ChunkPool, type NextChunkContext } from "../../../src/distributed/coordinator/schedule/chunk_pool.ts";
import type { ApplyPolicy } from "../../../src/distributed/coordinator/control/config.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";
import { mulberry32 } from "../../util/random.ts";

const at = (c: Chunk | null) => c && [c.offset, c.size];

/** Trained and folded at once: what a chunk is after the reduce that takes it in. */
function settle(p: ChunkPool, rank: number, id?: number): Chunk {
  const c = p.complete(rank, id);
  p.fold(rank, c.id, c.batches);
  return c;
}

Deno.test("ChunkPool reserves spans by counts and drops the partial tail batch", () => {
  // 100 samples / B 8 = 12 batches; counts [1, 2] → spans 4 and 8 batches.
  const p = new ChunkPool({ epoch: 0, samples: 100, batchSize: 8, worldSize: 2, counts: [1, 2] });
  assertEquals(p.totalBatches, 12);
  assertEquals(p.spanResidue(0), { offset: 0, size: 32 });
  assertEquals(p.spanResidue(1), { offset: 32, size: 64 });
  // 10 batches over [1, 1, 1]: 3 each + 1 to rank 0.
  const q = new ChunkPool({ epoch: 0, samples: 10, batchSize: 1, worldSize: 3, start: 5 });
  assertEquals([0, 1, 2].map((r) => q.spanResidue(r)), [{ offset: 5, size: 4 }, { offset: 9, size: 3 }, {
    offset: 12,
    size: 3,
  }]);
});

Deno.test("ChunkPool.takeChunk: own span front, then the tail of the largest residue", () => {
  const p = new ChunkPool({ epoch: 2, samples: 100, batchSize: 8, worldSize: 2, counts: [1, 2] });
  assertEquals(at(p.takeChunk(3, 0)), [0, 24]);
  assertEquals(at(p.takeChunk(3, 0)), [24, 8]); // only one batch left in its span
  assertEquals(at(p.takeChunk(3, 0)), [72, 24]); // steal rank 1's tail: batches 9..11
  assertEquals(at(p.takeChunk(2, 1)), [32, 16]); // rank 1 front: batches 4..5
  assertEquals(p.remaining(), 3);
  assertEquals(p.dispatched(0), 7);
  assertEquals(p.inFlight(0).map((c) => c.batches), [3, 1, 3]);
  const c = p.complete(0);
  assertEquals([c.offset, c.epoch], [0, 2]);
  assertEquals(p.completed(0), 3);
  assertEquals(p.coverage().uncovered_ranges, [[0, 96]], "trained is not covered until a reduce folds it");
  p.fold(0, c.id, 3);
  assertEquals(p.coverage(), { epoch: 2, total_samples: 96, uncovered_ranges: [[24, 72]] });
  assertEquals(at(p.takeChunk(8, 1)), [48, 24]);
  assertEquals(p.takeChunk(1, 1), null);
  assert(p.isDrained() && !p.isComplete(), "drained but chunks in flight");
});

Deno.test("ChunkPool.forfeit moves a dead rank's in-flight chunks to the reclaimed queue, served first", () => {
  const p = new ChunkPool({ epoch: 0, samples: 12, batchSize: 1, worldSize: 3 });
  p.takeChunk(2, 0); // [0, 2)
  p.takeChunk(1, 0); // [2, 3)
  settle(p, 0); // [0, 2) done
  const lost = p.forfeit(0);
  assertEquals(lost.map(at), [[2, 1]]);
  assertEquals(p.dispatched(0), 2);
  assertEquals(at(p.takeChunk(5, 1)), [2, 1]); // reclaimed first
  assertEquals(at(p.takeChunk(5, 2)), [8, 4]); // own span
  assertEquals(at(p.takeChunk(5, 2)), [4, 4]); // steal: rank 1's span [4, 8) is the largest residue (4 vs dead rank 0's 1)
  assertEquals(at(p.takeChunk(5, 2)), [3, 1]); // then the dead rank's residue
  assertThrows(() => p.takeChunk(1, 0), RangeError, "rank 0 is dead");
  assertThrows(() => p.forfeit(0), RangeError, "rank 0 is dead");
});

Deno.test("ChunkPool.forfeit gives back what a dead rank trained but no reduce folded (partial folds keep their prefix)", () => {
  const p = new ChunkPool({ epoch: 0, samples: 12, batchSize: 1, worldSize: 2 }); // spans [0, 6), [6, 12)
  const a = p.takeChunk(3, 0)!; // [0, 3)
  p.complete(0, a.id);
  p.fold(0, a.id, 1); // a reduce took [0, 1)
  const b = p.takeChunk(2, 0)!; // [3, 5)
  p.fold(0, b.id, 1); // async: a snapshot mid-chunk took [3, 4)
  assertEquals(p.unfolded(0), 2);
  assert(!p.isComplete(), "trained work awaiting its fold keeps the epoch open");
  const lost = p.forfeit(0);
  assertEquals(lost.map(at), [[1, 2], [4, 1]], "the unfolded rest of each chunk, oldest first");
  assertEquals(p.coverage().uncovered_ranges, [[1, 2], [4, 8]]);
  assertEquals(at(p.takeChunk(6, 1)), [1, 2], "served first to a survivor");
  assertEquals(at(p.takeChunk(6, 1)), [4, 1]);
  assertEquals(p.dispatched(0), p.completed(0), "the dead rank keeps only what reached the model");
  assertEquals(p.completed(0), 2);
});

Deno.test("ChunkPool.complete with fewer batches trained serves the untrained tail first; fold checks its bounds", () => {
  const p = new ChunkPool({ epoch: 0, samples: 8, batchSize: 2, worldSize: 1 });
  const c = p.takeChunk(4, 0)!;
  p.complete(0, c.id, 1);
  assertEquals(at(p.takeChunk(4, 0)), [2, 6], "the tail the rank did not train");
  assertThrows(() => p.fold(0, c.id, 2), RangeError, "batches must be an integer in [0, 1] for chunk 0, got 2");
  assertThrows(() => p.fold(0, 77, 1), RangeError, "rank 0 has no open chunk 77");
  assertThrows(() => p.complete(0, undefined, 9), RangeError, "trained must be an integer in [0, 3], got 9");
  p.fold(0, c.id, 1);
  assertEquals(p.coverage().uncovered_ranges, [[2, 6]]);
});

Deno.test("ChunkPool.rollback returns a failed send to the front of the queue", () => {
  const p = new ChunkPool({ epoch: 0, samples: 8, batchSize: 1, worldSize: 2 });
  const a = p.takeChunk(2, 1)!;
  const b = p.rollback(1);
  assertEquals(b.id, a.id);
  assertEquals(p.dispatched(1), 0);
  assertEquals(at(p.takeChunk(3, 0)), [4, 2]); // rolled-back range first, even for another rank
  assertThrows(() => p.complete(1), RangeError, "rank 1 has no chunk in flight");
  assertThrows(() => p.complete(0, 99), RangeError, "no chunk 99");
});

Deno.test("ChunkPool.fromCoverage rebuilds an epoch from its uncovered ranges and refuses misaligned ones", () => {
  const p = ChunkPool.fromCoverage(
    { epoch: 4, total_samples: 40, uncovered_ranges: [[10, 8], [30, 4]] },
    { batchSize: 2, worldSize: 2, start: 6 },
  );
  assertEquals(p.remaining(), 6);
  assertEquals(p.coverage().uncovered_ranges, [[10, 8], [30, 4]]);
  assertEquals(at(p.takeChunk(3, 1)), [10, 6]);
  assertEquals(at(p.takeChunk(3, 0)), [16, 2]);
  assertEquals(at(p.takeChunk(3, 0)), [30, 4]);
  assertEquals(p.takeChunk(3, 0), null);
  assertThrows(
    () =>
      ChunkPool.fromCoverage({ epoch: 0, total_samples: 40, uncovered_ranges: [[1, 4]] }, {
        batchSize: 2,
        worldSize: 2,
      }),
    RangeError,
    "batch boundaries",
    "[1, 4]",
  );
  assertThrows(
    () =>
      ChunkPool.fromCoverage({ epoch: 0, total_samples: 8, uncovered_ranges: [[6, 4]] }, {
        batchSize: 2,
        worldSize: 2,
      }),
    RangeError,
    "within [0, 8)",
  );
});

Deno.test("ChunkPool.nextChunk: a rank back mid-window after a short chunk decides on the window's remainder, not what is left", () => {
  // npm start hung here: rank 1's own span ran short (7 of its 10), rank 0 finished its 10
  // first, and rank 1's second ask saw 5 left < Σc + W = 22: the final window was planned
  // mid-window as [3, 2], rank 1 reached 9/10, rank 0 had met its quota, and no reduce came.
  const p = new ChunkPool({ epoch: 0, samples: 42, batchSize: 1, worldSize: 2 }); // spans [0, 21) and [21, 42)
  settle(p, 0, p.takeChunk(6, 0)!.id);
  settle(p, 1, p.takeChunk(14, 1)!.id);
  p.beginWindow();
  const ctx = (n: number): NextChunkContext => ({
    policy: "cadence",
    counts: [10, 10],
    calibrated: true,
    pickSpace: 42,
    batchSize: 1,
    stepsSinceAvg: n,
    maxOvershoot: 0,
  });
  assertEquals(at(p.nextChunk(0, ctx(0))), [6, 10]); // 22 left: not yet the final window
  assertEquals(at(p.nextChunk(1, ctx(0))), [35, 7]); // its span's last 7
  const window = [p.complete(0), p.complete(1)];
  assertEquals(at(p.nextChunk(1, ctx(7))), [18, 3], "rank 1 completes its window quota from rank 0's tail");
  window.push(p.complete(1));
  assertEquals([p.unfolded(0), p.unfolded(1)], [10, 10]);
  for (const c of window) p.fold(c.rank, c.id, c.batches); // the reduce
  p.beginWindow();
  // 2 left < 22: the final window, [1, 1] → the lone batch of rank 0 moves onto rank 1.
  assertEquals(p.nextChunk(0, ctx(0)), null);
  assertEquals(at(p.nextChunk(1, ctx(0))), [16, 2]);
  const last = p.complete(1);
  assert(p.isTrained() && !p.isComplete(), "trained, not yet folded");
  p.fold(1, last.id, last.batches);
  assert(p.isComplete(), "complete");
});

Deno.test("ChunkPool.nextChunk: one chunk per window, then the final window split over the remainder", () => {
  const p = new ChunkPool({ epoch: 0, samples: 64, batchSize: 1, worldSize: 2, counts: [10, 20] });
  const ctx: NextChunkContext = {
    policy: "cadence",
    counts: [10, 20],
    calibrated: true,
    pickSpace: 64,
    batchSize: 1,
    stepsSinceAvg: 0,
    maxOvershoot: 0,
  };
  assertEquals(p.nextChunk(0, ctx)!.batches, 10);
  assertEquals(p.nextChunk(0, ctx), null); // barrier-paced: one outstanding chunk
  assertEquals(p.nextChunk(1, ctx)!.batches, 20);
  p.complete(0);
  p.complete(1);
  p.beginWindow(); // the reduce
  // 34 left >= Σc + W = 32: a normal window.
  assertEquals(p.nextChunk(0, ctx)!.batches, 10);
  assertEquals(p.nextChunk(1, ctx)!.batches, 20);
  p.complete(0);
  p.complete(1);
  p.beginWindow();
  // 4 left < 32: the final window splits 4 ∝ [10, 20] → [1.33, 2.67] → [1, 2] + 1 to rank 1 → [1, 3] → [0, 4].
  assertEquals(p.nextChunk(0, ctx), null);
  // Spans were [22, 42] batches: rank 1's own span has 2 left, so its allotment of 4 comes as 2 + 2.
  assertEquals(at(p.nextChunk(1, ctx)), [62, 2]);
  p.complete(1);
  assertEquals(at(p.nextChunk(1, ctx)), [20, 2]); // the rest, stolen from rank 0's tail
  assertEquals(p.nextChunk(0, ctx), null);
  assert(p.isDrained(), "drained");
});

interface Open {
  rank: number;
  chunk: Chunk;
  /** Batches the rank trained; undefined while in flight. */
  trained?: number;
  folded: number;
}

interface Sim {
  pool: ChunkPool;
  covered: Int32Array;
  alive: boolean[];
  /** The test's own record of chunks not wholly folded, by id. */
  open: Map<number, Open>;
}

/** A reduce folds `n` more batches of an open chunk: only those count as trained (covered). */
function fold(sim: Sim, o: Open, n: number): void {
  sim.pool.fold(o.rank, o.chunk.id, n);
  const B = sim.pool.batchSize;
  for (let i = o.folded * B; i < (o.folded + n) * B; i++) sim.covered[o.chunk.offset + i - sim.pool.start]++;
  o.folded += n;
  if (o.trained !== undefined && o.folded === o.trained) sim.open.delete(o.chunk.id);
}

/** Random steals, completions, rollbacks and deaths, then survivors drain the pool. */
function runRandom(seed: number, resumeAt?: number): void {
  const rng = mulberry32(seed);
  const int = (n: number) => Math.floor(rng() * n);
  const W = 2 + int(4), B = 1 + int(4), samples = int(300), start = int(3) * B;
  const policy: ApplyPolicy = (["sync", "cadence", "async"] as const)[int(3)];
  const counts = Array.from({ length: W }, () => 1 + int(12));
  let sim: Sim = {
    pool: new ChunkPool({ epoch: seed, samples, batchSize: B, worldSize: W, start, counts }),
    covered: new Int32Array(Math.floor(samples / B) * B),
    alive: new Array(W).fill(true),
    open: new Map(),
  };
  const ctx: NextChunkContext = {
    policy,
    counts,
    calibrated: rng() < 0.7,
    pickSpace: samples,
    batchSize: B,
    stepsSinceAvg: 0,
    maxOvershoot: int(5),
  };
  const label = `seed ${seed} W ${W} B ${B} samples ${samples} ${policy}`;
  const check = () => {
    const p = sim.pool;
    let inflight = 0;
    for (let r = 0; r < W; r++) {
      const f = p.inFlight(r).reduce((a, c) => a + c.batches, 0);
      inflight += f;
      assertEquals(p.dispatched(r), p.completed(r) + f, `${label}: rank ${r} dispatched = completed + in flight`);
    }
    const done = sim.covered.reduce((a, x) => a + x, 0) / B;
    let foldedInFlight = 0;
    for (const o of sim.open.values()) if (o.trained === undefined) foldedInFlight += o.folded;
    const unfolded = [...Array(W).keys()].reduce((a, r) => a + p.unfolded(r), 0);
    assertEquals(p.remaining() + inflight - foldedInFlight + unfolded + done, p.totalBatches, `${label}: every batch accounted once`);
  };
  for (let step = 0; step < 200; step++) {
    if (resumeAt === step) {
      // Checkpoint: completed chunks stay covered; in-flight work is redone by the rebuilt pool.
      const cov = sim.pool.coverage();
      const pool = ChunkPool.fromCoverage(cov, { batchSize: B, worldSize: W, start, alive: sim.alive });
      sim = { ...sim, pool, open: new Map() };
    }
    const live = sim.alive.flatMap((a, r) => (a ? [r] : []));
    const r = live[int(live.length)];
    const act = rng();
    const mine = [...sim.open.values()].filter((o) => o.rank === r);
    if (act < 0.35) {
      const c = rng() < 0.5 ? sim.pool.takeChunk(1 + int(6), r) : sim.pool.nextChunk(r, ctx);
      if (c) {
        assertEquals(c.size, c.batches * B, label);
        sim.open.set(c.id, { rank: r, chunk: c, folded: 0 });
      }
    } else if (act < 0.6 && sim.pool.inFlight(r).length > 0) {
      const o = sim.open.get(sim.pool.inFlight(r)[0].id)!;
      // Mostly the whole chunk; sometimes a rank stopped short (never below what was folded).
      o.trained = rng() < 0.8 ? o.chunk.batches : o.folded + int(o.chunk.batches - o.folded + 1);
      sim.pool.complete(r, o.chunk.id, o.trained);
      if (o.folded === o.trained) sim.open.delete(o.chunk.id);
    } else if (act < 0.75 && mine.length > 0) {
      // A reduce folds a prefix of the rank's oldest open chunk (in flight: an async snapshot mid-chunk).
      const o = mine[0], cap = (o.trained ?? o.chunk.batches) - o.folded;
      fold(sim, o, o.trained === undefined ? int(cap + 1) : cap);
    } else if (act < 0.8 && sim.pool.inFlight(r).length > 0 && sim.open.get(sim.pool.inFlight(r).at(-1)!.id)!.folded === 0) {
      sim.open.delete(sim.pool.rollback(r).id);
    } else if (act < 0.84 && live.length > 1) {
      sim.pool.forfeit(r);
      for (const o of mine) sim.open.delete(o.chunk.id);
      sim.alive[r] = false;
    }
    check();
  }
  // Survivors drain the pool.
  for (let guard = 0; !sim.pool.isComplete(); guard++) {
    assert(guard < 10000, `${label}: the pool never completes`);
    let progressed = false;
    for (const r of sim.alive.flatMap((a, i) => (a ? [i] : []))) {
      const mine = [...sim.open.values()].filter((o) => o.rank === r);
      if (sim.pool.inFlight(r).length > 0) {
        const o = sim.open.get(sim.pool.inFlight(r)[0].id)!;
        o.trained = o.chunk.batches;
        sim.pool.complete(r, o.chunk.id);
        if (o.folded === o.trained) sim.open.delete(o.chunk.id);
        progressed = true;
      } else if (mine.length > 0) {
        for (const o of mine) fold(sim, o, o.trained! - o.folded);
        progressed = true;
      } else {
        const c = sim.pool.nextChunk(r, ctx);
        if (c) {
          sim.open.set(c.id, { rank: r, chunk: c, folded: 0 });
          progressed = true;
        }
      }
    }
    assert(progressed, `${label}: stalled with ${sim.pool.remaining()} batches left`);
    check();
  }
  assert(sim.covered.every((x) => x === 1), `${label}: some sample trained ${Math.max(...sim.covered)} or 0 times`);
  assertEquals(sim.pool.coverage().uncovered_ranges, [], label);
}

Deno.test("ChunkPool property: every sample folded exactly once per epoch under random steals, short chunks, partial folds, rollbacks and deaths", () => {
  for (let seed = 1; seed <= 300; seed++) runRandom(seed);
});

Deno.test("ChunkPool property: a pool rebuilt from coverage mid-epoch completes the epoch without repeats", () => {
  for (let seed = 1001; seed <= 1200; seed++) runRandom(seed, 40 + (seed % 60));
});
