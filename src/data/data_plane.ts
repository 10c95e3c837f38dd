/**
 * One rank's data plane: batches by sample index, through the tiers that are
 * on — the device pool (`vramPool`), then RAM and disk (`sampleCache`, `ramMaxUsage`,
 * `diskStage`) in front of the source (an in-memory dataset, or a file read by index) —
 * with the next batches' host reads started ahead (prefetch), so a slow source overlaps
 * the GPU's step. Every tier serves the same bytes (purity), so which one
 * served a batch never changes what trains.
 */
import type { Device } from "../gpu/mod.ts";
import { type Tensor } from "../tensor/mod.ts";
import { type BatchDataSet, type FieldSpec, type HostBatch, toDevice } from "./dataset.ts";
import type { AsyncBatchSource } from "./pack_source.ts";
import { SampleTiers, type TierOptions, type TierStats } from "./sample_tiers.ts";
import { VramPool, vramCapacity, type VramStats } from "./vram_pool.ts";

/** Options of {@link DataPlane}: which tiers are on and how far reads run ahead. */
export interface DataPlaneOptions {
  /** Host tiers (omit for none: an in-memory dataset needs no cache in front of it). */
  tiers?: TierOptions;
  /** Device pool budget in bytes (omit or 0: off). */
  vramBytes?: number;
  /** Batches whose host reads run ahead of the one being trained (default 2). */
  prefetch?: number;
}

/** What the plane did (the record stream and the dashboard show it). */
export interface DataPlaneStats {
  /** The host tiers' counters; absent when no tiers are on. */
  tiers?: TierStats;
  /** The device pool's counters; absent when the pool is off. */
  vram?: VramStats;
  /** Batches served, and ms the trainer waited for host data in total. */
  batches: number;
  /** Ms `batch()` waited for host reads (and their upload), in total. */
  waitMs: number;
}

/** What a {@link DataPlane} reads: a dataset in memory or a source read asynchronously. */
export type Source = AsyncBatchSource | BatchDataSet;

/** True for a source read asynchronously (a file, the network): the host tiers pay for themselves in front of it. */
export function isAsyncSource(s: Source): s is AsyncBatchSource {
  return typeof (s as AsyncBatchSource).readBatch === "function";
}

/**
 * One rank's data plane: `batch(indices)` gives the batch's tensors on the device, served
 * by the device pool, the host tiers or the source, with the next batches' reads started ahead.
 * @throws {RangeError} From the constructor: a negative prefetch depth or budget, naming the knob.
 */
export class DataPlane {
  /** The source's fields, in order (one tensor per field in each batch). */
  readonly fields: readonly FieldSpec[];
  readonly #device: Device;
  readonly #read: (indices: readonly number[]) => Promise<HostBatch>;
  readonly #tiers?: SampleTiers;
  readonly #vram?: VramPool;
  readonly #prefetch: number;
  /** Host reads started ahead, by the batch's index list: the rows read (the batch, or what the pool lacks). */
  readonly #ahead = new Map<readonly number[], { rows: readonly number[]; host: Promise<HostBatch> }>();
  #batches = 0;
  #waitMs = 0;

  /**
   * A plane over `source` whose batches land on `device`; tiers and pool as `options` set.
   * @throws {RangeError} For a negative prefetch depth or budget, naming the knob.
   */
  constructor(source: Source, device: Device, options: DataPlaneOptions = {}) {
    const prefetch = options.prefetch ?? 2;
    if (!Number.isInteger(prefetch) || prefetch < 0) throw new RangeError(`prefetch: depth must be an integer ≥ 0, got ${prefetch}`);
    this.fields = source.fields;
    this.#device = device;
    this.#prefetch = prefetch;
    const base: AsyncBatchSource = isAsyncSource(source)
      ? source
      : { fields: source.fields, len: () => source.len(), readBatch: (i) => Promise.resolve(source.getBatch(i)) };
    if (options.tiers) this.#tiers = new SampleTiers(base, options.tiers);
    const read = this.#tiers ?? base;
    this.#read = (i) => read.readBatch(i);
    const vram = options.vramBytes ?? 0;
    if (vram !== 0) {
      this.#vram = new VramPool(source.fields, device, vramCapacity(source.fields, device, vram, source.len()));
    }
  }

  /**
   * The batch of `indices` on the device. When the pool holds every sample, it is gathered
   * there; when the pool has room for the samples it lacks, only those are read through the
   * host tiers, written into the pool, and the batch gathered; else the batch is read and
   * uploaded. `upcoming` are the next batches in order: their host reads start now (up to
   * the prefetch depth); pass the same arrays later as `indices` (reads ahead are keyed by them).
   */
  async batch(indices: readonly number[], upcoming: readonly (readonly number[])[] = []): Promise<Tensor[]> {
    this.#batches++;
    const vram = this.#vram;
    const gathered = vram?.gather(indices);
    this.#startAhead(upcoming);
    const ahead = this.#ahead.get(indices);
    this.#ahead.delete(indices);
    if (gathered) return gathered;
    const t = performance.now();
    const { rows, host } = ahead ?? this.#plan(indices);
    const got = await host;
    vram?.admit(rows, got);
    // NOTE: the pool's writes are queued before the gather's submit, so it reads them.
    const pooled = vram?.gather(indices, false);
    // Rows read for the pool that no longer fit it (reads ahead planned on room since taken): read the batch.
    const batch = pooled ?? toDevice(rows === indices ? got : await this.#read(indices), this.#device);
    this.#waitMs += performance.now() - t;
    return batch;
  }

  /** What to read for a batch: the samples the pool lacks when it has room for them all, else the batch. */
  #plan(indices: readonly number[]): { rows: readonly number[]; host: Promise<HostBatch> } {
    const lacking = this.#vram?.lacking(indices);
    const rows = lacking && lacking.length <= this.#vram!.room ? lacking : indices;
    return { rows, host: this.#read(rows) };
  }

  #startAhead(upcoming: readonly (readonly number[])[]): void {
    for (const next of upcoming.slice(0, this.#prefetch)) {
      if (this.#ahead.has(next) || this.#vram?.holds(next)) continue;
      const plan = this.#plan(next);
      plan.host.catch(() => {}); // surfaced when the batch is asked for
      this.#ahead.set(next, plan);
    }
  }

  /** Forget reads started ahead (a chunk ended before using them); their samples stay in the tiers. */
  clearAhead(): void {
    this.#ahead.clear();
  }

  /** Counters so far: batches served, wait ms and, when on, the tiers' and the pool's. */
  stats(): DataPlaneStats {
    return { tiers: this.#tiers?.stats(), vram: this.#vram?.stats(), batches: this.#batches, waitMs: this.#waitMs };
  }

  /** Free the device pool and delete the disk stage. */
  async close(): Promise<void> {
    this.#ahead.clear();
    this.#vram?.dispose();
    await this.#tiers?.close();
  }
}
