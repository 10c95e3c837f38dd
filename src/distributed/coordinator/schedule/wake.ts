/**
 * How the scheduler's run loop sleeps: until something happens (a batch, a completed
 * chunk, a lost rank: a poke), saying on stderr what it waits for while nothing does, and
 * giving up when a window makes no progress for the stall ceiling.
 */

/** With nothing happening for this long, the coordinator says what it is waiting for (stderr). */
export const WAIT_REPORT_MS = 60_000;

export class Wake {
  #wake?: () => void;
  /** Something happened since the loop last looked (a poke that found no waiter is not lost). */
  pending = false;

  /** Something happened: wake the loop, or tell its next look. */
  poke(): void {
    this.pending = true;
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  /**
   * Sleep until poked; every {@link WAIT_REPORT_MS} without one, warn `report(waitedMs)`.
   * When `stallInMs` passes first, call `onStall` (which says why the run stops) and wake.
   */
  async sleep(stallInMs: number, report: (waitedMs: number) => string, onStall: () => void): Promise<void> {
    const t0 = performance.now();
    let every: ReturnType<typeof setInterval> | undefined;
    let stall: ReturnType<typeof setTimeout> | undefined;
    try {
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        every = setInterval(() => console.warn(report(performance.now() - t0)), WAIT_REPORT_MS);
        stall = setTimeout(() => {
          onStall();
          this.poke();
        }, Math.max(0, stallInMs));
      });
    } finally {
      clearInterval(every);
      clearTimeout(stall);
    }
  }
}
