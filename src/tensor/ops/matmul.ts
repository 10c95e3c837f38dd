/**
 * The two plain products: `matmul` (batched, broadcast, optional transposes) and `linear`
 * (x·wᵀ + b), forward and backward. Their shape rules and batch walk are matmul_plan.ts's, the
 * launch gemm.ts's, Linear's backward (which may fold an activation's gradient into dx's
 * product) linear_backward.ts's and the fused Linear entries linear_fused.ts's.
 */
import type { OpDef } from "../op.ts";
import { numel, type Shape } from "../shape.ts";
import type { Tensor } from "../tensor.ts";
import { checkOperands, gemm, rows } from "./gemm.ts";
import { linearBackward } from "./linear_backward.ts";
import { linearShape } from "./matmul_plan.ts";
import { sumTo } from "./reduce.ts";

/** Attributes of {@link matmulOp}: transpose the last two dims of A and/or B (read in place, no copy). */
export interface MatmulAttrs {
  /** Use A's last two dims transposed (PyTorch's `a.mT`); default false. */
  transA?: boolean;
  /** Use B's last two dims transposed (PyTorch's `b.mT`); default false. */
  transB?: boolean;
}

const batchSize = (s: Shape) => numel(s.slice(0, -2));
const label = "matmul.backward";

/**
 * Batched matrix product C = op(A)·op(B), op an optional transpose of the last two dims that
 * the kernel reads in place. Batch dims broadcast. Gradients (the same kernel, transposed):
 * dA = dC·op(B)ᵀ and dB = op(A)ᵀ·dC (transposed back when A or B was), summed over the
 * batch dims an operand was broadcast along.
 */
export const matmulOp: OpDef<MatmulAttrs> = {
  name: "matmul",
  forward([a, b], attrs) {
    checkOperands("matmul", a, b);
    return { output: gemm(a, b, { transA: !!attrs.transA, transB: !!attrs.transB }), saved: [a, b] };
  },
  backward(dc, ctx) {
    const [a, b] = ctx.saved;
    const ta = !!ctx.attrs.transA, tb = !!ctx.attrs.transB;
    let da: Tensor | null = null, db: Tensor | null = null;
    if (ctx.needs[0]) {
      const g = ta
        ? gemm(b, dc, { transA: tb, transB: true, label })
        : gemm(dc, b, { transB: !tb, label });
      da = sumTo(g, a.shape);
    }
    if (ctx.needs[1]) {
      if (batchSize(b.shape) === 1 && batchSize(a.shape) === batchSize(dc.shape) && batchSize(a.shape) > 1 && !ta) {
        // B was shared by every matrix of A: Σ_i A_iᵀ·dC_i is one product over the stacked rows.
        const a2 = a.reshape(rows(a.shape)), dc2 = dc.reshape(rows(dc.shape));
        const g = tb ? gemm(dc2, a2, { transA: true, label }) : gemm(a2, dc2, { transA: true, label });
        db = g.reshape(b.shape);
      } else {
        const g = tb
          ? gemm(dc, a, { transA: true, transB: ta, label })
          : gemm(a, dc, { transA: !ta, label });
        db = sumTo(g, b.shape);
      }
    }
    return [da, db];
  },
};

/**
 * Matrix product of the last two dims with broadcast batch dims, as `torch.matmul` on
 * operands of at least 2 dims; `transA` / `transB` transpose an operand in place.
 * @throws {TypeError} For operands under 2 dims or not f32.
 * @throws {RangeError} When the shapes do not fit (both shapes shown).
 * @example
 * ```ts
 * import { Device, fromArray } from "../../index.ts";
 * import { ops } from "../../engine.ts";
 * await Device.request();
 * const c = ops.matmul(fromArray([1, 2, 3, 4], [2, 2]), fromArray([1, 0, 0, 1], [2, 2]));
 * console.log(await c.toArray()); // [1, 2, 3, 4]
 * ```
 */
export function matmul(a: Tensor, b: Tensor, opts: MatmulAttrs = {}): Tensor {
  return matmulOp.forward([a, b], opts).output;
}

/**
 * Fully connected layer y = x·wᵀ + b with PyTorch's `nn.Linear` layout: x [..., in],
 * w [out, in], b [out] (optional). One dispatch forward (the bias is added by the matmul
 * kernel). Gradients: dx = dy·w, dw = dyᵀ·x over all leading dims, db = Σ dy; dx's product
 * also applies the activation of a fused Linear + activation that made x (linear_backward.ts).
 */
export const linearOp: OpDef<undefined> = {
  name: "linear",
  forward(inputs) {
    const [x, w, b] = inputs;
    checkOperands("linear", ...inputs);
    const out = linearShape(x.shape, w.shape, b?.shape);
    const y = gemm(x.reshape(rows(x.shape)), w, { transB: true, bias: b, label: "linear" });
    return { output: y.reshape(out), saved: [x, w] };
  },
  backward(dy, ctx) {
    const [x, w] = ctx.saved;
    return linearBackward(dy, x, w, ctx);
  },
};

/**
 * `nn.Linear`'s forward: y = x·wᵀ + b for x [..., in], w [out, in], b [out].
 * @throws {TypeError} For wrong ranks or dtypes.
 * @throws {RangeError} When in or out disagree (all shapes shown).
 * @example
 * ```ts
 * import { Device, fromArray } from "../../index.ts";
 * import { ops } from "../../engine.ts";
 * await Device.request();
 * const y = ops.linear(fromArray([1, 2], [1, 2]), fromArray([1, 1, 0, 1], [2, 2]), fromArray([10, 20]));
 * console.log(await y.toArray()); // [13, 22]
 * ```
 */
export function linear(x: Tensor, w: Tensor, b?: Tensor): Tensor {
  return linearOp.forward(b ? [x, w, b] : [x, w], undefined).output;
}
