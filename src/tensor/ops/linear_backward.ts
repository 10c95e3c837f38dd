/**
 * Linear's backward, which every Linear entry runs (matmul.ts's `linearOp`, linear_fused.ts's
 * fused ones), and the consumer's side of the activation fold. Not public.
 *
 * The fold, end to end: a fused Linear + activation ({@link LinearActOp}) saves `[x, w, s]`, s
 * what its activation's backward reads. When the tape names such an op as the maker of a
 * Linear's input x (`ctx.producers[0]`), that Linear's dx product applies the activation's
 * gradient from that s in its store (the mask epilogue: one launch fewer) and returns dx marked
 * `folded`. The tape hands the mark to the fused op as `ctx.folded`, and its backward skips
 * the activation (linear_fused.ts).
 */
import type { OpContext, OpDef } from "../op.ts";
import { Tensor } from "../tensor.ts";
import { gemm, rows, tilingOf } from "./gemm.ts";
import type { Activation } from "./matmul_plan.ts";
import { sumOp } from "./reduce.ts";

/**
 * A fused Linear + activation: act(x·wᵀ + b), act applied in its product's store. It saves
 * `[x, w, s]`, s what act's backward reads (y, or the pre-activation for gelu, geluTanh and
 * silu), so that a Linear consuming its output can apply act's gradient for it.
 */
export interface LinearActOp extends OpDef<undefined> {
  /** The activation its store applies: the first step of its backward. */
  readonly activation: Activation;
}

/** What a backward returns: one gradient per input, and which went through their producer's first step. */
type Gradients = ReturnType<NonNullable<OpDef<undefined>["backward"]>>;
/** What the tape recorded of the op that made an input (`OpContext.producers`). */
type Producer = NonNullable<NonNullable<OpContext<undefined>["producers"]>[number]>;

const isLinearAct = (op: OpDef<unknown>): op is LinearActOp => "activation" in op;

/**
 * The activation step a Linear's dx product can take over from the op that made x: the
 * activation and its saved s, when that op is a fused Linear + activation.
 */
function activationStep(from: Producer | null | undefined): { act: Activation; s: Tensor } | undefined {
  if (!from || !isLinearAct(from.op)) return undefined;
  return { act: from.op.activation, s: from.saved[2] };
}

/**
 * The backward of y = x·wᵀ (+ b) from dy: dx = dy·w, dw = dyᵀ·x, db = Σ dy. When x was made
 * by a fused Linear + activation (`ctx.producers[0]`), dx's product also applies that
 * activation's gradient and the result says so (`folded[0]`; see the file's header).
 */
export function linearBackward(dy: Tensor, x: Tensor, w: Tensor, ctx: OpContext<undefined>): Gradients {
  const { needs } = ctx, into = ctx.into ?? [];
  const dy2 = dy.reshape(rows(dy.shape));
  let dx: Tensor | null = null, folded = false;
  if (needs[0]) {
    const step = activationStep(ctx.producers?.[0]);
    // Folding is safe when no other gradient of x joins dx before the activation's backward
    // (this op is x's only consumer), or when applying the activation's gradient twice is the
    // same as once (relu's mask). Only the register kernel has the mask epilogue.
    const safe = step && (step.act === "relu" || ctx.sole?.[0] === true);
    const mask = safe && tilingOf(x.device, dy2.shape[0], false, false).bk === 0
      ? { s: step.s.reshape(rows(x.shape)), act: step.act }
      : undefined;
    dx = gemm(dy2, w, { label: "linear.backward", mask }).reshape(x.shape);
    folded = mask !== undefined;
  }
  // db = Σ dy rides along dW's product (its row sums) when both are wanted on the register kernel.
  const hasBias = ctx.shapes.length > 2;
  const sumsInProduct = hasBias && needs[1] && needs[2] && tilingOf(dy.device, w.shape[0], true, false).bk === 0;
  let db: Tensor | null = null;
  if (sumsInProduct) {
    db = into[2] && into[2].numel === w.shape[0] ? into[2] : Tensor.empty([w.shape[0]], { device: dy.device }, "linear.backward");
  }
  const dw = needs[1]
    ? gemm(dy2, x.reshape(rows(x.shape)), { transA: true, label: "linear.backward", out: into[1], rowSums: db ?? undefined })
    : null;
  const grads = [dx, dw];
  if (hasBias) grads.push(needs[2] ? db ?? sumOp.forward([dy2], { dims: 0, out: into[2] ?? undefined }).output : null);
  return Object.assign(grads, { folded: [folded] });
}
