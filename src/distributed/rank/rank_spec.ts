/**
 * What a rank is made of: the user's closures (model, optimizer, step, datasets,
 * callbacks) that each rank worker rebuilds by re-entry. Apart from `rank_runtime.ts` so
 * that `chunk_run.ts`, which the runtime drives, can name them without an import cycle.
 */
import type { Parameter, Variable } from "../../autograd/mod.ts";
import type { AsyncBatchSource, BatchDataSet } from "../../data/mod.ts";
import type { Device } from "../../gpu/mod.ts";
import type { Module } from "../../nn/mod.ts";
import type { Optimizer, Scheduler } from "../../optim/mod.ts";
import type { Tensor } from "../../tensor/mod.ts";
import type { PickKey } from "./permutation.ts";

/** Builds the model on a rank's device (may be async: loading weights in a browser). */
export type ModelFactory<M extends Module> = (device: Device) => M | Promise<M>;
/** Builds the optimizer over the model's parameters. */
export type OptimFactory = (params: Parameter[]) => Optimizer | Promise<Optimizer>;
/** One training step's loss: forward the batch through the model. */
export type TrainFn<M extends Module> = (model: M, batch: Tensor[]) => Variable | Promise<Variable>;
/** Rank-side eval over a held-out dataset; returns the metric. */
export type EvalFn<M extends Module> = (model: M, dataset: BatchDataSet) => number | Promise<number>;
/** Per-batch delivery transform, keyed per pick; must keep the row count. */
export type TransformFn = (rows: Tensor[], keys: readonly PickKey[]) => Tensor[] | Promise<Tensor[]>;

/** What `epochFn` may touch: the rank's model, LR and counters. */
export interface RankWorker<M extends Module> {
  /** This rank's index in the run. */
  readonly rank: number;
  /** The rank's GPU device. */
  readonly device: Device;
  /** The rank's model replica. */
  readonly model: M;
  /** Optimizer steps this rank took. */
  localStep(): number;
  /** Consensus version the rank holds. */
  currentVersion(): number;
  /** The epoch being trained. */
  currentEpoch(): number;
  /** The optimizer's learning rate now. */
  currentLr(): number;
  /** Set the optimizer's learning rate (a `scheduler`, when set, overrides it at the next batch). */
  setLr(lr: number): void;
  /** Multiply the optimizer's learning rate by `factor`. */
  scaleLr(factor: number): void;
}

/** The rank-side closures of a builder (re-created in each rank by re-entry). */
export interface RankSpec<M extends Module> {
  modelFactory: ModelFactory<M>;
  optimFactory: OptimFactory;
  trainFn: TrainFn<M>;
  /** In memory (`getBatch`) or read by index asynchronously (`readBatch`: a pack file, HTTP Range). */
  dataset?: BatchDataSet | AsyncBatchSource;
  evalDataset?: BatchDataSet;
  evalFn?: EvalFn<M>;
  checkpointFn?: (version: number, model: M) => void | Promise<void>;
  epochFn?: (epoch: number, worker: RankWorker<M>) => void | Promise<void>;
  transform?: TransformFn;
  scheduler?: (worldSize: number) => Scheduler;
}

/** Names of the rank-side callbacks a spec carries (checked for agreement at init). */
export function rankCallbacks(spec: RankSpec<Module>): string[] {
  const keys = ["dataset", "evalDataset", "evalFn", "checkpointFn", "epochFn", "transform", "scheduler"] as const;
  return keys.filter((k) => spec[k] !== undefined);
}
