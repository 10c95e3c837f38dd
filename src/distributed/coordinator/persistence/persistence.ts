/**
 * Checkpoint bundles of a run: where they go (`savePath`), what a resume
 * seeds (`resumeFrom`), and a writer that never runs two writes of one stem at once.
 */
import { resolveStorage, type FileStore } from "../../../io/mod.ts";
import { type BundleParts, readBundleMeta, readBundleOuter, writeBundle } from "./bundle.ts";
import { type BundleMeta, checkResumeCompatible } from "./bundle_meta.ts";
import type { EpochCoverage } from "../schedule/chunk_pool.ts";
import type { ElCheState } from "../control/elche.ts";
import type { ResolvedRunConfig } from "../control/config.ts";

/** FileStore and stem of a bundle path such as `runs/mnist/ckpt` or `/tmp/ckpt`. */
export function bundleLocation(stem: string): { storage: FileStore; stem: string; where: string } {
  const { storage, path } = resolveStorage(stem);
  return { storage, stem: path, where: stem };
}

/** What `resumeFrom` seeds. */
export interface ResumeSeed {
  meta: BundleMeta;
  /** First epoch to dispatch. */
  startEpoch: number;
  globalStep: number;
  round: number;
  elche?: ElCheState;
  trendHistory?: number[];
  /** Epochs in progress at the save: only their uncovered ranges run. */
  coverage: Map<number, EpochCoverage>;
  /** The outer optimizer's momentum (`<stem>.outer.fdl`), flat in layout order; absent when none was saved. */
  outer?: Float32Array;
}

/**
 * Read `<stem>.meta.json` and check that this run may continue it.
 * @throws {Error} When the bundle is missing or invalid (naming the file), or its seed, batch
 *   size or world size disagrees with this run's (naming both values).
 */
export async function loadResume(stem: string, cfg: ResolvedRunConfig, worldSize: number): Promise<ResumeSeed> {
  const loc = bundleLocation(stem);
  let meta: BundleMeta;
  try {
    meta = await readBundleMeta(loc.storage, loc.stem);
  } catch (e) {
    throw new Error(`Trainer.run: resumeFrom("${stem}"): ${(e as Error).message}`, { cause: e });
  }
  checkResumeCompatible(meta, { seed: cfg.seed, batchSize: cfg.batchSize, worldSize, epochSplits: cfg.epochSplits, source: stem });
  const coverage = new Map<number, EpochCoverage>();
  for (const c of meta.coverage?.per_epoch ?? []) coverage.set(c.epoch, c);
  const startEpoch = coverage.size ? Math.min(...coverage.keys()) : meta.epoch;
  const { trend_history, ...elche } = meta.elche_state ?? {} as NonNullable<BundleMeta["elche_state"]>;
  let outer;
  try {
    outer = await readBundleOuter(loc.storage, loc.stem);
  } catch (e) {
    throw new Error(`Trainer.run: resumeFrom("${stem}"): ${(e as Error).message}`, { cause: e });
  }
  return {
    outer: outer?.flat,
    meta,
    startEpoch,
    globalStep: meta.global_step,
    round: meta.sync_round,
    elche: meta.elche_state ? elche as ElCheState : undefined,
    trendHistory: trend_history,
    coverage,
  };
}

/** Writes bundles of one stem one at a time; a newer request replaces a queued older one. */
export class BundleWriter {
  #loc: { storage: FileStore; stem: string; where: string };
  #busy: Promise<void> = Promise.resolve();
  #next?: () => Promise<BundleParts>;
  #running = false;
  /** Save reasons written so far (tests and the dashboard). */
  readonly written: string[] = [];

  constructor(stem: string) {
    this.#loc = bundleLocation(stem);
  }

  /** Where bundles go, as the user named it. */
  get where(): string {
    return this.#loc.where;
  }

  /** Queue a write; `parts` is built when the write starts (the latest state wins). */
  save(parts: () => Promise<BundleParts>): Promise<void> {
    this.#next = parts;
    if (!this.#running) this.#busy = this.#drain();
    return this.#busy;
  }

  async #drain(): Promise<void> {
    this.#running = true;
    try {
      while (this.#next) {
        const make = this.#next;
        this.#next = undefined;
        const parts = await make();
        await writeBundle(this.#loc.storage, this.#loc.stem, parts);
        this.written.push(parts.meta.save_reason);
      }
    } finally {
      this.#running = false;
    }
  }

  /** Wait for every queued write. */
  flush(): Promise<void> {
    return this.#busy;
  }
}

/** Resume seed and bundle writer of a run. */
export interface Persistence {
  resume?: ResumeSeed;
  writer?: BundleWriter;
}
