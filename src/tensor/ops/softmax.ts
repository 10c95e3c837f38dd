import { Device, type Kernel, kernel, launch, type Layout, layout, tuning } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { normDim, type Shape } from "../shape.ts";
import { Tensor } from "../tensor.ts";

/** Mirrors `struct Params` in shaders/softmax.wgsl. */
export const SOFTMAX_PARAMS: Layout<{
  rows: "u32"; len: "u32"; inner: "u32";
}> = layout("softmax", "Params", { rows: "u32", len: "u32", inner: "u32" });
/** Storage bindings of shaders/softmax.wgsl. */
export const SOFTMAX: Kernel<typeof SOFTMAX_PARAMS, {
  x: [number, "read"]; y: [number, "read_write"]; dy: [number, "read"]; dx: [number, "read_write"];
}> = kernel(SOFTMAX_PARAMS, {
  x: [1, "read"],
  y: [2, "read_write"],
  dy: [3, "read"],
  dx: [4, "read_write"],
});

/** Attributes of softmax / logSoftmax: the dim normalized over (negative counts from the end). */
export interface SoftmaxAttrs {
  /** The dim each softmax runs along (negative counts from the end), PyTorch's `dim`. */
  dim: number;
}

/** A tensor seen as [outer, len, inner] around `dim` (pure; unit-testable). */
export function rowPlan(shape: Shape, dim: number, op: string): { rows: number; len: number; inner: number } {
  const d = normDim(dim, shape.length, op);
  const outer = shape.slice(0, d).reduce((a, b) => a * b, 1);
  const inner = shape.slice(d + 1).reduce((a, b) => a * b, 1);
  return { rows: outer * inner, len: shape[d], inner };
}

/** One workgroup per row; nothing to record for an empty tensor. */
function rowLaunch(plan: ReturnType<typeof rowPlan>, entry: string) {
  return { entry, params: plan, groups: Device.grid(plan.rows, 1), overrides: { WG: tuning.reduceWg(plan.len) } };
}

/** softmax or log_softmax: forward writes y, backward reads the saved y (never x). */
function defineSoftmax(name: "softmax" | "logSoftmax", kernel: string): OpDef<SoftmaxAttrs> {
  return {
    name,
    forward([x], attrs) {
      if (x.dtype !== "f32") throw new TypeError(`${name}: expects an f32 tensor, got ${x.dtype}`);
      if (x.ndim === 0) throw new TypeError(`${name}: expects a tensor with at least one dim, got a scalar []`);
      const plan = rowPlan(x.shape, attrs.dim, name);
      const y = Tensor.empty(x.shape, { device: x.device }, name);
      if (plan.rows > 0 && plan.len > 0) {
        launch(x.device, SOFTMAX, { ...rowLaunch(plan, `${kernel}_forward`), io: { x, y } });
      }
      return { output: y, saved: [y] };
    },
    backward(dy, ctx) {
      if (!ctx.needs[0]) return [null];
      const plan = rowPlan(ctx.shapes[0], ctx.attrs.dim, name);
      const dx = Tensor.empty(dy.shape, { device: dy.device }, `${name}.backward`);
      const io = { y: ctx.saved[0], dy, dx };
      if (plan.rows > 0 && plan.len > 0) launch(dy.device, SOFTMAX, { ...rowLaunch(plan, `${kernel}_backward`), io });
      return [dx];
    },
  };
}

/** Softmax along `attrs.dim`, max-subtracted; backward from the saved output. */
export const softmaxOp: OpDef<SoftmaxAttrs> = defineSoftmax("softmax", "softmax");
/** Log-softmax along `attrs.dim`, max-subtracted; backward from the saved output. */
export const logSoftmaxOp: OpDef<SoftmaxAttrs> = defineSoftmax("logSoftmax", "log_softmax");

/**
 * Softmax along `dim`: exp(x - max) / sum exp(x - max), stable for logits of any size.
 * @param dim Dim normalized over; negative counts from the end (default -1, the last).
 * @throws {TypeError} For a non-f32 or 0-dim tensor.
 * @throws {RangeError} When `dim` is out of range.
 * @example
 * ```ts
 * import { Device } from "../../gpu/mod.ts";
 * import { fromArray } from "../creation.ts";
 * import { softmax } from "./softmax.ts";
 * await Device.request();
 * const p = softmax(fromArray([1, 2, 3, 1000, 1000, 0], [2, 3])); // rows sum to 1
 * console.log(await p.toArray());
 * ```
 */
export function softmax(x: Tensor, dim = -1): Tensor {
  return softmaxOp.forward([x], { dim }).output;
}

/**
 * Log-softmax along `dim`: x - max - log sum exp(x - max); finite where softmax underflows.
 * @param dim Dim normalized over; negative counts from the end (default -1).
 * @throws {TypeError} For a non-f32 or 0-dim tensor.
 * @throws {RangeError} When `dim` is out of range.
 */
export function logSoftmax(x: Tensor, dim = -1): Tensor {
  return logSoftmaxOp.forward([x], { dim }).output;
}
