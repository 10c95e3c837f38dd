import type { Tensor } from "./tensor.ts";

/**
 * What the autograd tape needs of an op: a forward that runs the
 * kernels and says what it saves, and a backward that turns the output gradient into
 * one gradient per input. The tape records which op ran; all math lives here.
 */
export interface OpDef<A = undefined> {
  /** Op name, used in messages and the tape. */
  readonly name: string;
  /** Run the forward kernels. */
  forward(inputs: readonly Tensor[], attrs: A): OpResult;
  /**
   * Gradients of the inputs given the output gradient `grad` (same shape as the output).
   * Return `null` for an input that needs none (`ctx.needs[i]` false) or is not differentiable.
   * Absent for ops without a gradient (argmax, comparisons). A backward that took over the first
   * step of an input's producer's backward (see {@link OpContext.producers}) says so in `folded`.
   */
  backward?(grad: Tensor, ctx: OpContext<A>): readonly (Tensor | null)[] & {
    /** Per input, true when that gradient already went through its producer's first backward step. */
    readonly folded?: readonly boolean[];
  };
}

/** Output of a forward and the tensors the backward will read. */
export interface OpResult {
  /** The op's result, a new tensor (or a view of an input, for the view ops). */
  output: Tensor;
  /** Tensors the backward reads (inputs or output or intermediates). */
  saved?: readonly Tensor[];
}

/** Everything a backward may read. */
export interface OpContext<A> {
  /** Input shapes, in order. */
  readonly shapes: readonly (readonly number[])[];
  /** Whether each input needs a gradient. */
  readonly needs: readonly boolean[];
  /** Saved tensors, as returned by forward. */
  readonly saved: readonly Tensor[];
  /** The forward's output. */
  readonly output: Tensor;
  /** Op attributes. */
  readonly attrs: A;
  /**
   * Per input, true when this op is the only recorded consumer of that input, so its gradient
   * is the whole gradient of the input (the tape sets it; absent: unknown). A fused backward
   * that applies the input's producer's activation (linear's dx product) needs it.
   */
  readonly sole?: readonly boolean[];
  /**
   * Per input, the op the tape recorded as its maker and what that op saved (null for a leaf;
   * absent off the tape). A fused backward reads its producer's saved context here: the next
   * Linear's dx product applies a fused Linear + activation's activation gradient from the
   * pre-activation that op saved (linear_backward.ts), and marks that gradient `folded`.
   */
  readonly producers?: readonly ({ readonly op: OpDef<unknown>; readonly saved: readonly Tensor[] } | null)[];
  /**
   * True when `grad` already went through this op's first backward step (its activation's
   * gradient): the one consumer that made `grad` took the step over (its result's `folded`)
   * and no other gradient was summed in. The tape sets it; absent: false.
   */
  readonly folded?: boolean;
  /**
   * Per input, where its gradient may be written instead of a new tensor (a leaf's gradient
   * home, `Variable.gradHome`, when it has no gradient yet), so no copy follows. Ops may
   * ignore it; one that uses it returns that tensor (the shape of the input).
   */
  readonly into?: readonly (Tensor | null)[];
}

/** Run an op's forward on tensors (no tape) and return its output. */
export function run<A>(op: OpDef<A>, inputs: readonly Tensor[], attrs: A): Tensor {
  return op.forward(inputs, attrs).output;
}

/**
 * Forward then backward of an op on tensors, without the tape: what GPU tests compare
 * with the float64 reference (the output and every input gradient).
 */
export function forwardBackward<A>(
  op: OpDef<A>,
  inputs: readonly Tensor[],
  attrs: A,
  grad: Tensor,
): { output: Tensor; grads: readonly (Tensor | null)[] } {
  const res = op.forward(inputs, attrs);
  if (!op.backward) throw new Error(`${op.name} has no backward`);
  const grads = op.backward(grad, {
    shapes: inputs.map((t) => t.shape),
    needs: inputs.map((t) => t.dtype === "f32"),
    saved: res.saved ?? [],
    output: res.output,
    attrs,
  });
  return { output: res.output, grads };
}
