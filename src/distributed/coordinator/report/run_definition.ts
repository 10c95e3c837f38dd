/**
 * The parts of a builder's state the coordinator reads: whether rank-side callbacks
 * exist (it schedules them; the ranks run them), the user's coordinator-side callbacks,
 * the outer optimizer and guard, and the cluster's speed hints. `run/builder_state.ts`'s
 * `BuilderState` satisfies it structurally; the coordinator imports nothing from run/.
 */
import type { ConvergenceGuard } from "../control/guards.ts";
import type { EpochMetrics } from "./metrics.ts";
import type { OuterOptimizer } from "../../protocol/outer.ts";

export interface RunDefinition {
  spec: {
    dataset?: { len(): number };
    evalDataset?: unknown;
    evalFn?: unknown;
    checkpointFn?: unknown;
    epochFn?: unknown;
  };
  metricsFn?: (m: EpochMetrics) => void | Promise<void>;
  evalResultFn?: (epoch: number, metric: number) => void | Promise<void>;
  outerFactory?: () => OuterOptimizer;
  guard?: ConvergenceGuard;
  cluster?: { ranks: { speedHint?: number }[] };
}
