/**
 * The one-rank twin of a two-rank run, for tests that show data-parallel training equals
 * training on the union of the ranks' batches (test/gpu/distributed/trainer_test.ts, nccl_test.ts).
 */
import { ArrayDataSet, type BatchDataSet, type HostArray, permutation } from "../../src/index.ts";

/**
 * A dataset whose batch k of `2 * batch` samples, trained by one rank, is the union of the
 * two ranks' batch k of `batch` samples when two ranks train `two` in one epoch split in
 * halves (`partitionRatios([0.5, 0.5])`): rank 0 takes positions [0, P/2) of the epoch's
 * order `permutation(seed, 0, P)`, rank 1 positions [P/2, P). Rank 0's samples come first in
 * each batch. The result is shuffled by the same permutation, so the one-rank run must use
 * the same seed and an epoch of one pass.
 * @param two The dataset the two ranks train; `two.len()` is P.
 * @param batch The per-rank batch size.
 * @param seed The run's shuffle seed (the programs under test/fixtures use 42).
 * @throws {RangeError} When P is not a multiple of `2 * batch` (a partial batch would break the pairing).
 */
export function interleavedDataset(two: BatchDataSet, batch: number, seed = 42): ArrayDataSet {
  const P = two.len();
  if (P % (2 * batch) !== 0) {
    throw new RangeError(`interleavedDataset: ${P} samples are not a whole number of batches of 2 × ${batch}`);
  }
  const perm = permutation(seed, 0, P);
  const all = two.getBatch([...Array(P).keys()]);
  return new ArrayDataSet(all.map((f) => {
    const per = f.data.length / P, data: HostArray = f.data.slice();
    for (let q = 0; q < P; q++) {
      const k = Math.floor(q / (2 * batch)), i = q % (2 * batch);
      const src = i < batch ? perm[k * batch + i] : perm[P / 2 + k * batch + (i - batch)];
      data.set(f.data.subarray(src * per, (src + 1) * per), perm[q] * per);
    }
    return { data, shape: f.shape };
  }));
}
