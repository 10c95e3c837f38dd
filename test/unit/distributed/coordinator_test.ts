/**
 * The coordinator driven by fake ranks on a virtual clock (test/util/fake_ranks.ts): no
 * GPU, deterministic interleavings. Every scenario must end (a hang is reported as soon as
 * no event is left) and train every sample exactly once per epoch.
 */
import { ArrayDataSet, ElCheConfig, EvalCadence, permutation } from "../../../src/index.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { fakeProgram, type FakeRankScript, simulate } from "../../util/fake_ranks.ts";
import { RankClient, STEP_WINDOW } from "../../../src/distributed/coordinator/transport/rank_client.ts";
import { mulberry32 } from "../../util/random.ts";

const program = fakeProgram;

/** Counts per epoch and sample from completed chunks. */
function ledger(epochs: number, samples: number, seed = 42) {
  const counts = Array.from({ length: epochs }, () => new Uint8Array(samples));
  return {
    counts,
    chunk: (epoch: number, _rank: number, offset: number, size: number) => {
      const perm = permutation(seed, epoch, samples);
      for (let i = offset; i < offset + size; i++) counts[epoch][perm[i]]++;
    },
    /**
     * No pick trained twice and at least `covered` picks trained per epoch; with `contiguous`
     * (the chunk pool) exactly the first `covered` picks.
     */
    exactlyOnce(label: string, covered: number, contiguous: boolean) {
      counts.forEach((c, e) => {
        const perm = permutation(seed, e, samples);
        const bad = [];
        let trained = 0;
        for (let i = 0; i < samples; i++) {
          const n = c[perm[i]];
          trained += n;
          if (n > 1 || (contiguous && n !== (i < covered ? 1 : 0))) bad.push(i);
        }
        assert(bad.length === 0, `${label}: epoch ${e}: ${bad.length} picks not trained exactly once (e.g. pick ${bad[0]} ×${c[perm[bad[0]]]})`);
        assert(trained >= covered, `${label}: epoch ${e}: ${trained} picks trained, want >= ${covered}`);
      });
    },
  };
}

const MODES = { sync: ElCheConfig.cpuSync, cadence: ElCheConfig.cpuCadence, async: ElCheConfig.cpuAsync } as const;

Deno.test("coordinator: 120 random heterogeneous runs (sync, cadence, async; 2-4 ranks; speeds drifting) all end with each sample once", async () => {
  for (let seed = 1; seed <= 120; seed++) {
    const rng = mulberry32(seed);
    const mode = (["sync", "cadence", "async"] as const)[seed % 3];
    const W = 2 + Math.floor(rng() * 3);
    const B = [4, 8, 16][Math.floor(rng() * 3)];
    const samples = 300 + Math.floor(rng() * 900);
    const epochs = 3;
    const base = Array.from({ length: W }, () => 1 + rng() * 6);
    // Speeds drift: every 40 batches a rank's speed changes by up to 3x.
    const scripts: FakeRankScript[] = base.map((b, r) => ({
      batchMs: (n: number) => b * (1 + 2 * Math.abs(Math.sin((n / 40 + r) * 1.7 + seed))) * (0.8 + 0.4 * rng()),
      controlMs: () => rng() * 3,
    }));
    const L = ledger(epochs, samples);
    const b = program(samples).elche(MODES[mode]()).batchSize(B).numEpochs(epochs).maxAnchor(2 + Math.floor(rng() * 30));
    const label = `seed ${seed} (${mode}, ${W} ranks, B ${B}, ${samples} samples)`;
    const out = await simulate(b, scripts, { chunk: L.chunk }, seed % 2 ? { microtaskJitter: rng } : {});
    assert(!out.error, `${label}: ${out.error?.message}`);
    // The pool (cadence, async) covers floor(P/B)·B picks; sync partitions drop each share's partial batch.
    const pool = mode !== "sync";
    L.exactlyOnce(label, pool ? Math.floor(samples / B) * B : Math.floor(samples / B) * B - W * B, pool);
    assertEquals(out.handle.history.length, epochs, `${label}: epochs`);
  }
});

Deno.test("coordinator: 2 near-equal cadence ranks over 100 epoch geometries never hang (npm start's hang: a final window planned mid-window)", async () => {
  // Seed 1 of this sweep hung before the fix exactly as npm start did: "rank 0 idle, 20/20
  // batches of the window; rank 1 idle, 17/22" with batches left in the pool.
  for (let seed = 1; seed <= 100; seed++) {
    const rng = mulberry32(seed);
    const samples = 3000 + Math.floor(rng() * 20000), B = [16, 32, 64][seed % 3], epochs = 3;
    const ratio = 0.8 + 0.45 * rng();
    const L = ledger(epochs, samples);
    const b = program(samples).elche(MODES.cadence()).batchSize(B).numEpochs(epochs);
    const out = await simulate(b, [0, 1].map((r) => ({ batchMs: () => (r ? ratio : 1) * 10 * (0.8 + 0.4 * rng()), controlMs: () => 5 * rng() })), {
      chunk: L.chunk,
    });
    assert(!out.error, `seed ${seed}: ${out.error?.message}`);
    L.exactlyOnce(`seed ${seed}`, Math.floor(samples / B) * B, true);
    assertEquals(out.warnings, [], `seed ${seed}: warnings`);
  }
});

Deno.test("coordinator: a rank dying at a random batch (3 ranks, every mode, 45 seeds): the survivors train each sample once", async () => {
  for (let seed = 1; seed <= 45; seed++) {
    const rng = mulberry32(500 + seed);
    const mode = (["sync", "cadence", "async"] as const)[seed % 3];
    const samples = 400 + Math.floor(rng() * 800), B = 8, epochs = 3;
    const total = Math.floor(samples / B) * epochs;
    const dies = Math.floor(rng() * 3), at = 1 + Math.floor(rng() * total / 9); // within the slowest rank's share
    const scripts: FakeRankScript[] = [0, 1, 2].map((r) => ({
      batchMs: () => (1 + r) * (0.8 + 0.4 * rng()),
      controlMs: () => rng() * 2,
      dieAfterBatches: r === dies ? at : undefined,
    }));
    const L = ledger(epochs, samples);
    const b = program(samples).elche(MODES[mode]()).batchSize(B).numEpochs(epochs);
    const lost: number[] = [];
    const out = await simulate(b, scripts, { chunk: L.chunk, rankLost: (r) => lost.push(r) });
    const label = `seed ${seed} (${mode}, rank ${dies} dies after ${at} batches)`;
    assert(!out.error, `${label}: ${out.error?.message}`);
    assertEquals(lost, [dies], `${label}: lost`);
    if (mode === "sync") L.exactlyOnce(label, Math.floor(samples / B) * B - 3 * B, false);
    else L.exactlyOnce(label, Math.floor(samples / B) * B, true);
  }
});

Deno.test("coordinator: async ranks stream into the next epoch while the eval of the last one runs (the lost wakeup): 30 seeds end", async () => {
  for (let seed = 1; seed <= 30; seed++) {
    const rng = mulberry32(900 + seed);
    const samples = 300 + Math.floor(rng() * 600), B = 8, epochs = 3;
    const L = ledger(epochs, samples);
    const b = program(samples).elche(MODES.async()).batchSize(B).numEpochs(epochs)
      .evalDataset(new ArrayDataSet([{ data: new Float32Array(8), shape: [8, 1] }]))
      .evalFn(() => 0.5).evalEvery(EvalCadence.epochs(1));
    const scripts: FakeRankScript[] = [0, 1].map((r) => ({
      batchMs: () => (1 + r) * (0.5 + rng()),
      controlMs: (what: string) => (what === "evaluate" ? 5 + 40 * rng() : rng()),
    }));
    const out = await simulate(b, scripts, { chunk: L.chunk }, { microtaskJitter: rng });
    assert(!out.error, `seed ${seed}: ${out.error?.message}`);
    L.exactlyOnce(`seed ${seed}`, Math.floor(samples / B) * B, true);
    assertEquals(out.handle.evals.length, epochs, `seed ${seed}: one eval per epoch`);
  }
});

for (const what of ["evaluate", "checkpoint"] as const) {
  Deno.test(`coordinator: a rank whose ${what} never returns (alive, beating) stops the run with reduce_stall naming it`, async () => {
    const { overrideStallFloorSecsForTests } = await import("../../../src/distributed/coordinator/control/max_failure.ts");
    overrideStallFloorSecsForTests(0); // the ceiling is then 10 × heartbeatTimeoutSecs = 0.5 s
    try {
      const samples = 256, B = 8;
      let b = program(samples).elche(MODES.cadence()).batchSize(B).numEpochs(3).heartbeatTimeoutSecs(0.05);
      if (what === "evaluate") {
        b = b.evalDataset(new ArrayDataSet([{ data: new Float32Array(8), shape: [8, 1] }])).evalFn(() => 0.5)
          .evalEvery(EvalCadence.epochs(1));
      } else b = b.checkpointFn(() => {}).checkpointEvery(1);
      const scripts: FakeRankScript[] = [0, 1].map(() => ({ batchMs: () => 1, hangOn: what }));
      const out = await simulate(b, scripts, {}, { realWaitMs: 10_000 });
      assert(out.error, "the run stopped");
      const msg = out.error.message;
      const call = what === "evaluate" ? "evalFn (epoch 1)" : "checkpointFn (epoch 1)";
      assert(msg.includes("reduce_stall") && msg.includes(`'s ${call} did not return within 0.5 s`), msg);
      assert(msg.includes("no bundle was written"), msg);
    } finally {
      overrideStallFloorSecsForTests(undefined);
    }
  });
}

Deno.test("RankClient.overdueMs: silence past heartbeatTimeoutSecs is a death, unless the rank said it compiles (then the stall ceiling)", () => {
  const c = new RankClient(0, {} as never);
  const sink = c.sink();
  // Silences in whole ms from the last message (performance.now() values are not exact sums).
  const overdue = (silentMs: number) => Math.round(c.overdueMs(c.lastSeen + silentMs, 15_000, 300_000));
  assertEquals(overdue(10_000), 0, "within the heartbeat");
  assertEquals(overdue(16_000), 16_000, "silent past the heartbeat");
  sink.compiling(0);
  assertEquals(overdue(60_000), 0, "compiling: a minute of silence is fine");
  assertEquals(overdue(301_000), 301_000, "compiling past the stall ceiling");
  sink.heartbeat(0);
  assertEquals(overdue(16_000), 16_000, "a heartbeat ends the compile grace");
});

Deno.test("coordinator: while a rank compiles, the wait report names it and the pipeline, not \"nothing happened\"", async () => {
  const reports: [number, string][] = [];
  const scripts: FakeRankScript[] = [
    { batchMs: () => 10 },
    { batchMs: () => 10, compileFirst: { what: "matmul/gemm_tiled{TM:4}", ms: 90_000 } },
  ];
  const out = await simulate(program(64).batchSize(8).numEpochs(1).elche(ElCheConfig.cpuCadence()), scripts, {}, {
    onStart: (ctl) => {
      for (const t of [65_000, 90_015]) ctl.clock.at(t, () => reports.push([t, ctl.waitReport()]));
    },
  });
  assert(!out.error, `the run ends: ${out.error}`);
  assertEquals(reports.map(([t]) => t), [65_000, 90_015], "both reports taken (its first batch ends at 90 010 ms)");
  const [[, during], [, after]] = reports;
  assert(during.startsWith("coordinator: waiting 65 s for rank 1 to compile GPU pipelines"), during);
  assert(during.includes("rank 1 compiling GPU pipelines for 65 s (now matmul/gemm_tiled{TM:4})") && !during.includes("nothing happened"), during);
  assert(!after.includes("compil"), `once the rank steps, it no longer compiles: ${after}`);
});

Deno.test("RankClient.overdueMs: a rank whose steps are long may be silent STEP_GRACE x its slowest recent step, up to the stall ceiling", () => {
  const c = new RankClient(0, {} as never);
  const sink = c.sink();
  const overdue = (silentMs: number) => Math.round(c.overdueMs(c.lastSeen + silentMs, 15_000, 300_000));
  const batch = (ms: number) => sink.batch({ rank: 0, epoch: 0, ms, computeMs: ms, loss: 1, lr: 0.1, samples: 64 });
  batch(2_000);
  assertEquals(overdue(16_000), 16_000, "short steps: the heartbeat bound");
  batch(20_000);
  assertEquals(overdue(16_000), 0, "a 20 s step: 16 s of silence is fine");
  assertEquals(overdue(59_000), 0, "within 3 x 20 s");
  assertEquals(overdue(61_000), 61_000, "past 3 x the slowest recent step");
  batch(200_000);
  assertEquals(overdue(301_000), 301_000, "never past the stall ceiling");
  for (let i = 0; i < STEP_WINDOW; i++) batch(1_000);
  assertEquals(overdue(16_000), 16_000, "the allowance follows the recent steps, not the slowest ever");
});

Deno.test("coordinator: a chunk's reply landing before its last batch event never gives a Sync rank a second step in the window", async () => {
  // 2 ranks, Sync with a static split (1 step per rank per reduce), uneven speeds; every chunk's last
  // event comes after its reply, as a worker's sink port may deliver it.
  const samples = 256, B = 8, epochs = 2;
  const L = ledger(epochs, samples);
  const b = program(samples).elche(ElCheConfig.cpuSync()).partitionRatios([0.5, 0.5])
    .batchSize(B).numEpochs(epochs).cluster({ ranks: [{}, {}] });
  const steps: number[][] = [];
  const out = await simulate(b, [0, 1].map((r) => ({ batchMs: (n: number) => (r ? 3 : 1) * (5 + (n % 3)), lateLastEvent: true })), {
    chunk: L.chunk,
    reduce: (e) => void steps.push(e.steps),
  });
  assert(out.error === undefined, `run failed: ${out.error}`);
  L.exactlyOnce("late events", samples, false);
  const off = steps.filter((s) => s.join() !== "1,1");
  assertEquals(off, [], "every reduce folds one step of each rank");
  assertEquals(steps.length, epochs * samples / B / 2, "one reduce per step");
});
