/**
 * The rank runtime: one rank's model replica, optimizer, data plane and frames, answering
 * the coordinator's calls (`RankApi`, protocol/messages.ts) one method each: init, train a
 * chunk, snapshot, adopt, the nccl-* collective, evaluate, checkpoint, final state.
 *
 * Over ~400 lines on purpose: the calls share one mutable state (the model's tensors, the
 * optimizer, the pending divergence, the data plane); when a call may run (never while a
 * step trains) is control_queue's, and the per-call work itself lives in chunk_run, frames,
 * collective and rank_data.
 */
import type { Parameter } from "../../autograd/mod.ts";
import { Device, DeviceLostError } from "../../gpu/mod.ts";
import type { Module } from "../../nn/mod.ts";
import type { Optimizer, Scheduler } from "../../optim/mod.ts";
import type { Tensor } from "../../tensor/mod.ts";
import { describeError } from "../protocol/errors.ts";
import { adoptConsensus, frameToFlat, packFrame, writeFlat } from "./frames.ts";
import type { ChunkReport } from "../protocol/messages.ts";
import { AFTER_CHUNK, ChunkRun, type RankView } from "./chunk_run.ts";
import { permutation } from "./permutation.ts";
import { buildDataPlane, planeReporter } from "./rank_data.ts";
import type { DataCounters, DataPlane } from "../../data/mod.ts";
import { allReduce } from "./collective.ts";
import { outerFromSpec, OuterStepper } from "../protocol/outer.ts";
import { ControlQueue } from "./control_queue.ts";
import type {
  Adoption,
  ChunkPlan,
  CollectiveAck,
  CollectiveCall,
  CoordinatorSink,
  EvalOutcome,
  Frame,
  LayoutTable,
  RankApi,
  RankHello,
  RankSetup,
  SyncAck,
  WireDtype,
} from "../protocol/messages.ts";

import type { EvalFn, ModelFactory, OptimFactory, RankSpec, RankWorker, TrainFn, TransformFn } from "./rank_spec.ts";

import { rankCallbacks } from "./rank_spec.ts";

export { rankCallbacks };
export type { EvalFn, ModelFactory, OptimFactory, RankSpec, RankWorker, TrainFn, TransformFn };

/**
 * How long a failed call waits for the device's `lost` promise before calling the failure
 * the user's: the loss can surface as a read-back error first (`OperationError: Parent
 * device is lost`). Only failing calls wait.
 */
const LOST_GRACE_MS = 1000;
/** How long a stopping rank waits for its destroyed device to be released (see stop()). */
const STOP_RELEASE_MS = 2000;

/**
 * One rank: a device, a model replica, its optimizer and the training loop. Transport
 * independent: a worker exposes it through comlink; the single-device path calls it
 * in process. Control requests (snapshot, adopt, eval) run between batches, so a
 * reduce never waits for a whole chunk.
 */
export class RankRuntime<M extends Module> implements RankApi {
  #spec: RankSpec<M>;
  #setup!: RankSetup;
  #sink!: CoordinatorSink;
  #device!: Device;
  #model!: M;
  #optim!: Optimizer;
  #scheduler?: Scheduler;
  #layout!: LayoutTable;
  #params: Parameter[] = [];
  #buffers: Tensor[] = [];
  #calls = new ControlQueue(() => `rank ${this.#setup?.rank}`);
  #globalStep = 0;
  #stepsSinceAvg = 0;
  #localStep = 0;
  #version = 0;
  #epoch = -1;
  #perms = new Map<number, Uint32Array>();
  #snapshotSteps = new Map<number, number>();
  #lastAck: Promise<Omit<SyncAck, "rank">> = Promise.resolve({ divergence: 0, preNorm: 0, postNorm: 0 });
  /** nccl-*: this rank's replica of the run's outer optimizer (rank/collective.ts). */
  #outer?: OuterStepper;
  #ownDevice: boolean;
  #plane?: DataPlane;
  #planeReport: () => DataCounters = () => ({});

  constructor(spec: RankSpec<M>, device?: Device) {
    this.#spec = spec;
    if (device) this.#device = device;
    this.#ownDevice = device === undefined;
  }

  /** The model (single-device path and tests). */
  get model(): M {
    return this.#model;
  }

  /** The device. */
  get device(): Device {
    return this.#device;
  }

  async init(setup: RankSetup, sink: CoordinatorSink): Promise<RankHello> {
    this.#setup = setup;
    this.#sink = sink;
    const mine = rankCallbacks(this.#spec as unknown as RankSpec<Module>).sort();
    const theirs = [...setup.callbacks].sort();
    if (mine.join() !== theirs.join()) {
      const missing = theirs.filter((k) => !mine.includes(k));
      const extra = mine.filter((k) => !theirs.includes(k));
      throw new Error(
        `rank ${setup.rank}: the rank's builder and the coordinator's disagree on rank-side callbacks` +
          (missing.length ? `; set on the coordinator only: ${missing.join(", ")}` : "") +
          (extra.length ? `; set on the rank only: ${extra.join(", ")}` : "") +
          ". Attach dataset, evalDataset, evalFn, checkpointFn, epochFn, transform and scheduler in the entry module, " +
          "unconditionally, before .run()",
      );
    }
    const ds = this.#spec.dataset;
    if (ds && ds.len() !== setup.datasetLen) {
      throw new Error(`rank ${setup.rank}: dataset has ${ds.len()} samples here but ${setup.datasetLen} on the coordinator`);
    }
    if (this.#ownDevice) {
      this.#device = await Device.request({ powerPreference: setup.powerPreference, label: `rank${setup.rank}` });
      Device.setDefault(this.#device);
    }
    // A compile blocks this thread and its heartbeats: say so first (the message leaves now).
    this.#device.onCompile = (key) => void Promise.resolve(sink.compiling(setup.rank, key)).catch(() => {});
    this.#model = await this.#spec.modelFactory(this.#device);
    this.#params = this.#model.parameters();
    this.#optim = await this.#spec.optimFactory(this.#params);
    this.#scheduler = this.#spec.scheduler?.(setup.world);
    if (!this.#scheduler && setup.lrFactor > 1) this.#optim.scaleLr(setup.lrFactor);
    this.#buffers = this.#model.buffers();
    this.#layout = layoutOf(this.#model);
    // After the model and optimizer: the device pool's budget is what they leave.
    if (ds) {
      this.#plane = await buildDataPlane(ds, this.#device, setup);
      this.#planeReport = planeReporter(this.#plane);
    }
    const info = this.#device.info;
    return {
      rank: setup.rank,
      adapter: info.description || `${info.vendor} ${info.architecture}`.trim() || "unknown adapter",
      layout: this.#layout,
    };
  }

  initialState(): Promise<Frame> {
    return this.#classified(this.#pack(0, "f32"));
  }

  async load(frame: Frame): Promise<void> {
    await this.#controlled(() => {
      writeFlat(this.#device, this.#params.map((p) => p.data), this.#buffers, frameToFlat(frame, this.#layout));
      this.#device.flush();
      return Promise.resolve();
    });
  }

  /** Pack the parameters in `dtype`, the round's wire dtype as the coordinator chose it. */
  snapshot(round: number, dtype: WireDtype): Promise<Frame> {
    return this.#controlled(async () => {
      const f = await this.#pack(round, dtype);
      this.#snapshotSteps.set(round, f.batches);
      return f;
    });
  }

  /**
   * Adopt a consensus. The acknowledgement carries the divergence measured at the PREVIOUS
   * adoption (one reduce late, as flodl's collective path): the read-back of this one's
   * norms lands while the rank trains on, so a reduce never waits for it.
   */
  adopt(a: Adoption): Promise<SyncAck> {
    return this.#controlled(async () => {
      // Steps taken after the snapshot (Async) belong to the next window.
      const ack = await this.#adopt(a, this.#snapshotSteps.get(a.round) ?? this.#stepsSinceAvg);
      this.#snapshotSteps.clear();
      return ack;
    });
  }

  /**
   * An nccl-* reduce through the group's slab (rank/collective.ts). The consensus is already
   * on this thread and always overwrites (no EASGD under Sync/Cadence), so it is written
   * straight into the parameters and its divergence measured here, without the GPU blend
   * and norm read-back `adopt` needs.
   */
  collective(c: CollectiveCall): Promise<CollectiveAck> {
    return this.#controlled(async () => {
      const rank = this.#setup.rank, batches = this.#stepsSinceAvg;
      // The rank's replica of the outer optimizer, built at its first reduce (once per rank).
      if (c.outer) this.#outer ??= new OuterStepper(outerFromSpec(c.outer));
      const out = await allReduce(this.#device, this.#params.map((p) => p.data), this.#buffers, c, rank, c.outer ? this.#outer : undefined);
      if (out.status !== "done") return { rank, status: out.status, batches };
      writeFlat(this.#device, this.#params.map((p) => p.data), this.#buffers, out.consensus);
      this.#device.flush();
      const ack = await this.#adopted(Promise.resolve(out.divergence), c, c.steps);
      return { rank, status: "done", batches, ack };
    });
  }

  /** Write the consensus (measuring its divergence on the GPU), answer with the previous one's. */
  #adopt(a: Adoption, steps: number): Promise<SyncAck> {
    const measured = adoptConsensus(this.#device, this.#params.map((p) => p.data), this.#buffers, this.#layout, a);
    measured.catch(() => {}); // a lost device surfaces at the next step
    return this.#adopted(measured, a, steps);
  }

  /** The bookkeeping of an adoption: the ack is the previous adoption's divergence (one reduce late); `steps` leave the window. */
  async #adopted(
    measured: Promise<Omit<SyncAck, "rank">>,
    a: { version: number; globalStep: number; resetInner: boolean },
    steps: number,
  ): Promise<SyncAck> {
    const ack = await this.#lastAck;
    this.#lastAck = measured;
    if (a.resetInner) this.#optim.resetState();
    this.#version = a.version;
    this.#globalStep = a.globalStep;
    this.#stepsSinceAvg = Math.max(0, this.#stepsSinceAvg - steps);
    return { ...ack, rank: this.#setup.rank };
  }

  evaluate(epoch: number): Promise<EvalOutcome> {
    return this.#controlled(async () => {
      const { evalFn, evalDataset } = this.#spec;
      if (!evalFn || !evalDataset) return { epoch, error: "no evalFn/evalDataset on this rank" };
      this.#model.eval();
      try {
        const value = await evalFn(this.#model, evalDataset);
        return { epoch, value };
      } catch (e) {
        const lost = await this.#device.lostWithin(LOST_GRACE_MS);
        if (lost) throw new DeviceLostError(this.#device.label, lost.reason, describeError(e));
        return { epoch, error: describeError(e) };
      } finally {
        this.#model.train();
        this.#device.endStep();
      }
    });
  }

  checkpoint(version: number): Promise<void> {
    return this.#controlled(async () => {
      await this.#spec.checkpointFn?.(version, this.#model);
    });
  }

  finalState(): Promise<Frame> {
    return this.#controlled(() => this.#pack(this.#version, "f32"));
  }

  optimizerState() {
    return this.#controlled(async () => {
      const sd = this.#optim.stateDict();
      const tensors: Record<string, Float32Array<ArrayBuffer>> = {};
      const shapes: Record<string, number[]> = {};
      for (const [k, t] of Object.entries(sd.tensors)) {
        tensors[k] = (await t.toArray()) as Float32Array<ArrayBuffer>;
        shapes[k] = [...t.shape];
      }
      return { tensors, shapes, scalars: { ...sd.scalars } };
    });
  }

  memory() {
    return Promise.resolve(this.#device.memory());
  }

  async stop(): Promise<void> {
    this.#calls.stop();
    this.onStop?.();
    // Frees the device pool and deletes the disk stage (the coordinator removes the run's
    // stage folder too, for ranks that die before they get here).
    const plane = this.#plane;
    this.#plane = undefined;
    await plane?.close().catch((e) => console.warn(`rank ${this.#setup?.rank}: closing the data plane: ${(e as Error).message}`));
    if (this.#ownDevice && this.#device && !this.#device.lost) {
      this.#device.destroy();
      // Returns once the driver has released the device (its `lost` settles on destroy), so
      // the coordinator's terminate() that follows never tears a worker down mid-release.
      await this.#device.lostWithin(STOP_RELEASE_MS);
    }
  }

  /** The parameters and buffers as a frame of `round`; f32 for the broadcast and join(), never the bf16 staging. */
  #pack(round: number, dtype: WireDtype): Promise<Frame> {
    const meta = { rank: this.#setup.rank, round, batches: this.#stepsSinceAvg, bf16: dtype === "bf16" };
    return packFrame(this.#device, this.#params.map((p) => p.data), this.#buffers, meta);
  }

  /** A control call (control_queue.ts), with a failure on a lost device reported as the loss. */
  #controlled<T>(fn: () => Promise<T>): Promise<T> {
    return this.#classified(this.#calls.run(fn));
  }

  /**
   * A failure while the device is lost (or becomes lost within {@link LOST_GRACE_MS}) is the
   * device's loss, whatever error surfaced first: the coordinator drops the rank and the run
   * goes on, instead of stopping as it must for a bug in user code.
   */
  async #classified<T>(p: Promise<T>): Promise<T> {
    try {
      return await p;
    } catch (e) {
      if (e instanceof DeviceLostError || !this.#device) throw e;
      const lost = await this.#device.lostWithin(LOST_GRACE_MS);
      if (!lost) throw e;
      throw new DeviceLostError(this.#device.label, lost.reason, describeError(e));
    }
  }

  #perm(epoch: number): Uint32Array {
    let p = this.#perms.get(epoch);
    if (!p) {
      const n = (this.#spec.dataset?.len() ?? 0) * this.#setup.augment;
      p = permutation(this.#setup.seed, epoch, n);
      this.#perms.clear();
      this.#perms.set(epoch, p);
    }
    return p;
  }

  #lr(): number {
    if (!this.#scheduler) return this.#optim.lr;
    return this.#scheduler.lr(this.#globalStep + this.#stepsSinceAvg) * this.#setup.lrFactor;
  }

  /** Cooperative tier: plans go to the user's loop instead of `trainFn`. */
  external?: (plan: ChunkPlan) => Promise<ChunkReport>;
  /** Called once the rank stops. */
  onStop?: () => void;

  train(plan: ChunkPlan): Promise<ChunkReport> {
    const done = this.#classified(this.#train(plan));
    const hook = (globalThis as Record<symbol, unknown>)[AFTER_CHUNK] as (() => void) | undefined;
    return hook ? done.then((report) => (setTimeout(hook, 0), report)) : done;
  }

  async #train(plan: ChunkPlan): Promise<ChunkReport> {
    if (this.external) return await this.external(plan);
    const run = await this.begin(plan);
    try {
      for (let batch = await run.nextBatch(); batch; batch = await run.nextBatch()) {
        const loss = await this.#spec.trainFn(this.#model, batch);
        loss.backward();
        await run.step(loss);
      }
      return await run.finish();
    } finally {
      await this.end();
    }
  }

  /**
   * Start a chunk (fires epochFn first when asked); the caller steps it and then calls
   * {@link end}. The cooperative tier uses this pair; {@link train} is the managed loop.
   */
  async begin(plan: ChunkPlan): Promise<ChunkRun> {
    if (!this.#spec.dataset || !this.#plane) throw new Error(`rank ${this.#setup.rank}: no dataset on this rank`);
    this.#calls.begin();
    this.#globalStep = Math.max(this.#globalStep, plan.globalStep);
    this.#version = plan.version;
    try {
      if (plan.epochFn && this.#spec.epochFn && plan.epoch !== this.#epoch) {
        this.#epoch = plan.epoch;
        await this.#spec.epochFn(plan.epoch, this.#worker());
      }
    } catch (e) {
      await this.end();
      throw e;
    }
    this.#epoch = plan.epoch;
    return new ChunkRun(this.#view(), plan);
  }

  /** End the running chunk and serve control requests that queued during it. */
  async end(): Promise<void> {
    await this.#calls.end();
  }

  #view(): RankView {
    return {
      setup: this.#setup,
      sink: this.#sink,
      device: this.#device,
      optim: this.#optim,
      params: this.#params,
      data: this.#plane!,
      dataReport: () => this.#planeReport(),
      transform: this.#spec.transform,
      isStopped: () => this.#calls.stopped,
      perm: (e) => this.#perm(e),
      scheduledLr: () => (this.#scheduler ? this.#lr() : undefined),
      stepped: () => {
        this.#localStep++;
        this.#stepsSinceAvg++;
      },
      drainControls: () => this.#calls.drain(),
    };
  }

  #worker(): RankWorker<M> {
    return {
      rank: this.#setup.rank,
      device: this.#device,
      model: this.#model,
      localStep: () => this.#localStep,
      currentVersion: () => this.#version,
      currentEpoch: () => this.#epoch,
      currentLr: () => this.#optim.lr,
      setLr: (lr) => this.#optim.setLr(lr),
      scaleLr: (f) => this.#optim.scaleLr(f),
    };
  }
}

/** The frame layout of a model: parameters then buffers, in registration order. */
export function layoutOf(model: Module): LayoutTable {
  let offset = 0;
  const params = model.namedParameters().map(([name, p]) => {
    const e = { name, shape: [...p.data.shape], offset, numel: p.data.numel };
    offset += e.numel;
    return e;
  });
  const paramCount = offset;
  offset = 0;
  const buffers = model.namedBuffers().map(([name, t]) => {
    const e = { name, shape: [...t.shape], offset, numel: t.numel };
    offset += e.numel;
    return e;
  });
  return { params, buffers, paramCount, bufferCount: offset };
}
