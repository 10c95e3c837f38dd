/**
 * The fused Linear entries, each one dispatch forward: act(x·wᵀ + b) (`linearActOps`) and
 * res + dropout(x·wᵀ + b) (`linearResidualOp`). A fused Linear + activation is the producer's
 * side of the activation fold: its backward skips the activation when the tape says the next
 * Linear's dx product already applied it (`ctx.folded`; the consumer's side, and the whole
 * handshake, are in linear_backward.ts).
 */
import type { OpDef } from "../op.ts";
import { fmt } from "../shape.ts";
import type { Tensor } from "../tensor.ts";
import { checkDropout, type DropoutAttrs, dropoutOp } from "./dropout.ts";
import { checkOperands, gemm, gemmPre, rows } from "./gemm.ts";
import { linearBackward, type LinearActOp } from "./linear_backward.ts";
import { type Activation, ACTIVATIONS, linearShape } from "./matmul_plan.ts";

/**
 * act(x·wᵀ + b) in one dispatch, `act` applied in the matmul's store with the unary op's own
 * rule (shaders/lib/act.wgsl); one that saves its input (gelu, silu) stores the product
 * before it too, in the same launch. Saves `[x, w, s]`, s what the activation's backward reads
 * (see {@link LinearActOp}). Backward applies the activation's gradient (skipped when
 * `ctx.folded`: the next Linear's dx product already did) and then Linear's. The same f32
 * operations as the two ops apart.
 */
function defineLinearAct(act: Activation): LinearActOp {
  const spec = ACTIVATIONS[act];
  return {
    name: `linear${act[0].toUpperCase()}${act.slice(1)}`,
    activation: act,
    forward(inputs) {
      const [x, w, b] = inputs;
      checkOperands("linear", ...inputs);
      const out = linearShape(x.shape, w.shape, b?.shape);
      const r = gemmPre(x.reshape(rows(x.shape)), w, { transB: true, bias: b, label: "linear", act });
      const y = r.c.reshape(out), s = r.pre ? r.pre.reshape(out) : y;
      return { output: y, saved: [x, w, s] };
    },
    backward(dy, ctx) {
      const [x, w, s] = ctx.saved;
      const dz = ctx.folded
        ? dy
        : spec.op.backward!(dy, { shapes: [s.shape], needs: [true], saved: [s], output: ctx.output, attrs: {} })[0]!;
      return linearBackward(dz, x, w, ctx);
    },
  };
}

/** The fused Linear + activation op of each {@link Activation} (`linearActOps.gelu` is gelu(x·wᵀ + b)). */
export const linearActOps: Readonly<Record<Activation, OpDef<undefined>>> = Object.fromEntries(
  (Object.keys(ACTIVATIONS) as Activation[]).map((a) => [a, defineLinearAct(a)]),
) as Record<Activation, LinearActOp>;

/** relu(x·wᵀ + b) in one dispatch: `nn.Sequential` runs a `Linear` followed by a `ReLU` so. */
export const linearReluOp: OpDef<undefined> = linearActOps.relu;

/** Attributes of {@link linearResidualOp}: whether a bias is given, and the dropout (null: none). */
export interface LinearResidualAttrs {
  /** Whether the inputs hold a bias: `[x, w, b, res]` when true, `[x, w, res]` when false. */
  bias: boolean;
  /** Dropout of x·wᵀ + b before res is added; null (or not training, or p = 0) for none. */
  dropout: DropoutAttrs | null;
}

/**
 * res + dropout(x·wᵀ + b) in one dispatch (inputs `[x, w, b, res]`, or `[x, w, res]` without a
 * bias): a transformer block's `x + drop(ff_down(h))`. The mask is dropout's for the seed
 * (regenerated in backward, nothing saved) and the residual is added in the store, the same
 * f32 operations as linear, dropout and add apart. Backward: res gets dy itself, the product
 * gets dropout's backward of dy, then Linear's.
 */
export const linearResidualOp: OpDef<LinearResidualAttrs> = {
  name: "linearResidual",
  forward(inputs, attrs) {
    const [x, w] = inputs, b = attrs.bias ? inputs[2] : undefined, res = inputs[inputs.length - 1];
    checkOperands("linear", ...inputs);
    const out = linearShape(x.shape, w.shape, b?.shape);
    if (res.shape.length !== out.length || res.shape.some((d, i) => d !== out[i])) {
      throw new RangeError(`linearResidual: the residual must have the output's shape ${fmt(out)}, got ${fmt(res.shape)}`);
    }
    if (attrs.dropout) checkDropout(attrs.dropout);
    const drop = attrs.dropout && attrs.dropout.training && attrs.dropout.p > 0 ? attrs.dropout : undefined;
    const y = gemm(x.reshape(rows(x.shape)), w, { transB: true, bias: b, label: "linear", res, drop }).reshape(out);
    return { output: y, saved: [x, w] };
  },
  backward(dy, ctx) {
    const [x, w] = ctx.saved, n = ctx.shapes.length;
    const d = ctx.attrs.dropout;
    const sub = { ...ctx, shapes: ctx.shapes.slice(0, n - 1), needs: ctx.needs.slice(0, n - 1), into: ctx.into?.slice(0, n - 1), attrs: undefined };
    const dres = ctx.needs[n - 1] ? dy : null;
    if (!sub.needs.some(Boolean)) return [...sub.needs.map(() => null), dres];
    const dz = d ? dropoutOp.backward!(dy, { shapes: [dy.shape], needs: [true], saved: [], output: dy, attrs: d })[0]! : dy;
    const grads = linearBackward(dz, x, w, sub);
    // x's gradient may have folded its producer's activation (linearBackward's `folded`); res's did not.
    return Object.assign([...grads, dres], { folded: grads.folded });
  },
};

/** relu(linear(x, w, b)) in one dispatch (see {@link linearReluOp}). */
export function linearRelu(x: Tensor, w: Tensor, b?: Tensor): Tensor {
  return linearReluOp.forward(b ? [x, w, b] : [x, w], undefined).output;
}

/**
 * act(linear(x, w, b)) in one dispatch (see {@link linearActOps}).
 * @example
 * ```ts
 * import { Device, fromArray } from "../../index.ts";
 * import { ops } from "../../engine.ts";
 * await Device.request();
 * const y = ops.linearAct(fromArray([1, -2], [1, 2]), fromArray([1, 0, 0, 1], [2, 2]), fromArray([0, 0]), "tanh");
 * console.log(await y.toArray()); // [tanh(1), tanh(-2)]
 * ```
 */
export function linearAct(x: Tensor, w: Tensor, b: Tensor | undefined, act: Activation): Tensor {
  return linearActOps[act].forward(b ? [x, w, b] : [x, w], undefined).output;
}
