/**
 * A ledger of trained samples: how many times each sample of each epoch was trained, counted
 * from the coordinator's completed chunks (`observe(builder, { chunk: ledger.chunk })`), so a
 * test can show every sample trained exactly once per epoch across faults, joins and resumes.
 */
import { permutation } from "../../src/index.ts";
import { assert } from "./assert.ts";

/** The coverage part of a bundle's meta (`readBundleMeta`) that a ledger reads. */
export interface BundleCoverage {
  /** The epoch the bundle was taken in (0-based). */
  epoch: number;
  coverage?: { per_epoch: { epoch: number; uncovered_ranges: [number, number][] }[] };
}

/** Counts per epoch and sample, and the ranks that trained chunks of each epoch. */
export class Ledger {
  /** `counts[epoch][sample]`: times trained. */
  readonly counts: Uint8Array[];
  /** `ranks[epoch]`: the ranks whose chunks were counted in that epoch. */
  readonly ranks: Set<number>[];

  /**
   * @param samples The dataset's length.
   * @param epochs How many epochs the runs train.
   * @param seed The run's shuffle seed (the programs under test/fixtures use 42): a chunk is a
   *   range of positions in that epoch's `permutation(seed, epoch, samples)`.
   */
  constructor(readonly samples: number, epochs = 1, readonly seed = 42) {
    this.counts = Array.from({ length: epochs }, () => new Uint8Array(samples));
    this.ranks = Array.from({ length: epochs }, () => new Set());
  }

  /** Count a completed chunk: positions [offset, offset + size) of the epoch's order. The observer's `chunk`. */
  chunk = (epoch: number, rank: number, offset: number, size: number): void => {
    const perm = permutation(this.seed, epoch, this.samples);
    for (let i = offset; i < offset + size; i++) this.counts[epoch][perm[i]]++;
    this.ranks[epoch].add(rank);
  };

  /** Count every position of `epoch` outside the `uncovered` [offset, size] ranges (sorted), as rank 0. */
  covered(epoch: number, uncovered: readonly (readonly [number, number])[]): void {
    let at = 0;
    for (const [o, n] of uncovered) {
      if (o > at) this.chunk(epoch, 0, at, o - at);
      at = o + n;
    }
    if (at < this.samples) this.chunk(epoch, 0, at, this.samples - at);
  }

  /**
   * Count the work a bundle's consensus holds: whole epochs before the one it was taken in
   * (unless its coverage lists them), and what its coverage does not mark uncovered.
   */
  heldBy(meta: BundleCoverage): void {
    for (let e = 0; e < this.counts.length; e++) {
      const cov = meta.coverage?.per_epoch.find((c) => c.epoch === e);
      if (cov) this.covered(e, cov.uncovered_ranges);
      else if (e < meta.epoch) this.chunk(e, 0, 0, this.samples);
    }
  }

  /** Assert every sample of every epoch was counted exactly once; the message names the epoch and a sample. */
  exactlyOnce(label: string): void {
    this.counts.forEach((c, e) => {
      const bad = [...c.keys()].filter((i) => c[i] !== 1);
      assert(
        bad.length === 0,
        `${label}: epoch ${e + 1} of ${this.counts.length}: ${bad.length} samples not trained exactly once (e.g. #${bad[0]} ×${c[bad[0]]})`,
      );
    });
  }
}
