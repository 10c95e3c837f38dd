/**
 * What a run promises: a sample counts as trained only once a reduce folded the
 * work that holds it. Fake ranks (test/util/fake_ranks.ts) are lost, or have a frame
 * refused, in the windows between a chunk's completion and the reduce that would fold it;
 * the count comes from the ranks' own side: each rank logs the batches every frame it gave
 * holds, and a batch is in the model when the reduce averaged that frame.
 */
import { ElCheConfig } from "../../../src/index.ts";
import type { RunEpochMetrics } from "../../../src/distributed/coordinator/report/metrics.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { fakeProgram, type FakeRankScript, modelLedger, simulate, type SimResult } from "../../util/fake_ranks.ts";

const SAMPLES = 613, B = 8, EPOCHS = 3, W = 3;
const BATCHES = Math.floor(SAMPLES / B);

const MODES = {
  "cpu-sync": ElCheConfig.cpuSync,
  "cpu-cadence": ElCheConfig.cpuCadence,
  "cpu-async": ElCheConfig.cpuAsync,
  "nccl-sync": ElCheConfig.ncclSync,
  "nccl-cadence": ElCheConfig.ncclCadence,
} as const;
type Mode = keyof typeof MODES;

function program(mode: Mode) {
  return fakeProgram(SAMPLES).elche(MODES[mode]()).batchSize(B).numEpochs(EPOCHS);
}

/** Ranks of unequal speed; `fault` scripts rank 1. */
function scripts(fault: Partial<FakeRankScript>, slowSnapshot = 0): FakeRankScript[] {
  return [0, 1, 2].map((r) => ({
    batchMs: (n: number) => (1 + r * 0.7) * (1 + 0.3 * Math.sin(n + r)),
    // Rank 2 answers its snapshots late: a rank lost right after its own answer is lost before the round is gathered.
    controlMs: (what: string) => (what === "snapshot" && r === 2 ? slowSnapshot : 0.1),
    ...(r === 1 ? fault : {}),
  }));
}

/** Run and count, per epoch and batch, how many averaged frames hold it (the ranks' own logs). */
async function run(mode: Mode, fault: Partial<FakeRankScript>, slowSnapshot = 0) {
  const ledger = modelLedger(EPOCHS);
  const out = await simulate(program(mode), scripts(fault, slowSnapshot), ledger.observer);
  return { out, folded: ledger.count(out) };
}

/** Every batch of every epoch in the model exactly once (partitions: each share's partial tail batch dropped). */
function exactlyOnce(label: string, mode: Mode, folded: Map<number, number>[], out: SimResult): void {
  assert(!out.error, `${label}: ${out.error?.message}`);
  const history = out.handle.history as RunEpochMetrics[];
  folded.forEach((m, e) => {
    const twice = [...m].filter(([, n]) => n > 1);
    assert(twice.length === 0, `${label}: epoch ${e}: ${twice.length} batches in the model twice (e.g. offset ${twice[0]?.[0]})`);
    if (mode === "cpu-sync" || mode === "nccl-sync") {
      assert(m.size >= BATCHES - W, `${label}: epoch ${e}: ${m.size} of ${BATCHES} batches reached the model`);
    } else {
      const missing = [...Array(BATCHES).keys()].filter((i) => !m.has(i * B));
      assert(missing.length === 0, `${label}: epoch ${e}: ${missing.length} batches never reached the model (e.g. offset ${missing[0] * B})`);
    }
    const counted = history[e].perRankSamples.reduce((a, x) => a + x, 0);
    assertEquals(counted, m.size * B, `${label}: epoch ${e}: perRankSamples add up to what reached the model`);
  });
}

const cases: { what: string; fault: Partial<FakeRankScript>; slowSnapshot?: number; modes: Mode[]; discards: boolean }[] = [
  {
    what: "lost the moment its first chunk completed (before any reduce)",
    fault: { dieAfter: { call: "train", n: 1 } },
    modes: ["cpu-sync", "cpu-cadence", "cpu-async", "nccl-sync", "nccl-cadence"],
    discards: true,
  },
  {
    what: "lost right after its fourth chunk completed",
    fault: { dieAfter: { call: "train", n: 4 } },
    modes: ["cpu-sync", "cpu-cadence", "cpu-async", "nccl-sync", "nccl-cadence"],
    discards: true,
  },
  {
    what: "lost after its first frame was sent, before the round was gathered",
    fault: { dieAfter: { call: "snapshot", n: 1 } },
    slowSnapshot: 5,
    modes: ["cpu-sync", "cpu-cadence", "cpu-async"],
    discards: true,
  },
  {
    what: "lost after its frame was averaged, during its adoption (its work is in the model: not trained again)",
    fault: { dieAfter: { call: "snapshot", n: 2 }, controlMs: (what: string) => (what === "adopt" ? 3 : 0.1) },
    modes: ["cpu-sync", "cpu-cadence", "cpu-async"],
    discards: false,
  },
  {
    what: "whose first frame is refused (NaN)",
    fault: { refuseSnapshot: 1 },
    modes: ["cpu-sync", "cpu-cadence", "cpu-async"],
    discards: true,
  },
];

for (const c of cases) {
  Deno.test(`coverage: a rank ${c.what}: every batch reaches the model once, counted from the ranks' logs`, async () => {
    for (const mode of c.modes) {
      const label = `${mode}, rank 1 ${c.what}`;
      const { out, folded } = await run(mode, c.fault, c.slowSnapshot);
      exactlyOnce(label, mode, folded, out);
      assertEquals(out.ranks[1].client.alive, false, `${label}: rank 1 was lost`);
      const discarded = (out.handle.history as RunEpochMetrics[]).reduce((a, m) => a + m.perRankDiscardedSamples[1], 0);
      // Async trains on past its snapshot: what it did after the averaged frame is lost with it.
      const want = c.discards ? discarded > 0 : mode === "cpu-async" || discarded === 0;
      assert(want, `${label}: ${discarded} samples of rank 1 accounted as discarded`);
    }
  });
}

Deno.test("coverage: a rank lost at the final reduce (its last frame refused) leaves no batch out of the last epoch", async () => {
  for (const mode of ["cpu-sync", "cpu-cadence", "cpu-async"] as const) {
    // The fault-free run says how many frames rank 1 gives: refuse the last one.
    const clean = await run(mode, {});
    const last = [...clean.out.ranks[1].framed.keys()].length;
    assert(last > 1, `${mode}: rank 1 gave ${last} frames`);
    const { out, folded } = await run(mode, { refuseSnapshot: last });
    const label = `${mode}, rank 1's frame ${last} of ${last} refused`;
    exactlyOnce(label, mode, folded, out);
    assert(out.warnings.some((w) => /frame was refused/.test(w)), `${label}: the refusal is said: ${out.warnings.join(" | ")}`);
  }
});
