/**
 * The coordinator's per-epoch ledger: chunk reports folded per epoch, and the
 * averaging plane's counters (reduces, wire bytes, ms), closed into one
 * `RunEpochMetrics` when the epoch ends.
 */
import type { ChunkReport } from "../../protocol/messages.ts";
import { EpochAggregator, type RunEpochMetrics } from "./metrics.ts";

interface ReduceTotals {
  reduces: number;
  bytes: number;
  ms: number;
}

export class EpochReports {
  #aggs = new Map<number, EpochAggregator>();
  #stats = new Map<number, ReduceTotals>();

  constructor(readonly world: number) {}

  /** Start the ledger of an epoch (its first chunk is being planned). */
  open(epoch: number): void {
    this.#aggs.set(epoch, new EpochAggregator(epoch, this.world));
    this.#stats.set(epoch, { reduces: 0, bytes: 0, ms: 0 });
  }

  /** A chunk of `epoch` completed. */
  chunk(epoch: number, report: ChunkReport): void {
    this.#aggs.get(epoch)!.add(report);
  }

  /** `samples` `rank` trained in `epoch` were lost with it before a reduce folded them. */
  discard(epoch: number, rank: number, samples: number): void {
    this.#aggs.get(epoch)?.discard(rank, samples);
  }

  /** A reduce completed while `epoch` was the frontier. */
  reduced(epoch: number, bytes: number, ms: number): void {
    const st = this.#stats.get(epoch) ?? { reduces: 0, bytes: 0, ms: 0 };
    st.reduces++;
    st.bytes += bytes;
    st.ms += ms;
    this.#stats.set(epoch, st);
  }

  /** The epoch's metrics, with ElChe's anchor and batch counts at its end. */
  close(epoch: number, anchor: number, batchCounts: number[]): RunEpochMetrics {
    const st = this.#stats.get(epoch)!;
    return {
      ...this.#aggs.get(epoch)!.finish(),
      reduces: st.reduces,
      wireBytesPerReduce: st.reduces ? st.bytes / st.reduces : 0,
      reduceMs: st.reduces ? st.ms / st.reduces : 0,
      anchor,
      batchCounts,
    };
  }
}
