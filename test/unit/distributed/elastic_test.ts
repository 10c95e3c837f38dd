/**
 * Elastic membership on the real coordinator over fake ranks on a virtual clock
 * (test/util/fake_ranks.ts): a spare slot's rank asks to join at chosen moments (mid-epoch,
 * during a reduce, in the epoch a member dies, after one left) and is admitted only at the
 * next epoch boundary, with the consensus; every epoch trains each sample exactly once.
 */
import { ElCheConfig, permutation } from "../../../src/index.ts";
import type { RankPlace } from "../../../src/distributed/coordinator/report/observer.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { fakeProgram, type FakeRankScript, type SimControl, simulate } from "../../util/fake_ranks.ts";
import { mulberry32 } from "../../util/random.ts";

const SEED = 42;
const MODES = { sync: ElCheConfig.cpuSync, cadence: ElCheConfig.cpuCadence, async: ElCheConfig.cpuAsync } as const;
type Mode = keyof typeof MODES;

/** What one elastic run saw, in the coordinator's order of events. */
class Watch {
  /** Per epoch and sample: times trained. */
  counts: Uint8Array[];
  /** Chunks as [epoch, rank], in completion order. */
  chunks: [number, number][] = [];
  /** Epochs closed (metricsFn), in order. */
  closed: number[] = [];
  joined: { rank: number; epoch: number; place: RankPlace; closedBefore: number; consensus?: Float32Array }[] = [];
  lost: number[] = [];
  lastConsensus?: Float32Array;
  constructor(readonly epochs: number, readonly samples: number) {
    this.counts = Array.from({ length: epochs }, () => new Uint8Array(samples));
  }
  observer() {
    return {
      wantsFrames: true,
      frames: (_round: number, _ranks: unknown, consensus: Float32Array) => void (this.lastConsensus = consensus.slice()),
      chunk: (epoch: number, rank: number, offset: number, size: number) => {
        const perm = permutation(SEED, epoch, this.samples);
        for (let i = offset; i < offset + size; i++) this.counts[epoch][perm[i]]++;
        this.chunks.push([epoch, rank]);
      },
      rankLost: (r: number) => void this.lost.push(r),
      rankJoined: (rank: number, epoch: number, place: RankPlace) =>
        void this.joined.push({ rank, epoch, place, closedBefore: this.closed.length, consensus: this.lastConsensus }),
    };
  }
  /** Each epoch: no pick twice; the pool covers exactly the first floor(P/B)·B picks (sync: >= that less W partial batches). */
  exactlyOnce(label: string, mode: Mode, B: number, W: number): void {
    const covered = Math.floor(this.samples / B) * B - (mode === "sync" ? W * B : 0);
    this.counts.forEach((c, e) => {
      const perm = permutation(SEED, e, this.samples);
      let trained = 0;
      const bad: number[] = [];
      for (let i = 0; i < this.samples; i++) {
        const n = c[perm[i]];
        trained += n;
        if (n > 1 || (mode !== "sync" && n !== (i < covered ? 1 : 0))) bad.push(i);
      }
      assert(bad.length === 0, `${label}: epoch ${e}: ${bad.length} picks not trained exactly once (e.g. pick ${bad[0]} ×${c[perm[bad[0]]]})`);
      assert(trained >= covered, `${label}: epoch ${e}: ${trained} picks trained, want >= ${covered}`);
    });
  }
  /** The first epoch in which `rank` completed a chunk (Infinity: none). */
  firstEpochOf(rank: number): number {
    return Math.min(Infinity, ...this.chunks.filter(([, r]) => r === rank).map(([e]) => e));
  }
}

function program(samples: number, mode: Mode, B: number, epochs: number, w: Watch) {
  return fakeProgram(samples).elche(MODES[mode]()).batchSize(B).numEpochs(epochs).metricsFn((m) => void w.closed.push(m.epoch));
}

/** Checks every scenario shares: admitted at the first boundary after the request, with the consensus, trains after. */
function checkAdmitted(label: string, w: Watch, rank: number, closedAtRequest: number, mode: Mode, spareRank = rank) {
  const j = w.joined.find((x) => x.rank === rank);
  assert(j, `${label}: rank ${rank} was admitted (joined: ${JSON.stringify(w.joined.map((x) => x.rank))})`);
  assertEquals(j.epoch, closedAtRequest + 1, `${label}: admitted at the first boundary after the request (epoch)`);
  assertEquals(j.closedBefore, closedAtRequest + 1, `${label}: admitted right after that epoch closed`);
  assertEquals(j.place.host, `fake-host-${spareRank}`, `${label}: place`);
  const first = w.firstEpochOf(rank);
  assert(first >= j.epoch, `${label}: rank ${rank} trained a chunk of epoch ${first + 1} before it was admitted for epoch ${j.epoch + 1}`);
  // Barrier-paced: it trains from the very next epoch; Async: that one may already stream with its old members.
  if (mode !== "async") assertEquals(first, j.epoch, `${label}: rank ${rank} trains from the epoch it was admitted for`);
  else {
    // Admitted for the last epoch while it already streams: no epoch is left for it.
    const none = first === Infinity && j.epoch === w.epochs - 1;
    assert(none || first <= j.epoch + 1, `${label}: rank ${rank} trains from epoch ${j.epoch + 1} or the next (first: ${first + 1})`);
  }
  assert(j.consensus !== undefined, `${label}: a consensus existed at admission`);
}

Deno.test("elastic: a join arriving mid-epoch is admitted only at the next epoch boundary, with the consensus (every mode, 30 seeds, each sample once per epoch)", async () => {
  for (let seed = 1; seed <= 30; seed++) {
    const rng = mulberry32(3000 + seed);
    const mode = (["sync", "cadence", "async"] as const)[seed % 3];
    const samples = 300 + Math.floor(rng() * 500), B = [4, 8][seed % 2], epochs = 4;
    const w = new Watch(epochs, samples);
    const speed = [1 + rng() * 3, 1 + rng() * 3, 0.5 + rng() * 4];
    const scripts: FakeRankScript[] = speed.map((s, r) => ({
      batchMs: () => s * (0.8 + 0.4 * rng()),
      controlMs: () => rng() * 2,
      spare: r === 2,
    }));
    // The request comes with some batch of epoch 1 or 2 (mid-epoch by construction: that epoch has begun, it has not closed).
    const at = 1 + Math.floor(rng() * 2), after = 1 + Math.floor(rng() * 5);
    let ctl!: SimControl, closedAtRequest = -1, seen = 0, loadedAtRequest: unknown;
    const obs = w.observer();
    const label = `seed ${seed} (${mode}, B ${B}, ${samples} samples, join in epoch ${at + 1})`;
    const out = await simulate(program(samples, mode, B, epochs, w), scripts, {
      ...obs,
      batch: (e) => {
        if (e.epoch === at && ++seen === after && closedAtRequest < 0) {
          closedAtRequest = w.closed.length;
          loadedAtRequest = ctl.ranks[2].loaded;
          ctl.requestJoin(2);
          assertEquals(ctl.pendingJoins(), [2], `${label}: waiting`);
        }
      },
    }, { onStart: (c) => (ctl = c) });
    assert(!out.error, `${label}: ${out.error?.message}`);
    assert(closedAtRequest >= 0, `${label}: the join was requested`);
    assertEquals(loadedAtRequest, undefined, `${label}: nothing loaded before the request`);
    w.exactlyOnce(label, mode, B, 3);
    checkAdmitted(label, w, 2, closedAtRequest, mode);
    const j = w.joined[0];
    assertEquals([...ctl.ranks[2].loaded!.params], [...j.consensus!], `${label}: the new rank loaded the consensus of the last reduce`);
    assertEquals(ctl.ranks[2].loaded!.dtype, "f32", `${label}: an exact (f32) consensus`);
    assertEquals(w.lost, [], `${label}: no rank lost`);
  }
});

Deno.test("elastic: a join requested while a reduce is in flight waits for the epoch boundary (every mode, 21 seeds)", async () => {
  for (let seed = 1; seed <= 21; seed++) {
    const rng = mulberry32(4000 + seed);
    const mode = (["sync", "cadence", "async"] as const)[seed % 3];
    const samples = 300 + Math.floor(rng() * 400), B = 8, epochs = 3;
    const w = new Watch(epochs, samples);
    let ctl!: SimControl, closedAtRequest = -1, inReduce = false;
    const reduceNo = 1 + Math.floor(rng() * 3);
    let snapshots = 0;
    const scripts: FakeRankScript[] = [0, 1, 2].map((r) => ({
      batchMs: () => (1 + r) * (0.8 + 0.4 * rng()),
      // Rank 0's n-th snapshot (a reduce has begun, nothing adopted yet): the join arrives now.
      controlMs: (what: string) => {
        if (r === 0 && what === "snapshot" && ++snapshots === reduceNo && closedAtRequest < 0) {
          closedAtRequest = w.closed.length;
          inReduce = true;
          ctl.requestJoin(3);
        }
        return 1 + rng() * 3;
      },
    }));
    scripts.push({ batchMs: () => 1.5, spare: true });
    const label = `seed ${seed} (${mode}, join in reduce ${reduceNo})`;
    const out = await simulate(program(samples, mode, B, epochs, w), scripts, w.observer(), { onStart: (c) => (ctl = c) });
    assert(!out.error, `${label}: ${out.error?.message}`);
    assert(inReduce, `${label}: the join arrived during a reduce`);
    w.exactlyOnce(label, mode, B, 4);
    if (closedAtRequest + 1 < epochs) checkAdmitted(label, w, 3, closedAtRequest, mode);
  }
});

Deno.test("elastic: a member dies and a spare joins in the same epoch; a rank joins after another left (every mode, 30 seeds)", async () => {
  for (let seed = 1; seed <= 30; seed++) {
    const rng = mulberry32(5000 + seed);
    const mode = (["sync", "cadence", "async"] as const)[seed % 3];
    const samples = 300 + Math.floor(rng() * 500), B = 8, epochs = 4;
    const w = new Watch(epochs, samples);
    const joinFirst = seed % 2 === 0; // the join before or after the death, both within epoch 2
    let ctl!: SimControl, closedAtRequest = -1, seen = 0;
    const scripts: FakeRankScript[] = [0, 1].map((r) => ({ batchMs: () => (1 + r) * (0.8 + 0.4 * rng()), controlMs: () => rng() * 2 }));
    scripts.push({ batchMs: () => 0.7 + rng(), controlMs: () => rng() * 2, spare: true });
    const label = `seed ${seed} (${mode}, join ${joinFirst ? "before" : "after"} rank 1 dies, in epoch 2)`;
    const out = await simulate(program(samples, mode, B, epochs, w), scripts, {
      ...w.observer(),
      batch: (e) => {
        if (e.epoch !== 1 || e.rank !== 0) return;
        seen++;
        const join = () => {
          closedAtRequest = w.closed.length;
          ctl.requestJoin(2);
        };
        if (seen === 2 && joinFirst) join();
        if (seen === 3) ctl.ranks[1].die("its worker died (scripted, mid-epoch 2)");
        if (seen === 4 && !joinFirst) join();
      },
    }, { onStart: (c) => (ctl = c) });
    assert(!out.error, `${label}: ${out.error?.message}`);
    assertEquals(w.lost, [1], `${label}: lost`);
    w.exactlyOnce(label, mode, B, 3);
    checkAdmitted(label, w, 2, closedAtRequest, mode);
    const j = w.joined[0];
    assert(w.chunks.every(([e, r]) => r !== 1 || e <= j.epoch), `${label}: the dead rank trained nothing after`);
  }
});

Deno.test("elastic: a spare that dies while waiting, or asks after the last boundary, is never admitted; the run ends normally", async () => {
  for (const mode of ["sync", "cadence", "async"] as const) {
    const samples = 400, B = 8, epochs = 2;
    const w = new Watch(epochs, samples);
    let ctl!: SimControl, requested = false, late = false;
    const scripts: FakeRankScript[] = [0, 1].map((r) => ({ batchMs: () => 1 + r }));
    scripts.push({ batchMs: () => 1, spare: true }, { batchMs: () => 1, spare: true });
    const out = await simulate(program(samples, mode, B, epochs, w), scripts, {
      ...w.observer(),
      batch: (e) => {
        if (e.epoch === 0 && !requested) {
          requested = true;
          ctl.requestJoin(2);
          ctl.ranks[2].die("its connection closed (scripted) while it waited to join");
          assertEquals(ctl.pendingJoins(), [], `${mode}: the dead spare is no longer waiting`);
        }
        // In the last epoch: no boundary is left to admit at.
        if (e.epoch === 1 && w.closed.length === 1 && !late) {
          late = true;
          ctl.requestJoin(3);
        }
      },
    }, { onStart: (c) => (ctl = c) });
    assert(!out.error, `${mode}: ${out.error?.message}`);
    assert(requested && late, `${mode}: both joins were asked`);
    assertEquals(w.joined, [], `${mode}: nobody admitted`);
    assertEquals(w.lost, [], `${mode}: a spare's end is no rank lost`);
    assert(out.warnings.some((m) => /waiting to join; the run goes on/.test(m)), `${mode}: the dead spare is reported: ${out.warnings.join(" | ")}`);
    w.exactlyOnce(mode, mode, B, 2);
    assertEquals(w.chunks.filter(([, r]) => r >= 2), [], `${mode}: spares trained nothing`);
  }
});
