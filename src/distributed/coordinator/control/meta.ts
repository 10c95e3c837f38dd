/**
 * LrEventMeta, the LR-aware meta-controller above ElChe: it watches the LR
 * trajectory and the guard's verdicts and asks ElChe to nudge the anchor down on an LR
 * cliff or a sustained divergence streak. Recovery upward is left to ElChe's growth.
 */

import type { Phase } from "./elche.ts";
import type { Verdict } from "./guards.ts";

/** Samples kept per window. */
export const META_LR_WINDOW = 3;
export const META_ANCHOR_WINDOW = 5;
export const META_VERDICT_WINDOW = 5;
/** A relative LR drop larger than this between two cycles is a cliff (a MultiStep decay, not cosine). */
export const LR_CLIFF_DROP = 0.3;
/** Base factor on an LR cliff. */
export const LR_CLIFF_BASE = 0.5;
/** Consecutive non-Stable verdicts that fire the convergence watcher, and its base factor, per phase. */
export const CONVERGENCE_RULE: Readonly<Record<Exclude<Phase, "probe">, { k: number; base: number }>> = {
  warmup: { k: 5, base: 0.3 },
  stable: { k: 3, base: 0.5 },
  mature: { k: 2, base: 0.7 },
};
/** Bounds of any nudge factor the meta-controller asks for. */
export const META_FACTOR_MIN = 0.1;
export const META_FACTOR_MAX = 0.95;

const clampFactor = (f: number) => Math.min(META_FACTOR_MAX, Math.max(META_FACTOR_MIN, f));

/**
 * Observe one reduce cycle; `observe` returns the factor to `ElChe.nudge` with, or null.
 * @example
 * ```ts
 * import { LrEventMeta } from "./meta.ts";
 * const meta = new LrEventMeta();
 * meta.observe(0.1, 10, { kind: "stable" }, "stable"); // null
 * meta.observe(0.01, 10, { kind: "stable" }, "stable"); // 0.5: a 90% LR drop
 * ```
 */
export class LrEventMeta {
  #lr: number[] = [];
  #anchors: number[] = [];
  #verdicts: Verdict["kind"][] = [];

  /**
   * @param lr The latest LR the ranks reported (undefined before the first LrUpdate).
   * @param anchor ElChe's A at this cycle.
   * @param verdict The guard's verdict for this cycle.
   * @param phase ElChe's phase; the meta-controller records nothing and stays silent in Probe.
   * @returns The nudge factor in [0.1, 0.95], or null.
   */
  observe(lr: number | undefined, anchor: number, verdict: Verdict, phase: Phase): number | null {
    if (phase === "probe") return null;
    if (lr !== undefined && Number.isFinite(lr)) push(this.#lr, lr, META_LR_WINDOW);
    push(this.#anchors, anchor, META_ANCHOR_WINDOW);
    push(this.#verdicts, verdict.kind, META_VERDICT_WINDOW);
    const trend = this.trend();
    const eff = (base: number) => clampFactor(base - (1 - base) * trend);
    let f1: number | null = null, f2: number | null = null;
    const n = this.#lr.length;
    if (n >= 2) {
      const prev = this.#lr[n - 2], now = this.#lr[n - 1];
      if (now < prev && prev > 0 && (prev - now) / prev > LR_CLIFF_DROP) f1 = eff(LR_CLIFF_BASE);
    }
    const rule = CONVERGENCE_RULE[phase];
    const last = this.#verdicts.slice(-rule.k);
    if (last.length === rule.k && last.every((v) => v !== "stable")) f2 = eff(rule.base);
    if (f1 !== null && f2 !== null) return clampFactor(f1 * f2);
    return f1 ?? f2;
  }

  /** `(A_now - mean(anchor window)) / mean`, the window including A_now; 0 with fewer than 2 samples. */
  trend(): number {
    const a = this.#anchors;
    if (a.length < 2) return 0;
    const mean = a.reduce((x, y) => x + y, 0) / a.length;
    return mean > 0 ? (a[a.length - 1] - mean) / mean : 0;
  }

  /** Forget everything (e.g. after a resume). */
  reset(): void {
    this.#lr = [];
    this.#anchors = [];
    this.#verdicts = [];
  }
}

function push<T>(ring: T[], v: T, cap: number): void {
  ring.push(v);
  if (ring.length > cap) ring.shift();
}
