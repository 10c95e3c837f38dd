/**
 * The step a rank gives its learning-rate scheduler, in every mode and world size:
 * `lr(globalStep + stepsSinceAvg)`, where globalStep is the cohort's batches folded by the
 * last reduce the rank adopted and stepsSinceAvg its own batches that reduce did not fold.
 * A probe schedule (tiny.ts) makes each batch event's learning rate tell the step its rank
 * asked for; an independent replay of that formula over the coordinator's reduce events
 * (steps folded per rank, in round order) must explain every rank's sequence, and the
 * checkpoint's global step must count every batch once. One rank never averages: it asks
 * for 0, 1, 2, … across epochs, and a resumed run goes on from the bundle's step.
 */
import { ElCheConfig, readBundleMeta, setProgramArgs } from "../../../src/index.ts";
import { FsStorage } from "../../../src/io/mod.ts";
import type { DdpBuilder } from "../../../src/distributed/run/builder.ts";
import type { TinyLinear } from "../../fixtures/programs/tiny.ts";
import { probedStep, tinyProbe } from "../../fixtures/programs/tiny.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";

const B = 16, EPOCHS = 2;

interface Probed {
  /** Per rank, the step behind each of its batches, in the order it trained them. */
  asked: number[][];
  /** Per reduce in round order, the steps it folded per rank. */
  folded: number[][];
  /** The global step the run's last bundle recorded. */
  saved: number;
}

async function probe(b: DdpBuilder<TinyLinear>, world: number, dir: string, stem: string, factor = 1): Promise<Probed> {
  const asked: number[][] = Array.from({ length: world }, () => []);
  const folded: number[][] = [];
  const { observe } = await import("../../../src/distributed/run/builder.ts");
  b = b.savePath(`${dir}/${stem}`);
  observe(b, {
    batch: (e) => asked[e.rank].push(probedStep(e.lr, factor)),
    reduce: (e) => folded.push([...e.steps]),
  });
  await (await b.run()).join();
  const meta = await readBundleMeta(new FsStorage(dir), stem);
  return { asked, folded, saved: meta.global_step };
}

/**
 * Replays flodl's LR schedule for rank r: it asks for base + n, n counting its batches since the base
 * was set; adopting round k's consensus sets base to the global step after round k and
 * takes the steps round k folded out of n. Returns what breaks the formula, or undefined.
 */
function replay(asked: number[], r: number, folded: number[][], start: number): string | undefined {
  const after = [start];
  for (const s of folded) after.push(after[after.length - 1] + s.reduce((a, x) => a + x, 0));
  let base = start, n = 0, k = 0;
  for (const [i, v] of asked.entries()) {
    while (v !== base + n && k < folded.length) {
      n = Math.max(0, n - folded[k][r]);
      base = after[++k];
    }
    if (v !== base + n) return `rank ${r}, batch ${i}: asked for step ${v}; after the ${k} reduces before it the formula gives ${base + n} (steps ${asked.join(" ")})`;
    n++;
  }
  return undefined;
}

function check(label: string, p: Probed, start = 0): void {
  const batches = p.asked.reduce((a, s) => a + s.length, 0);
  assertEquals(batches, EPOCHS * Math.floor(768 / B) - (start ? Math.floor(768 / B) : 0), `${label}: batches trained`);
  p.asked.forEach((s, r) => {
    assert(s.length > 0, `${label}: rank ${r} trained`);
    const why = replay(s, r, p.folded, start);
    assert(why === undefined, `${label}: ${why}`);
  });
  assertEquals(p.saved, start + batches, `${label}: the bundle's global step counts every batch once`);
}

async function inTemp(f: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "flodl-sched-" });
  try {
    setProgramArgs({});
    await f(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function program(ranks: number) {
  return tinyProbe.clone().batchSize(B).numEpochs(EPOCHS).bf16Wire(true).lrScaleRatio(0)
    .cluster({ ranks: Array.from({ length: ranks }, () => ({})) });
}

gpuTest("one rank asks its scheduler for steps 0, 1, 2, … across epochs; resumed, it goes on from the bundle's step", async () => {
  await inTemp(async (dir) => {
    const whole = await probe(program(1), 1, dir, "whole");
    assertEquals(whole.asked[0], [...Array(96).keys()], "steps of 2 epochs × 48 batches");
    assertEquals(whole.folded, [], "one rank never reduces");
    check("solo", whole);
    // Epoch 0 alone, then a run of 2 epochs resumed from its bundle trains epoch 1.
    const first = await probe(program(1).numEpochs(1), 1, dir, "first");
    assertEquals(first.saved, 48, "epoch 0's bundle");
    const rest = await probe(program(1).resumeFrom(`${dir}/first`), 1, dir, "rest");
    assertEquals(rest.asked[0], Array.from({ length: 48 }, (_, i) => 48 + i), "the resumed epoch's steps");
    check("solo resumed", rest, 48);
  });
});

for (const mode of ["cpu-sync", "cpu-cadence", "cpu-async", "nccl-sync", "nccl-cadence"] as const) {
  gpuTest(`${mode} with 2 ranks: each rank asks for the cohort's folded steps plus its own since, at every batch`, async () => {
    await inTemp(async (dir) => {
      const p = await probe(program(2).elche(ElCheConfig.defaultFor(mode)), 2, dir, "run");
      assert(p.folded.length > 1, `${mode}: reduces happened (${p.folded.length})`);
      check(mode, p);
    });
  });
}

gpuTest("cpu-cadence with 3 ranks and linear LR scaling (×3), then resumed from epoch 0's bundle: every step by the formula", async () => {
  await inTemp(async (dir) => {
    const three = () => program(3).elche(ElCheConfig.cpuCadence()).lrScaleRatio(1);
    check("3 ranks", await probe(three(), 3, dir, "run", 3));
    const first = await probe(three().numEpochs(1), 3, dir, "first", 3);
    assertEquals(first.saved, 48, "epoch 0's bundle");
    check("3 ranks resumed", await probe(three().resumeFrom(`${dir}/first`), 3, dir, "rest", 3), 48);
  });
});
