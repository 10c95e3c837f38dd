/**
 * One chunk of training on a rank, split into the three moves of a step loop:
 * `nextBatch()` (data → device, LR for this step), `step(loss)` (clip, optimizer,
 * counters, loss read-back one step behind so the GPU never idles, control requests
 * between batches) and `finish()` (the chunk report). `RankRuntime.train` drives it with
 * the user's `trainFn`; the cooperative tier lets the user drive it.
 */
import type { Variable } from "../../autograd/mod.ts";
import type { DataCounters, DataPlane } from "../../data/mod.ts";
import type { Device } from "../../gpu/mod.ts";
import { clipGradNorm, type Optimizer } from "../../optim/mod.ts";
import type { Tensor } from "../../tensor/mod.ts";
import type { ChunkReport } from "../protocol/messages.ts";
import { PickKey, pickToSample } from "./permutation.ts";
import type { ChunkPlan, CoordinatorSink, RankSetup } from "../protocol/messages.ts";
import type { TransformFn } from "./rank_spec.ts";
import { drainScalars } from "./scalars.ts";
import { PREFETCH_BATCHES } from "./rank_data.ts";

/**
 * A fault-injection point for tests (test/fixtures/programs/tiny.ts, fault "exit-after-chunk"):
 * a function stored on `globalThis` under this key runs in the first task after a chunk's
 * report was handed back (RankRuntime.train, after the controls queued during the chunk
 * were served), so the reply is on its way before it runs.
 */
export const AFTER_CHUNK = Symbol.for("flodl-webgpu.chunk.afterChunk");

/** What a chunk needs of its rank. */
export interface RankView {
  readonly setup: RankSetup;
  readonly sink: CoordinatorSink;
  readonly device: Device;
  readonly optim: Optimizer;
  readonly params: readonly Variable[];
  /** The rank's data plane over its dataset (rank_data.ts). */
  readonly data: DataPlane;
  /** The plane's counters since the previous call (one call per chunk report). */
  dataReport(): DataCounters;
  readonly transform?: TransformFn;
  isStopped(): boolean;
  perm(epoch: number): Uint32Array;
  /** LR for the next step, or undefined to leave the optimizer's alone. */
  scheduledLr(): number | undefined;
  /** Count one optimizer step. */
  stepped(): void;
  /** Run queued control requests (snapshot, adopt, eval). */
  drainControls(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * A step's compute-only ms (flodl's `train_step` time): from the later of the
 * moment its batch was on the device (`start`) and the moment the previous step's results
 * were back (`prevDone`: until then the GPU was still busy with that step), to the moment
 * its own results were back (`done`). Data loading and waits between steps fall outside;
 * the delivered ms (results to results) keeps them.
 * @example
 * ```ts
 * import { stepComputeMs } from "./chunk_run.ts";
 * stepComputeMs(10, 25, 0); // 15: the GPU was idle when the batch arrived
 * stepComputeMs(10, 25, 18); // 7: pipelined behind the previous step until 18
 * ```
 */
export function stepComputeMs(start: number, done: number, prevDone: number): number {
  return Math.max(0, done - Math.max(start, prevDone));
}

/** Ranks (by setup) past their first settled step: that one compiles pipelines, it is not GPU work. */
const warmed = new WeakSet<RankSetup>();

export class ChunkRun {
  readonly plan: ChunkPlan;
  readonly report: ChunkReport;
  #rank: RankView;
  #picks: number[] = [];
  /** Sample indices of each full batch, built once: the plane keys its reads ahead by these arrays. */
  #samples: number[][] = [];
  #next = 0;
  #nBatches: number;
  #lossSum = 0;
  #pending?: {
    loss: Promise<ArrayLike<number>>;
    /** performance.now() when the loss arrived (the step's GPU work was done). */
    done: Promise<number>;
    samples: number;
    lr: number;
    start: number;
  };
  #rows = 0;
  #lr = 0;
  /** When the current batch was on the device (its step's compute starts no earlier). */
  #start = 0;
  /** When the previous step's results were back. */
  #done = 0;
  #t0 = performance.now();
  #last = performance.now();

  constructor(rank: RankView, plan: ChunkPlan) {
    this.#rank = rank;
    this.plan = plan;
    const perm = rank.perm(plan.epoch);
    for (const [offset, size] of plan.ranges) for (let i = 0; i < size; i++) this.#picks.push(perm[offset + i]);
    this.#nBatches = Math.floor(this.#picks.length / rank.setup.batchSize);
    const B = rank.setup.batchSize, augment = rank.setup.augment;
    for (let b = 0; b < this.#nBatches; b++) {
      this.#samples.push(this.#picks.slice(b * B, (b + 1) * B).map((p) => pickToSample(p, augment).sample));
    }
    this.report = {
      rank: rank.setup.rank,
      epoch: plan.epoch,
      avgLoss: NaN,
      batches: 0,
      samples: 0,
      epochMs: 0,
      shareCompleteMs: 0,
      computeOnlyMs: 0,
      dataStarveMs: 0,
      scalars: {},
    };
  }

  /** Full batches in this chunk. */
  get batches(): number {
    return this.#nBatches;
  }

  /** The next batch on the device, or null when the chunk is done (or the rank stopped). */
  async nextBatch(): Promise<Tensor[] | null> {
    const r = this.#rank;
    if (this.#next >= this.#nBatches || r.isStopped()) return null;
    const t = performance.now();
    const B = r.setup.batchSize, augment = r.setup.augment;
    const rows = this.#picks.slice(this.#next * B, (this.#next + 1) * B);
    const samples = this.#samples[this.#next];
    this.#next++;
    // The next batches' host reads start now and overlap this step (prefetch).
    let batch = await r.data.batch(samples, this.#samples.slice(this.#next, this.#next + PREFETCH_BATCHES));
    if (r.transform) {
      const keys = rows.map((p) => {
        const { sample, view } = pickToSample(p, augment);
        return new PickKey(sample, view, this.plan.epoch, r.setup.seed);
      });
      batch = await r.transform(batch, keys);
    }
    this.report.dataStarveMs += performance.now() - t;
    const lr = r.scheduledLr();
    if (lr !== undefined) r.optim.setLr(lr);
    this.#lr = r.optim.lr;
    this.#rows = rows.length;
    this.#start = performance.now();
    return batch;
  }

  /**
   * Finish a step whose `loss.backward()` already ran: clip, optimizer step, zero grads,
   * submit, read the previous step's loss, serve control requests.
   * @throws {RangeError} When the loss is not a scalar.
   */
  async step(loss: Variable): Promise<void> {
    const r = this.#rank;
    if (loss.data.numel !== 1) throw new RangeError(`trainFn must return a scalar loss, got shape [${loss.shape.join(",")}]`);
    if (r.setup.maxGradNorm !== undefined) clipGradNorm(r.params, r.setup.maxGradNorm);
    r.optim.step();
    r.optim.zeroGrad();
    r.stepped();
    const read = loss.data.toArray();
    read.catch(() => {}); // a lost device rejects it; #settle or the chunk's end reports that
    // Stamped when the read resolves, not when #settle gets to it: pipelined, that is one
    // step later, after the next batch's data and recording.
    const done = read.then(() => performance.now(), () => NaN);
    r.device.endStep();
    await this.#settle();
    this.#pending = { loss: read, done, samples: this.#rows, lr: this.#lr, start: this.#start };
    if (!r.setup.pipelined) await this.#settle();
    await r.drainControls();
  }

  /**
   * Report the previous step once its loss is back. Normally one step behind, so the GPU
   * keeps a step queued. Two times go out per batch: delivered ms (from the previous step's
   * results to this one's: data, recording, GPU, control requests served between batches)
   * and compute-only ms ({@link stepComputeMs}, never more than delivered); ElChe uses
   * either. When a cluster simulates a slow rank (`slowdown`), every rank
   * settles each step at once (no overlap, so steps are comparable across ranks) and the
   * slow rank then sleeps (slowdown − 1) × the step's delivered time and reports slowdown ×
   * its compute time, as a device that slow would. The rank's very first step is not
   * stretched: its time is shader compilation, which a slower GPU would not multiply.
   */
  async #settle(): Promise<void> {
    const p = this.#pending;
    if (!p) return;
    this.#pending = undefined;
    const loss = (await p.loss)[0];
    const done = await p.done;
    const r = this.#rank;
    let computeMs = stepComputeMs(p.start, done, this.#done);
    let now = done;
    if (r.setup.slowdown > 1) {
      if (warmed.has(r.setup)) {
        // Stretch the whole delivered step and report s × the compute: both of ElChe's
        // timing feeds then see exactly an s times slower rank, whatever share of the step
        // the host's data work takes (it grows under machine load).
        await sleep((r.setup.slowdown - 1) * (done - this.#last));
        now = performance.now();
        computeMs *= r.setup.slowdown;
      } else warmed.add(r.setup);
    }
    this.#done = now; // a slowed GPU is busy through its sleep
    const ms = now - this.#last;
    this.#last = now;
    this.#lossSum += loss;
    this.report.batches++;
    this.report.samples += p.samples;
    this.report.computeOnlyMs += computeMs;
    r.sink.batch({ rank: r.setup.rank, epoch: this.plan.epoch, ms, computeMs, loss, lr: p.lr, samples: p.samples });
  }

  /** Settle the last step and produce the report. */
  async finish(): Promise<ChunkReport> {
    await this.#settle();
    this.#rank.data.clearAhead();
    this.report.data = this.#rank.dataReport();
    this.report.avgLoss = this.report.batches ? this.#lossSum / this.report.batches : NaN;
    this.report.scalars = drainScalars();
    this.report.epochMs = performance.now() - this.#t0;
    this.report.shareCompleteMs = this.report.epochMs;
    return this.report;
  }
}
