import { Device, layout } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { Tensor } from "../tensor.ts";

/** Mirrors `struct Params` in shaders/unary.wgsl. */
export const UNARY_PARAMS = layout("unary", "Params", { n: "u32", alpha: "f32", beta: "f32" });

/** Scalars of a unary op (meaning per op; see shaders/unary.wgsl). */
export interface UnaryAttrs {
  alpha: number;
  beta: number;
}

/** Description of one unary op in shaders/unary.wgsl. */
export interface UnarySpec {
  /** Op name; entry points are `<kernel>_forward` / `<kernel>_backward`. */
  name: string;
  /** Kernel stem when it differs from the name. */
  kernel?: string;
  /** What the backward reads: the input x, the output y, or nothing. */
  saves: "input" | "output" | "none";
}

function launch(entry: string, n: number, device: Device, attrs: UnaryAttrs, buffers: Record<number, GPUBuffer>): void {
  device.dispatch({
    shader: "unary",
    entry,
    params: { layout: UNARY_PARAMS, values: { n, alpha: attrs.alpha, beta: attrs.beta } },
    buffers,
    groups: Device.grid(n),
  });
}

function checkF32(x: Tensor, op: string): void {
  if (x.dtype !== "f32") throw new TypeError(`${op}: expects an f32 tensor, got ${x.dtype}`);
}

/** Define an elementwise op of shaders/unary.wgsl: y = f(x), dx = f'(saved) dy. */
export function defineUnary(spec: UnarySpec): OpDef<UnaryAttrs> {
  const k = spec.kernel ?? spec.name;
  return {
    name: spec.name,
    forward([x], attrs) {
      checkF32(x, spec.name);
      const y = Tensor.empty(x.shape, { device: x.device }, spec.name);
      launch(`${k}_forward`, x.numel, x.device, attrs, { 1: x.buffer, 2: y.buffer });
      return { output: y, saved: spec.saves === "input" ? [x] : spec.saves === "output" ? [y] : [] };
    },
    backward(dy, ctx) {
      if (!ctx.needs[0]) return [null];
      const dx = Tensor.empty(dy.shape, { device: dy.device }, `${spec.name}.backward`);
      const buffers: Record<number, GPUBuffer> = { 3: dy.buffer, 4: dx.buffer };
      if (spec.saves === "input") buffers[1] = ctx.saved[0].buffer;
      if (spec.saves === "output") buffers[2] = ctx.saved[0].buffer;
      launch(`${k}_backward`, dy.numel, dy.device, ctx.attrs, buffers);
      return [dx];
    },
  };
}

/** −x */
export const negOp = defineUnary({ name: "neg", saves: "none" });
/** alpha·x + beta */
export const affineOp = defineUnary({ name: "affine", saves: "none" });
/** |x|; gradient 0 at 0. */
export const absOp = defineUnary({ name: "abs", saves: "input" });
/** eˣ */
export const expOp = defineUnary({ name: "exp", saves: "output" });
/** ln x */
export const logOp = defineUnary({ name: "log", saves: "input" });
/** √x */
export const sqrtOp = defineUnary({ name: "sqrt", saves: "output" });
/** 1/√x */
export const rsqrtOp = defineUnary({ name: "rsqrt", saves: "output" });
/** tanh x */
export const tanhOp = defineUnary({ name: "tanh", saves: "output" });
/** 1/(1+e⁻ˣ) */
export const sigmoidOp = defineUnary({ name: "sigmoid", saves: "output" });
/** max(x, 0); gradient 0 at 0 as in PyTorch. */
export const reluOp = defineUnary({ name: "relu", saves: "output" });
/** x for x > 0, alpha·x otherwise. */
export const leakyReluOp = defineUnary({ name: "leakyRelu", kernel: "leaky_relu", saves: "input" });
/** Exact GELU, x·Φ(x). */
export const geluOp = defineUnary({ name: "gelu", saves: "input" });
/** tanh-approximate GELU. */
export const geluTanhOp = defineUnary({ name: "geluTanh", kernel: "gelu_tanh", saves: "input" });
/** x·σ(x) */
export const siluOp = defineUnary({ name: "silu", saves: "input" });
/** (1/β)·ln(1 + e^(βx)), linear past the threshold (alpha = β, beta = threshold). */
export const softplusOp = defineUnary({ name: "softplus", saves: "input" });
/** min(max(x, alpha), beta) */
export const clampOp = defineUnary({ name: "clamp", saves: "input" });
/** x^alpha for a scalar exponent. */
export const powScalarOp = defineUnary({ name: "powScalar", kernel: "pow_scalar", saves: "input" });

const NONE: UnaryAttrs = { alpha: 0, beta: 0 };
const fwd = (op: OpDef<UnaryAttrs>, x: Tensor, attrs = NONE) => op.forward([x], attrs).output;

/** Elementwise −x. */
export const neg = (x: Tensor): Tensor => fwd(negOp, x);
/** Elementwise `scale·x + shift`. */
export const affine = (x: Tensor, scale: number, shift = 0): Tensor => fwd(affineOp, x, { alpha: scale, beta: shift });
/** Elementwise |x|. */
export const abs = (x: Tensor): Tensor => fwd(absOp, x);
/** Elementwise eˣ. */
export const exp = (x: Tensor): Tensor => fwd(expOp, x);
/** Elementwise natural logarithm. */
export const log = (x: Tensor): Tensor => fwd(logOp, x);
/** Elementwise square root. */
export const sqrt = (x: Tensor): Tensor => fwd(sqrtOp, x);
/** Elementwise 1/√x. */
export const rsqrt = (x: Tensor): Tensor => fwd(rsqrtOp, x);
/** Elementwise tanh. */
export const tanh = (x: Tensor): Tensor => fwd(tanhOp, x);
/** Elementwise logistic sigmoid. */
export const sigmoid = (x: Tensor): Tensor => fwd(sigmoidOp, x);
/** Elementwise max(x, 0). */
export const relu = (x: Tensor): Tensor => fwd(reluOp, x);
/** Leaky ReLU with `negativeSlope` (PyTorch default 0.01). */
export const leakyRelu = (x: Tensor, negativeSlope = 0.01): Tensor => fwd(leakyReluOp, x, { alpha: negativeSlope, beta: 0 });
/** GELU, exact (`approximate = "none"`) or tanh-approximate. */
export const gelu = (x: Tensor, approximate: "none" | "tanh" = "none"): Tensor =>
  fwd(approximate === "tanh" ? geluTanhOp : geluOp, x);
/** SiLU (swish), x·σ(x). */
export const silu = (x: Tensor): Tensor => fwd(siluOp, x);
/** Softplus with PyTorch's `beta` (1) and `threshold` (20). */
export const softplus = (x: Tensor, beta = 1, threshold = 20): Tensor => fwd(softplusOp, x, { alpha: beta, beta: threshold });
/** Clamp into `[min, max]` (either bound may be ±Infinity). */
export function clamp(x: Tensor, min = -Infinity, max = Infinity): Tensor {
  if (min > max) throw new RangeError(`clamp: min ${min} is greater than max ${max}`);
  return fwd(clampOp, x, { alpha: Math.max(min, -3.4e38), beta: Math.min(max, 3.4e38) });
}
/** x raised to a scalar power. */
export const powScalar = (x: Tensor, exponent: number): Tensor => fwd(powScalarOp, x, { alpha: exponent, beta: 0 });
