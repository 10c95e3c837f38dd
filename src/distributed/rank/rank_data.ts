/**
 * A rank's data plane, sized from the run's knobs: the device pool
 * (`vramPool`, `vramMaxUsage`), and, in front of a source read asynchronously (a pack file,
 * HTTP Range requests), the RAM cache (`sampleCache`, `ramMaxUsage`) and the disk stage
 * (`diskStage`, in the run's stage folder). An in-memory dataset gets the device pool only:
 * copying memory to memory buys nothing.
 *
 * Budgets:
 * - RAM: `ramMaxUsage` × the memory this rank may count on: a declared `ramBytes`, else
 *   the host's available memory (Deno: `Deno.systemMemoryInfo().available`; a browser:
 *   `navigator.deviceMemory` GB, coarse and capped by the browser) ÷ the host's ranks.
 * - VRAM: WebGPU has no free-memory query, so `vramMaxUsage` × a declared `vramBytes`, else
 *   × the adapter's `maxBufferSize` (the largest buffer the device accepts: a floor, not the
 *   card's memory), minus what the model and optimizer already hold; activations live in
 *   the remaining share. The pool is further capped by `maxStorageBufferBindingSize` per
 *   field and by the dataset.
 * - Disk: `diskStage` GB per rank in one file, `rank<k>.stage`; a stage that cannot be
 *   created warns and the plane runs without it (the source still has every sample).
 */
import {
  type AsyncBatchSource,
  type BatchDataSet,
  counterDelta,
  type DataCounters,
  DataPlane,
  isAsyncSource,
  planeTotals,
  type TierOptions,
} from "../../data/mod.ts";
import type { Device } from "../../gpu/mod.ts";
import { createStageFile } from "../../io/mod.ts";
import type { DataSetup, RankSetup } from "../protocol/messages.ts";

/** A training dataset: in memory (`getBatch`) or read asynchronously (`readBatch`). */
export type TrainSource = BatchDataSet | AsyncBatchSource;

/**
 * Host memory assumed when the runtime reports none (neither Deno's nor the browser's
 * query exists): 1 GiB, so the default RAM share is a modest 512 MiB.
 */
export const FALLBACK_HOST_BYTES = 2 ** 30;

/** Batches whose host reads start ahead of the one trained (prefetch; min useful 2). */
export const PREFETCH_BATCHES = 2;

/** Bytes of host memory available now (see the module comment). */
export function hostAvailableBytes(): number {
  const deno = (globalThis as { Deno?: { systemMemoryInfo?: () => { available: number } } }).Deno;
  try {
    const available = deno?.systemMemoryInfo?.().available;
    if (available !== undefined && Number.isFinite(available) && available > 0) return available;
  } catch {
    // no permission to read it: fall through
  }
  const gb = (globalThis.navigator as { deviceMemory?: number } | undefined)?.deviceMemory;
  return gb && gb > 0 ? gb * 2 ** 30 : FALLBACK_HOST_BYTES;
}

/** flodl's runtime kill switch: `FLODL_VRAM_POOL=off` in the rank's environment (Deno). */
export function vramPoolKilled(): boolean {
  const deno = (globalThis as { Deno?: { env?: { get(k: string): string | undefined } } }).Deno;
  try {
    const v = deno?.env?.get("FLODL_VRAM_POOL");
    return v !== undefined && ["off", "0", "false", "no"].includes(v.toLowerCase());
  } catch {
    return false; // no env permission: the switch cannot have been set for us
  }
}

/** The byte budgets of one rank's tiers. */
export interface PlaneBudgets {
  ramBytes: number;
  vramBytes: number;
  diskBytes: number;
}

/**
 * The budgets of {@link DataSetup} on this rank (see the module comment).
 * @param usedDeviceBytes Device bytes already held (model, optimizer state).
 */
export function planeBudgets(d: DataSetup, device: Device, usedDeviceBytes: number): PlaneBudgets {
  const host = d.ramBytes ?? hostAvailableBytes() / Math.max(1, d.localRanks);
  const deviceBytes = d.vramBytes ?? device.limits.maxBufferSize;
  return {
    ramBytes: d.sampleCache ? Math.floor(d.ramMaxUsage * host) : 0,
    vramBytes: d.vramPool && !vramPoolKilled() ? Math.max(0, Math.floor(d.vramMaxUsage * deviceBytes - usedDeviceBytes)) : 0,
    diskBytes: d.diskStageBytes,
  };
}

/** The stage file's name for a rank (the coordinator removes the whole run folder at the end). */
export function stageFileName(rank: number): string {
  return `rank${rank}.stage`;
}

/** Build the rank's plane over its dataset. */
export async function buildDataPlane(source: TrainSource, device: Device, setup: RankSetup): Promise<DataPlane> {
  const d = setup.data;
  const b = planeBudgets(d, device, device.memory().totalBytes);
  let tiers: TierOptions | undefined;
  if (isAsyncSource(source)) {
    tiers = { ramBytes: b.ramBytes, sampleCache: d.sampleCache };
    if (b.diskBytes > 0 && d.stageDir !== undefined) {
      try {
        tiers.disk = await createStageFile(d.stageDir, stageFileName(setup.rank));
        tiers.diskBytes = await withinQuota(b.diskBytes, setup.rank);
      } catch (e) {
        console.warn(`rank ${setup.rank}: diskStage off, ${(e as Error).message}; samples come from RAM and the source`);
      }
    }
  }
  return new DataPlane(source, device, { tiers, vramBytes: b.vramBytes, prefetch: PREFETCH_BATCHES });
}

/**
 * The disk budget a browser's storage quota allows (`navigator.storage.estimate()`: the
 * origin's quota minus its usage, shared by the host's ranks as they fill it); capped with a
 * warning naming the knob. Deno has no such quota: the budget stands (a full disk shows up
 * as a failed write, which stops staging with a warning).
 */
async function withinQuota(bytes: number, rank: number): Promise<number> {
  const storage = (globalThis.navigator as { storage?: { estimate?: () => Promise<{ quota?: number; usage?: number }> } } | undefined)
    ?.storage;
  if (!storage?.estimate) return bytes;
  try {
    const { quota, usage } = await storage.estimate();
    if (quota === undefined) return bytes;
    const free = Math.max(0, quota - (usage ?? 0));
    if (free >= bytes) return bytes;
    console.warn(`rank ${rank}: diskStage asks ${bytes} bytes, the origin's storage quota leaves ${free}; staging up to that`);
    return free;
  } catch {
    return bytes;
  }
}

/** Reports of a plane: each call gives the counters since the previous call and the gauges now. */
export function planeReporter(plane: DataPlane): () => DataCounters {
  let before: DataCounters = {};
  return () => {
    const now = planeTotals(plane.stats());
    const out = counterDelta(now, before);
    before = now;
    return out;
  };
}
