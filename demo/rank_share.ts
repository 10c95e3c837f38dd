/**
 * Each rank's share of the batches and its speed, with a line saying why the shares differ:
 * a run without a slow rank can still split very unevenly (one rank 8%, the other 92%), and
 * the page said nothing about it. ElChe (cpu-cadence) sizes each rank's window of batches to
 * its measured speed, and the chunk pool lets a rank that is done take more: a rank that is
 * slower per batch (for any reason) trains fewer. The ranks of this page share one GPU, a
 * software adapter's being the CPU cores, with each other and with the page's charts and 3-D
 * view, and the browser does not split it evenly; a rank still compiling its pipelines trains
 * nothing meanwhile. Runs on the page only (no DOM here: demo/main.ts shows the lines).
 */

/** Batches of a rank that its speed is measured over (the latest ones). */
const RECENT = 20;
/** A ratio of shares above this reads as uneven. */
const UNEVEN = 1.25;

/** What the page shows: each rank's share and speed, and why. */
export interface ShareLines {
  shares: string;
  why: string;
}

/** What a batch event carries that the shares need. */
export interface ShareBatch {
  rank: number;
  /** Wall ms of the batch (compute, data and waits). */
  ms: number;
  /** The step's compute ms (recording and GPU). */
  computeMs: number;
}

export class RankShares {
  readonly #batches: number[];
  readonly #recent: { ms: number; computeMs: number }[][];
  /** Wall ms of each rank's first batch: it compiles the GPU pipelines (seconds on a software adapter). */
  readonly #first: (number | undefined)[];
  readonly #slow?: { rank: number; factor: number };

  /** `slow`: the rank the controls slow down on purpose, and by how much. */
  constructor(ranks: number, slow?: { rank: number; factor: number }) {
    this.#batches = new Array(ranks).fill(0);
    this.#recent = Array.from({ length: ranks }, () => []);
    this.#first = new Array(ranks).fill(undefined);
    this.#slow = slow;
  }

  batch(e: ShareBatch): void {
    this.#batches[e.rank]++;
    if (this.#first[e.rank] === undefined) {
      this.#first[e.rank] = e.ms; // the compile: not the rank's speed
      return;
    }
    const r = this.#recent[e.rank];
    r.push({ ms: e.ms, computeMs: e.computeMs });
    if (r.length > RECENT) r.shift();
  }

  /** Mean wall and compute ms per batch of `rank`'s latest batches (after its first, which compiles). */
  speed(rank: number): { ms: number; computeMs: number } | undefined {
    const r = this.#recent[rank];
    if (!r.length) return undefined;
    return {
      ms: r.reduce((a, b) => a + b.ms, 0) / r.length,
      computeMs: r.reduce((a, b) => a + b.computeMs, 0) / r.length,
    };
  }

  /** The lines, or undefined before the first batch (and with one rank: nothing is shared). */
  lines(): ShareLines | undefined {
    const n = this.#batches.length, total = this.#batches.reduce((a, b) => a + b, 0);
    if (n < 2 || total === 0) return undefined;
    const share = this.#batches.map((b) => b / total);
    const shares = "Batches per rank: " + this.#batches.map((b, r) => {
      const s = this.speed(r);
      return `rank ${r} ${(share[r] * 100).toFixed(0)}% (${b}` +
        (s ? `, ${s.ms.toFixed(0)} ms each, ${s.computeMs.toFixed(0)} computing)` : ")");
    }).join(", ");
    return { shares, why: this.#why(share) };
  }

  #why(share: number[]): string {
    const idle = share.flatMap((s, r) => (s === 0 ? [r] : []));
    if (idle.length) {
      return `${list(idle)} ${
        idle.length > 1 ? "have" : "has"
      } not finished a batch yet: still compiling GPU pipelines ` +
        `(a minute or more on a software adapter), while the others train.`;
    }
    // The rank with the least share, and the one with the most among the others (equal shares: two ranks still).
    const lo = share.indexOf(Math.min(...share));
    const hi = share.reduce((best, v, r) => (r !== lo && (best === lo || v > share[best]) ? r : best), lo);
    const [slow, fast] = [this.speed(lo), this.speed(hi)];
    if (!slow || !fast) {
      const r = slow ? hi : lo;
      return `Rank ${r} has finished only its first batch, which compiles its GPU pipelines ` +
        `(${secs(this.#first[r]!)}); its speed shows from its next batches.`;
    }
    const ratio = slow.ms / fast.ms;
    const speeds = `rank ${lo} takes ${slow.ms.toFixed(0)} ms a batch, rank ${hi} ${fast.ms.toFixed(0)} ms`;
    if (this.#slow && this.#slow.rank === lo) {
      return `Rank ${lo} is slowed ×${this.#slow.factor} on purpose (Simulated slow rank): ${speeds}. ElChe gives each ` +
        `rank a window of batches in proportion to its speed, so rank ${lo} trains fewer.`;
    }
    if (share[hi] / share[lo] < UNEVEN) {
      return `The ranks run at about the same speed (${speeds}), so ElChe gives them about the same windows.`;
    }
    const [firstLo, firstHi] = [this.#first[lo]!, this.#first[hi]!];
    if (ratio < UNEVEN && firstLo > firstHi) {
      return `Rank ${lo} started later: its first batch, which compiles its GPU pipelines, took ` +
        `${secs(firstLo)} against rank ${hi}'s ${
          secs(firstHi)
        }, and rank ${hi} trained meanwhile (a rank that is done ` +
        `takes more from the pool). They run at about the same speed now (${speeds}).`;
    }
    if (ratio < UNEVEN) {
      return `The ranks run at about the same speed now (${speeds}); rank ${hi} took more batches from the pool ` +
        `while rank ${lo} waited.`;
    }
    return `Uneven without a slow rank: ${speeds} (${ratio.toFixed(1)}× longer). ElChe sizes each rank's window of ` +
      `batches to its measured speed and a rank that is done takes more from the pool, so the slower one trains ` +
      `fewer. The ranks share this machine's GPU (a software adapter runs on the CPU cores) with each other and with ` +
      `this page's charts and 3-D view, and the browser does not split it evenly.`;
  }
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** "Rank 1" or "Ranks 0, 2". */
function list(ranks: number[]): string {
  return `${ranks.length > 1 ? "Ranks" : "Rank"} ${ranks.join(", ")}`;
}
