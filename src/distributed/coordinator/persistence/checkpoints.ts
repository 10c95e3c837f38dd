/**
 * The coordinator's checkpoint bundles: when one is due after a reduce,
 * what it holds (the consensus of the last reduce, the coverage at that reduce's trigger,
 * ElChe's state) and writing it. The coordinator hands over a {@link BundleSource}; it
 * keeps no bundle logic of its own.
 */
import { describeError } from "../../protocol/errors.ts";
import type { LayoutTable } from "../../protocol/messages.ts";
import type { BundleParts } from "./bundle.ts";
import type { BundleElCheState } from "./bundle_meta.ts";
import type { EpochCoverage } from "../schedule/chunk_pool.ts";
import type { ResolvedRunConfig } from "../control/config.ts";
import type { SaveReason } from "../control/max_failure.ts";
import type { RunObserver } from "../report/observer.ts";
import type { BundleWriter } from "./persistence.ts";

/** Everything a bundle is made of, as the coordinator holds it at save time. */
export interface BundleSource {
  consensus: Float32Array;
  buffers: Float32Array;
  layout: LayoutTable;
  /** Fetches one rank's optimizer state (undefined: no rank could give it). */
  optim: () => Promise<BundleParts["optim"]>;
  outer: BundleParts["outer"];
  /** ElChe's state with the trend ring; undefined under Sync (no ElChe state kept). */
  elche?: BundleElCheState;
  /** Epoch of the coverage snapshot (the frontier at the consensus's trigger). */
  epoch: number;
  globalStep: number;
  round: number;
  world: number;
  coverage: EpochCoverage[];
}

/** Everything a bundle holds, from the current consensus. */
export async function bundleParts(src: BundleSource, reason: SaveReason, cfg: ResolvedRunConfig): Promise<BundleParts> {
  const slice = (e: LayoutTable["params"][number], a: Float32Array) => ({ name: e.name, shape: e.shape, data: a.slice(e.offset, e.offset + e.numel) });
  return {
    model: { params: src.layout.params.map((e) => slice(e, src.consensus)), buffers: src.layout.buffers.map((e) => slice(e, src.buffers)) },
    optim: await src.optim(),
    outer: src.outer,
    meta: {
      epoch: src.epoch,
      global_step: src.globalStep,
      sync_round: src.round,
      world_size_at_save: src.world,
      save_reason: reason,
      ...(src.elche ? { elche_state: src.elche } : {}),
      coverage: { seed: cfg.seed, epoch_splits: cfg.epochSplits, batch_size: cfg.batchSize, per_epoch: src.coverage },
      seed: cfg.seed,
      batch_size: cfg.batchSize,
    },
  };
}

/** When bundles are due and writing them (nothing when the run has no `savePath`). */
export class Checkpoints {
  #lastMultiple = 0;
  #atEpochDone = false;

  constructor(readonly writer: BundleWriter | undefined, readonly cfg: ResolvedRunConfig, resumeStartEpoch?: number) {
    if (resumeStartEpoch !== undefined) {
      this.#lastMultiple = cfg.checkpointEvery ? Math.floor(resumeStartEpoch / cfg.checkpointEvery) : 0;
      this.#atEpochDone = cfg.checkpointAtEpoch !== undefined && resumeStartEpoch >= cfg.checkpointAtEpoch;
    }
  }

  /** Write a bundle now. */
  async save(reason: SaveReason, source: () => BundleSource, observer: RunObserver): Promise<void> {
    await this.writer!.save(() => bundleParts(source(), reason, this.cfg));
    observer.saved?.(reason, this.writer!.where);
  }

  /**
   * Checkpoint triggers after a reduce: every n epochs crossed, once at an epoch.
   * @param frontier The first epoch not yet closed.
   * @param reached The furthest epoch any chunk was sent for.
   */
  async afterReduce(frontier: number, reached: number, source: () => BundleSource, observer: RunObserver): Promise<void> {
    if (!this.writer) return;
    const every = this.cfg.checkpointEvery;
    if (every && Math.floor(frontier / every) > this.#lastMultiple) {
      this.#lastMultiple = Math.floor(frontier / every);
      await this.save("checkpoint", source, observer);
    } else if (this.cfg.checkpointAtEpoch !== undefined && !this.#atEpochDone && reached >= this.cfg.checkpointAtEpoch) {
      this.#atEpochDone = true;
      await this.save("checkpoint", source, observer);
    }
  }

  /**
   * An unrecoverable stop: write the bundle with the reason when there is a consensus to
   * write, and say where it is (or why there is none) for the error message.
   */
  async onAbort(reason: SaveReason, source: (() => BundleSource) | null, observer: RunObserver): Promise<string> {
    if (!this.writer) return "; no bundle was written (set .savePath() to keep one)";
    if (!source) return "";
    try {
      await this.save(reason, source, observer);
      return `; the checkpoint bundle is at "${this.writer.where}" (continue with .resumeFrom("${this.writer.where}"))`;
    } catch (e) {
      return `; writing the checkpoint bundle to "${this.writer.where}" failed: ${describeError(e)}`;
    }
  }
}
