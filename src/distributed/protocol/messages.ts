/**
 * The coordinator–rank protocol, typed once and imported by both sides. A transport
 * (`transport.ts`) carries every call; large payloads travel as transferables. The only raw
 * `postMessage` of the library is the hello below: a message sent to a worker before its
 * listener exists is dropped, so the rank announces itself first (the worker transport waits
 * for it).
 */
import type { Slab } from "./slab.ts";

/** One tensor in the flat frame: parameters first, then buffers, in `namedParameters` order. */
export interface LayoutEntry {
  name: string;
  shape: number[];
  /** Element offset in its section (params or buffers). */
  offset: number;
  numel: number;
}

/** The frame layout, sent once by each rank at init; all ranks must agree. */
export interface LayoutTable {
  params: LayoutEntry[];
  buffers: LayoutEntry[];
  paramCount: number;
  bufferCount: number;
}

/** What a rank is told at init (serializable; closures come from re-entry). */
export interface RankSetup {
  rank: number;
  world: number;
  batchSize: number;
  seed: number;
  augment: number;
  maxGradNorm?: number;
  /** LR factor of flodl's linear scaling (already computed for this world size). */
  lrFactor: number;
  /** Steps take this many times as long (simulated slow GPU; 1 = off). */
  slowdown: number;
  /**
   * Overlap a step's GPU work with recording the next (off for every rank when any rank
   * of the cluster simulates a slowdown, so their step times compare).
   */
  pipelined: boolean;
  /** Adapter preference for this rank's device. */
  powerPreference?: GPUPowerPreference;
  /** Rank-side callbacks the coordinator's builder has; the rank's must match. */
  callbacks: string[];
  /** The coordinator's dataset length, checked against the rank's. */
  datasetLen: number;
  /** Scheduler present (LR is set per step from the global step). */
  hasScheduler: boolean;
  /** The data plane's knobs; the rank sizes its tiers from them. */
  data: DataSetup;
  /**
   * A remote rank behind a relay: its reduce frames go to relay `relay`, its
   * snapshot answer says so (`Frame.via`) and carries no values. Unset: frames come here.
   */
  relay?: number;
}

/** What a rank needs to build its data plane (docs/TRAINER.md "Data plane"). */
export interface DataSetup {
  /** Device-resident sample pool (`vramPool`; off too when the rank's env says `FLODL_VRAM_POOL=off`). */
  vramPool: boolean;
  /** Share of the device budget the data plane may fill, [0.5, 0.99]. */
  vramMaxUsage: number;
  /** Declared device memory in bytes (`.cluster` rank `vramBytes`); absent: the adapter's `maxBufferSize`. */
  vramBytes?: number;
  /** Share of the host's available memory for the RAM tier, [0, 0.9], split across the host's ranks. */
  ramMaxUsage: number;
  /** Read-through RAM cache of raw samples across epochs (`sampleCache`). */
  sampleCache: boolean;
  /** Disk stage budget in bytes (`diskStage` GB); 0 = off. */
  diskStageBytes: number;
  /** The run's stage folder (a Deno directory or an OPFS folder), created and removed by the coordinator. */
  stageDir?: string;
  /** Declared host memory for this rank in bytes (`.cluster` rank `ramBytes`); absent: the host's available memory ÷ `localRanks`. */
  ramBytes?: number;
  /** Ranks sharing this host's memory (the RAM budget is divided among them). */
  localRanks: number;
}

/** A rank's answer to init. */
export interface RankHello {
  rank: number;
  /** Adapter description, for the dashboard. */
  adapter: string;
  layout: LayoutTable;
}

/** A contiguous range of the epoch's permutation: positions [offset, offset + size). */
export type PickRange = readonly [offset: number, size: number];

/** A unit of work: full batches drawn from these ranges of epoch `epoch`'s permutation. */
export interface ChunkPlan {
  /** The epoch the work belongs to (0-based); the same across the epoch's chunks. */
  epoch: number;
  /** Pick ranges of the epoch's permutation to train, in order. */
  ranges: PickRange[];
  /** Global step at dispatch (the scheduler's clock). */
  globalStep: number;
  /** Consensus version the rank holds. */
  version: number;
  /** Fire epochFn before the first batch (this rank holds the epoch-callback role). */
  epochFn?: boolean;
}

/** Per-batch progress a rank streams to the coordinator (liveness, live charts, ElChe timing). */
export interface BatchEvent {
  /** The rank that ran the batch. */
  rank: number;
  /** The epoch of the batch's plan. */
  epoch: number;
  /** Wall ms of this batch as delivered: from the previous step's results to this one's (compute + data + waits). */
  ms: number;
  /** Compute-only ms of the step (recording + GPU, without data waits; <= `ms`): ElChe's fallback scale. */
  computeMs: number;
  /** The batch's loss, read back from the device. */
  loss: number;
  /** The optimizer's learning rate when the batch was delivered. */
  lr: number;
  /** Rows in the batch. */
  samples: number;
}

/** What a rank reports when it finishes a chunk (or an epoch plan) of one epoch. */
export interface ChunkReport {
  rank: number;
  epoch: number;
  /** Mean loss over this chunk's batches. */
  avgLoss: number;
  batches: number;
  samples: number;
  /** Wall time of the chunk, ms. */
  epochMs: number;
  /** Wall time until the rank's share of the chunk was done (excludes barrier idle), ms. */
  shareCompleteMs: number;
  /** Σ train-step ms (diagnostic). */
  computeOnlyMs: number;
  /** Time spent waiting for data, ms (diagnostic). */
  dataStarveMs: number;
  /** `recordScalar` accumulators drained at chunk end. */
  scalars: Record<string, { sum: number; count: number }>;
  /**
   * The data plane during this chunk (data/plane_counters.ts: counters as deltas, gauges
   * as held at the end); absent from ranks that report none.
   */
  data?: Record<string, number>;
}

/**
 * How a frame's parameters travel: bf16 (two per u32 word) or f32. The coordinator's reduce
 * cycle decides it once per round (`wireDtype`, coordinator/reduce/reduce_cycle.ts) and the
 * `snapshot` request carries it; every other frame is f32.
 */
export type WireDtype = "bf16" | "f32";

/** Parameters (and buffers) of one rank, or a consensus. */
export interface Frame {
  rank: number;
  round: number;
  /** Optimizer steps since the last reduce (n_r). */
  batches: number;
  dtype: WireDtype;
  /** bf16: two values per u32 word (element 2i low half); f32: one per element. */
  params: Uint32Array<ArrayBuffer> | Float32Array<ArrayBuffer>;
  /** Buffers (BatchNorm running stats) always f32. */
  buffers: Float32Array<ArrayBuffer>;
  /**
   * Set by a rank behind a relay: its values went to relay `via`, which sums
   * them with its other members' (protocol/relay.ts); `params` and `buffers` are empty here.
   */
  via?: number;
}

/** Adopt a consensus: overwrite or EASGD-blend params, overwrite buffers. */
export interface Adoption {
  round: number;
  version: number;
  consensus: Frame;
  /** EASGD α (Async only); undefined = overwrite. */
  easgdAlpha?: number;
  /** Reset the inner optimizer (DiLoCo). */
  resetInner: boolean;
  globalStep: number;
  /** Buffers present (zero-mass buffer rounds skip them). */
  withBuffers: boolean;
}

/**
 * A rank's acknowledgement of an adoption (SyncAck), norms in f64 from f32
 * data. Declared once: the guards read it as it arrives.
 */
export interface SyncAck {
  rank: number;
  /** `||pre − post|| / ||post||`; 0 when ||post|| <= 1e-10. */
  divergence: number;
  /** ||pre||; optional in the spec (a report without every rank's pre-norm has none). Our ranks always send it. */
  preNorm?: number;
  /** ||post||, the consensus norm. */
  postNorm: number;
}

/**
 * One nccl-* reduce (NCCL realization) as the coordinator asks each rank of the
 * group for it: the coordinator decided the masses; the parameters travel through the
 * slab only (protocol/slab.ts).
 */
export interface CollectiveCall {
  round: number;
  /** The group's shared memory; `slot` is this rank's number in it (renumbered on rebuild). */
  slab: Slab;
  slot: number;
  /** The group's barrier generation at which this reduce starts (it takes this one and the next). */
  generation: number;
  /** Parameter mass n^γ per slot (0 for ranks that did not move). */
  masses: number[];
  /** Buffer mass per slot: 1 for a rank that moved, else 0. */
  movers: number[];
  /** This rank's steps the consensus folds in (n_r; they leave its window). */
  steps: number;
  /** The consensus version the adoption installs, and the global step after this reduce. */
  version: number;
  globalStep: number;
  resetInner: boolean;
  /** A barrier waits at most this long (the coordinator aborts a stalled group first). */
  waitMs: number;
  /**
   * The run's outer optimizer, which every rank steps on its own copy of the
   * consensus before adopting it (replicated deterministic state: no parameter crosses to or
   * from the coordinator). Absent: the ranks adopt the plain consensus.
   */
  outer?: OuterSpec;
}

/**
 * A built-in outer optimizer by name and hyperparameters, so a rank builds its own (the
 * builder's factory is a closure, which cannot cross to a worker).
 */
export interface OuterSpec {
  name: "OuterAvg" | "SlowMo" | "DiLoCo";
  lr?: number;
  momentum?: number;
  /** Momentum to start from (a resumed run's `<stem>.outer.fdl`); absent: zero. */
  state?: Float32Array;
}

/** A rank's answer to a {@link CollectiveCall}: counts only, never parameters. */
export interface CollectiveAck {
  rank: number;
  /** "aborted": the group was aborted at a barrier; nothing changed on the rank. */
  status: "done" | "aborted" | "timeout";
  /** The rank's own step count at the reduce (the coordinator's masses came from its n_r). */
  batches: number;
  /** The divergence of the previous adoption (one reduce late, as `adopt`); when done. */
  ack?: SyncAck;
}

/** Outcome of a rank-side eval. */
export interface EvalOutcome {
  epoch: number;
  value?: number;
  error?: string;
}

/** Rank → coordinator calls: the sink a rank reports through (its transport turns them into `RankEvent`s; over comlink, a proxy). */
export interface CoordinatorSink {
  batch(e: BatchEvent): void;
  heartbeat(rank: number): void;
  /**
   * The rank is about to compile GPU pipelines, which blocks its thread (heartbeats too) for
   * up to seconds on a software adapter: its silence until the next message is not a death
   * (up to the stall ceiling). `what` names the pipeline (`shader/entry`, with overrides).
   */
  compiling(rank: number, what?: string): void;
}

/**
 * Coordinator → rank calls. Every promise may reject with the rank's own error. A new call
 * also needs its row in `RANK_CALL_TABLE` (rank_calls.ts), which fails to compile without it.
 */
export interface RankApi {
  init(setup: RankSetup, sink: CoordinatorSink): Promise<RankHello>;
  /** Rank 0's initial parameters, f32, for the broadcast. */
  initialState(): Promise<Frame>;
  /** Overwrite parameters and buffers (the initial broadcast, or a resume). */
  load(frame: Frame): Promise<void>;
  /** Train the chunk's full batches; resolves when done (or stopped). */
  train(plan: ChunkPlan): Promise<ChunkReport>;
  /** Snapshot parameters for a reduce, between batches, packed in the round's `dtype` (the coordinator's choice). */
  snapshot(round: number, dtype: WireDtype): Promise<Frame>;
  /** Adopt a consensus, between batches. */
  adopt(a: Adoption): Promise<SyncAck>;
  /** Take part in an nccl-* reduce through the group's slab, between batches, and adopt its consensus. */
  collective(c: CollectiveCall): Promise<CollectiveAck>;
  /** Run the user's evalFn on the current model (eval mode around it). */
  evaluate(epoch: number): Promise<EvalOutcome>;
  /** Run the user's checkpointFn. */
  checkpoint(version: number): Promise<void>;
  /** Exact final state (f32), for join(). */
  finalState(): Promise<Frame>;
  /** Optimizer state, for bundles. */
  optimizerState(): Promise<{ tensors: Record<string, Float32Array<ArrayBuffer>>; shapes: Record<string, number[]>; scalars: Record<string, number> }>;
  /** GPU memory of the rank's device: live and pooled bytes, buffers created. */
  memory(): Promise<{ liveBytes: number; pooledBytes: number; totalBytes: number; created: number }>;
  /** Stop training and release the device. */
  stop(): Promise<void>;
}

/** The hello a rank posts as soon as its listener is attached. */
export interface Hello {
  flodlHello: true;
  rank: number;
  session: string;
}

/** Rank side: announce that the comlink listener is attached. */
export function postHello(scope: { postMessage(m: unknown): void }, rank: number, session: string): void {
  scope.postMessage({ flodlHello: true, rank, session } satisfies Hello);
}
