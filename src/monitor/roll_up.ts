/**
 * Record-tree roll-ups: how a node's value of a key is computed from its
 * direct children's values. The same strings as the trainer's `Reduction` declarations
 * (`scalarReduction(key, Reduction.Max)`), so declarations pass through unchanged.
 */

/**
 * How a key rolls up: work-weighted mean (default), sum, max, min, or the highest-work
 * child's value. A string union with a same-named constant object, so both
 * `scalarReduction(key, Reduction.Max)` and `scalarReduction(key, "max")` type-check;
 * declared once, here (the trainer's config re-exports it).
 */
export const Reduction = { Mean: "mean", Sum: "sum", Max: "max", Min: "min", Last: "last" } as const;
/** A reduction name: "mean" | "sum" | "max" | "min" | "last" (see the {@link Reduction} constant). */
export type Reduction = (typeof Reduction)[keyof typeof Reduction];

/** Every reduction name, for validation messages. */
export const REDUCTIONS: readonly Reduction[] = Object.freeze(Object.values(Reduction));

/** Roll-ups of the core record keys; fixed, a declaration cannot change them. */
export const CORE_REDUCTIONS: Readonly<Record<string, Reduction>> = Object.freeze({
  throughput: "sum",
  batch_share: "sum",
  loss: "mean",
  data_starve: "max",
  compute_only_ms: "max",
});

/**
 * The reduction of a key: core keys first, then the user's declaration, else Mean.
 * @example
 * ```ts
 * import { reductionFor } from "./roll_up.ts";
 * reductionFor("loss", { loss: "max" }); // "mean": core keys are fixed
 * reductionFor("acc", { acc: "last" }); // "last"
 * ```
 */
export function reductionFor(key: string, declared: Readonly<Record<string, Reduction>> = {}): Reduction {
  return CORE_REDUCTIONS[key] ?? declared[key] ?? "mean";
}

/** One child of a record-tree node: its realized work (linear batches, never the γ mass) and its values. */
export interface RollUpChild {
  work: number;
  values: Readonly<Record<string, number>>;
}

/**
 * Roll the children's values up into their parent. Only children that
 * report a key take part in it; a key no child reports is absent (never zero-filled).
 *
 * - Mean: `Σ v·w / Σ w` over reporting children with w > 0; absent when that Σ w is 0.
 *   NOTE: a child with zero work adds nothing, so an idle rank's NaN placeholder does not
 *   poison its parent, while a NaN from a child that did work propagates (as it must).
 * - Sum, Max, Min: over the reporting children; a NaN propagates.
 * - Last: the value of the highest-work reporting child (the first on ties).
 *
 * @param declared Per-key declarations for user keys; core keys ignore them.
 * @example
 * ```ts
 * import { rollUp } from "./roll_up.ts";
 * rollUp([{ work: 1, values: { loss: 2 } }, { work: 3, values: { loss: 4 } }]); // { loss: 3.5 }
 * ```
 */
export function rollUp(
  children: readonly RollUpChild[],
  declared: Readonly<Record<string, Reduction>> = {},
): Record<string, number> {
  const out: Record<string, number> = {};
  const keys = new Set(children.flatMap((c) => Object.keys(c.values)));
  for (const key of keys) {
    const having = children.filter((c) => Object.hasOwn(c.values, key));
    const vals = having.map((c) => c.values[key]);
    switch (reductionFor(key, declared)) {
      case "sum":
        out[key] = vals.reduce((a, b) => a + b, 0);
        break;
      case "max":
        out[key] = Math.max(...vals);
        break;
      case "min":
        out[key] = Math.min(...vals);
        break;
      case "last": {
        let best = having[0];
        for (const c of having) if (c.work > best.work) best = c;
        out[key] = best.values[key];
        break;
      }
      case "mean": {
        let num = 0, den = 0;
        for (const c of having) {
          if (!(c.work > 0)) continue;
          num += c.values[key] * c.work;
          den += c.work;
        }
        if (den > 0) out[key] = num / den;
        break;
      }
    }
  }
  return out;
}
