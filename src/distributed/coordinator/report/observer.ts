/**
 * What the coordinator reports, and to whom: the handle (`RunSink`: epoch metrics, eval
 * results), the run's monitor (`RunEvents`) and live observers (`RunObserver`). Declared
 * here, below `run/`, which implements them: the coordinator imports no run/ module.
 */
import type { Verdict } from "../control/guards.ts";
import type { RunEpochMetrics } from "./metrics.ts";
import type { BatchEvent, LayoutTable } from "../../protocol/messages.ts";

/** The trained consensus: parameters and buffers by name, f32 (flodl's `TrainedState`). */
export interface TrainedState {
  /** Each parameter by its dotted name (`"fc1.weight"`), in layout order: shape and values. */
  params: Map<string, { shape: number[]; data: Float32Array<ArrayBuffer> }>;
  /** Each buffer (BatchNorm running stats) by its dotted name, in layout order. */
  buffers: Map<string, { shape: number[]; data: Float32Array<ArrayBuffer> }>;
}

/** An eval result as it arrived from the eval-role rank. */
export interface EvalRecord {
  /** Epochs done when the eval ran: the consensus after epoch `epoch - 1` (the final eval: `numEpochs`). */
  epoch: number;
  /** The metric `evalFn` returned; absent when it failed. */
  value?: number;
  /** Why `evalFn` failed (`Name: message`); absent when it succeeded. */
  error?: string;
  /** The rank that ran `evalFn`. */
  rank: number;
}

/** What the coordinator tells the handle as the run goes. */
export interface RunSink {
  /** An epoch closed: its aggregated metrics. */
  metrics(m: RunEpochMetrics): void;
  /** An eval result arrived (a failed `evalFn` included). */
  evaluated(e: EvalRecord): void;
}

/** What the coordinator reports about each reduce (live views, benchmarks, the monitor). */
export interface ReduceEvent {
  /** The reduce's round number, from 1 (zero-mass rounds counted; a resumed run continues the saved count). */
  round: number;
  /** The epoch the reduce is counted in: the first epoch not yet closed (at most the last). */
  epoch: number;
  /** Steps per rank folded into this consensus (n_r). */
  steps: number[];
  /** Wall ms from trigger to the last adoption. */
  ms: number;
  /** ms spent averaging on the CPU. */
  averageMs: number;
  /** Bytes of rank frames received, and of consensus frames sent. */
  bytesUp: number;
  /** Bytes of consensus frames sent (0 for a zero-mass round). */
  bytesDown: number;
  /** ElChe's anchor A after the reduce. */
  anchor: number;
  /** Each rank's batch quota c[r] for the next window (0 for a dead rank). */
  counts: number[];
  /** Each rank's divergence from the consensus (0 for a rank without an ack). */
  divergence: number[];
  /** The guard's verdict on this reduce (always "stable" for a zero-mass round). */
  verdict: Verdict["kind"];
  /** No rank had a step to give: no consensus was made and the version did not move. */
  zeroMass: boolean;
}

/** Where a rank runs, for the monitor and the join/leave events. */
export interface RankPlace {
  /** Host name ("" when the rank did not say; worker ranks run on the coordinator's host). */
  host: string;
  /** Adapter description. */
  adapter: string;
  /** How the coordinator reaches it: a Web Worker of its own process, a remote process or tab over NATS, or this thread. */
  transport: "worker" | "remote" | "local";
}

/** Coordinator-side observers beyond the handle (live dashboards, the monitor). */
export interface RunObserver {
  /** Each batch a rank ran, as the rank streamed it. */
  batch?(e: BatchEvent): void;
  /** Each reduce, once ElChe and the guard have taken it in. */
  reduce?(e: ReduceEvent): void;
  /** Each rank's parameters before averaging and the consensus, f32 (only when `wantsFrames`). */
  frames?(round: number, ranks: (Float32Array | null)[], consensus: Float32Array): void;
  /**
   * Picks [offset, offset + size) of epoch's permutation that `rank` trained reached the
   * consensus (a reduce folded them): the coverage ledger. A chunk may arrive in pieces (an
   * async snapshot mid-chunk); work a lost rank took with it never arrives here.
   */
  chunk?(epoch: number, rank: number, offset: number, size: number): void;
  /** A rank was lost and the run continues without it. */
  rankLost?(rank: number, reason: string): void;
  /**
   * A rank was admitted at an epoch boundary (elastic membership): it trains
   * from `epoch` (0-based) on, from the consensus parameters.
   */
  rankJoined?(rank: number, epoch: number, place: RankPlace): void;
  /** A spare slot's rank is ready (join checked, init done) and waits for the next epoch boundary. */
  rankWaiting?(rank: number, place: RankPlace): void;
  /** A checkpoint bundle was written (after its files are in place). */
  saved?(reason: string, stem: string): void;
  /** Ask for {@link RunObserver.frames} (a copy of every rank's parameters per reduce); default false. */
  wantsFrames?: boolean;
}

/** Where the coordinator reports what happens. */
export interface RunEvents {
  /** Each batch a rank ran. */
  batch(e: BatchEvent): void;
  /** The first work of `epoch` was handed to a rank. */
  epochStart(epoch: number): void;
  /** An epoch closed, with its metrics. */
  epochEnd(m: RunEpochMetrics): void;
  /** Each reduce, with what the monitor needs besides the event. */
  reduce(e: ReduceEvent, extra: ReduceExtra): void;
  /** A successful eval: epochs done and the metric. */
  evaluated(epoch: number, value: number): void;
  /** A rank was lost during `epoch` (the first not yet closed) and the run goes on; `reason` is the error's message. */
  rankLost(rank: number, epoch: number, reason: string): void;
  /** A rank was admitted at the boundary before `epoch` (elastic membership). */
  rankJoined(rank: number, epoch: number, place: RankPlace): void;
  /** Write the outputs (record log flush, dashboard file). */
  close(): Promise<void>;
}

/** What the coordinator adds to a reduce event for the monitor. */
export interface ReduceExtra {
  /** Batches per epoch, all ranks together (the sub-epoch report clock). */
  stepsPerEpoch: number;
  /** ElChe's anchor A before this reduce's verdict was applied. */
  anchorBefore: number;
  /** The guard's name/value pairs after this reduce (`ConvergenceGuard.telemetry()`). */
  telemetry: [string, number][];
  /** Batches folded into the consensus so far, all ranks together. */
  globalStep: number;
}

/** A consensus (flat f32 parameters and buffers in layout order) as a {@link TrainedState}, by name. */
export function trainedState(layout: LayoutTable, params: Float32Array, buffers: Float32Array): TrainedState {
  const slice = (e: LayoutTable["params"][number], a: Float32Array) => ({ shape: e.shape, data: a.slice(e.offset, e.offset + e.numel) });
  return {
    params: new Map(layout.params.map((e) => [e.name, slice(e, params)])),
    buffers: new Map(layout.buffers.map((e) => [e.name, slice(e, buffers)])),
  };
}
