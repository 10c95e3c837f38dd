import { Device, type Kernel, kernel, launch, type Layout, layout } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { fmt } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { sum } from "./reduce.ts";

/**
 * Mirrors `struct Params` in shaders/unary.wgsl. Each scalar is named for what it is;
 * an op reads only its own (inner and channels: PReLU only).
 */
export const UNARY_PARAMS: Layout<{
  n: "u32"; scale: "f32"; shift: "f32"; slope: "f32"; beta: "f32"; threshold: "f32"; lo: "f32"; hi: "f32";
  exponent: "f32"; alpha: "f32"; inner: "u32"; channels: "u32";
}> = layout("unary", "Params", {
  n: "u32",
  scale: "f32",
  shift: "f32",
  slope: "f32",
  beta: "f32",
  threshold: "f32",
  lo: "f32",
  hi: "f32",
  exponent: "f32",
  alpha: "f32",
  inner: "u32",
  channels: "u32",
});
/** Storage bindings of shaders/unary.wgsl. */
export const UNARY: Kernel<typeof UNARY_PARAMS, {
  x: [number, "read"]; y: [number, "read_write"]; dy: [number, "read"]; dx: [number, "read_write"];
  w: [number, "read"]; dw_each: [number, "read_write"];
}> = kernel(UNARY_PARAMS, {
  x: [1, "read"],
  y: [2, "read_write"],
  dy: [3, "read"],
  dx: [4, "read_write"],
  w: [5, "read"],
  dw_each: [6, "read_write"],
}, { scale: 0, shift: 0, slope: 0, beta: 0, threshold: 0, lo: 0, hi: 0, exponent: 0, alpha: 0, inner: 1, channels: 1 });

/** A unary uniform an op reads, besides n. */
export type UnaryScalar = "scale" | "shift" | "slope" | "beta" | "threshold" | "lo" | "hi" | "exponent" | "alpha";

/**
 * The scalars of a unary op by the names of the uniforms they fill (`{ beta, threshold }`
 * for softplus, `{ scale, shift }` for affine); a missing one is 0, a name the op does not
 * take is an error. The tape records these.
 */
export type UnaryAttrs = Partial<Record<UnaryScalar, number>>;

/** Description of one unary op in shaders/unary.wgsl. */
export interface UnarySpec {
  /** Op name; entry points are `<kernel>_forward` / `<kernel>_backward`. */
  name: string;
  /** Kernel stem when it differs from the name. */
  kernel?: string;
  /** What the backward reads: the input x, the output y, or nothing. */
  saves: "input" | "output" | "none";
  /** The uniforms the op's attrs fill (`["beta", "threshold"]` for softplus). */
  scalars?: readonly [UnaryScalar, UnaryScalar?];
}

/** Uniform values of one launch: attrs placed under the names the spec gives them. */
function scalarsOf(
  spec: UnarySpec,
  n: number,
  attrs: UnaryAttrs,
): Partial<Record<keyof typeof UNARY_PARAMS.fields, number>> {
  const v: Partial<Record<keyof typeof UNARY_PARAMS.fields, number>> = { n };
  const names: readonly (UnaryScalar | undefined)[] = spec.scalars ?? [];
  for (const key of Object.keys(attrs)) {
    if (!names.includes(key as UnaryScalar)) {
      throw new TypeError(`${spec.name}: takes ${names.length ? names.join(", ") : "no scalars"}, got "${key}"`);
    }
  }
  for (const name of names) if (name) v[name] = attrs[name] ?? 0;
  return v;
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
      launch(x.device, UNARY, {
        entry: `${k}_forward`,
        params: scalarsOf(spec, x.numel, attrs),
        io: { x, y },
        groups: Device.grid(x.numel),
      });
      return { output: y, saved: spec.saves === "input" ? [x] : spec.saves === "output" ? [y] : [] };
    },
    backward(dy, ctx) {
      if (!ctx.needs[0]) return [null];
      const dx = Tensor.empty(dy.shape, { device: dy.device }, `${spec.name}.backward`);
      const saved = ctx.saved[0];
      launch(dy.device, UNARY, {
        entry: `${k}_backward`,
        params: scalarsOf(spec, dy.numel, ctx.attrs),
        io: { dy, dx, x: spec.saves === "input" ? saved : undefined, y: spec.saves === "output" ? saved : undefined },
        groups: Device.grid(dy.numel),
      });
      return [dx];
    },
  };
}

/** −x */
export const negOp: OpDef<UnaryAttrs> = defineUnary({ name: "neg", saves: "none" });
/** scale·x + shift */
export const affineOp: OpDef<UnaryAttrs> = defineUnary({ name: "affine", saves: "none", scalars: ["scale", "shift"] });
/** |x|; gradient 0 at 0. */
export const absOp: OpDef<UnaryAttrs> = defineUnary({ name: "abs", saves: "input" });
/** eˣ */
export const expOp: OpDef<UnaryAttrs> = defineUnary({ name: "exp", saves: "output" });
/** ln x */
export const logOp: OpDef<UnaryAttrs> = defineUnary({ name: "log", saves: "input" });
/** √x */
export const sqrtOp: OpDef<UnaryAttrs> = defineUnary({ name: "sqrt", saves: "output" });
/** 1/√x */
export const rsqrtOp: OpDef<UnaryAttrs> = defineUnary({ name: "rsqrt", saves: "output" });
/** tanh x */
export const tanhOp: OpDef<UnaryAttrs> = defineUnary({ name: "tanh", saves: "output" });
/** 1/(1+e⁻ˣ) */
export const sigmoidOp: OpDef<UnaryAttrs> = defineUnary({ name: "sigmoid", saves: "output" });
/** max(x, 0); gradient 0 at 0 as in PyTorch. */
export const reluOp: OpDef<UnaryAttrs> = defineUnary({ name: "relu", saves: "output" });
/** x for x > 0, slope·x otherwise. */
export const leakyReluOp: OpDef<UnaryAttrs> = defineUnary({
  name: "leakyRelu",
  kernel: "leaky_relu",
  saves: "input",
  scalars: ["slope"],
});
/** Exact GELU, x·Φ(x). */
export const geluOp: OpDef<UnaryAttrs> = defineUnary({ name: "gelu", saves: "input" });
/** tanh-approximate GELU. */
export const geluTanhOp: OpDef<UnaryAttrs> = defineUnary({ name: "geluTanh", kernel: "gelu_tanh", saves: "input" });
/** x·σ(x) */
export const siluOp: OpDef<UnaryAttrs> = defineUnary({ name: "silu", saves: "input" });
/** (1/β)·ln(1 + e^(βx)), linear past the threshold. */
export const softplusOp: OpDef<UnaryAttrs> = defineUnary({
  name: "softplus",
  saves: "input",
  scalars: ["beta", "threshold"],
});
/** log σ(x) = −softplus(−x), stable for large |x|. */
export const logSigmoidOp: OpDef<UnaryAttrs> = defineUnary({
  name: "logSigmoid",
  kernel: "log_sigmoid",
  saves: "input",
});
/** min(max(x, lo), hi) */
export const clampOp: OpDef<UnaryAttrs> = defineUnary({ name: "clamp", saves: "input", scalars: ["lo", "hi"] });
/** x^exponent for a scalar exponent. */
export const powScalarOp: OpDef<UnaryAttrs> = defineUnary({
  name: "powScalar",
  kernel: "pow_scalar",
  saves: "input",
  scalars: ["exponent"],
});
/** x for x > 0, alpha·(eˣ − 1) otherwise. */
export const eluOp: OpDef<UnaryAttrs> = defineUnary({ name: "elu", saves: "input", scalars: ["alpha"] });
/** scale·ELU(x; alpha) with SELU's fixed constants (attrs: SELU_ALPHA and SELU_SCALE). */
export const seluOp: OpDef<UnaryAttrs> = defineUnary({ name: "selu", saves: "input", scalars: ["alpha", "scale"] });
/** x·tanh(softplus(x)) */
export const mishOp: OpDef<UnaryAttrs> = defineUnary({ name: "mish", saves: "input" });
/** x·relu6(x + 3)/6 */
export const hardswishOp: OpDef<UnaryAttrs> = defineUnary({ name: "hardswish", saves: "input" });
/** relu6(x + 3)/6 */
export const hardsigmoidOp: OpDef<UnaryAttrs> = defineUnary({ name: "hardsigmoid", saves: "input" });

/** SELU's alpha and scale (Klambauer et al. 2017), the constants torch.nn.SELU uses. */
export const SELU_ALPHA = 1.6732632423543772;
/** SELU's scale λ ≈ 1.0507 (Klambauer et al. 2017), the constant torch.nn.SELU multiplies ELU by. */
export const SELU_SCALE = 1.0507009873554805;

/** How PReLU's weight [C] maps onto x: channel = (flat index / inner) mod C. */
export function preluPlan(x: readonly number[], weight: readonly number[]): { inner: number; channels: number } {
  if (weight.length !== 1) throw new TypeError(`prelu: weight must be 1-D [C], got ${fmt(weight)}`);
  const c = weight[0];
  if (c === 1) return { inner: 1, channels: 1 };
  if (x.length < 2 || x[1] !== c) {
    throw new RangeError(`prelu: weight ${fmt(weight)} needs input with ${c} channels at dim 1, got ${fmt(x)}`);
  }
  return { inner: x.slice(2).reduce((a, b) => a * b, 1), channels: c };
}

/**
 * PReLU (inputs `[x, weight]`): x for x > 0, w[c]·x otherwise, one learned slope per
 * channel (dim 1) or one shared (weight [1]), as torch.nn.functional.prelu. The weight
 * gradient is the per-channel sum of x·dy over x <= 0 (the kernel writes each element's
 * term, the reduce sums them).
 */
export const preluOp: OpDef<undefined> = {
  name: "prelu",
  forward([x, weight]) {
    checkF32(x, "prelu");
    checkF32(weight, "prelu");
    x.sameDevice(weight, "prelu");
    const plan = preluPlan(x.shape, weight.shape);
    const y = Tensor.empty(x.shape, { device: x.device }, "prelu");
    launch(x.device, UNARY, {
      entry: "prelu_forward",
      params: { n: x.numel, ...plan },
      io: { x, y, w: weight },
      groups: Device.grid(x.numel),
    });
    return { output: y, saved: [x, weight] };
  },
  backward(dy, ctx) {
    const [x, weight] = ctx.saved;
    const plan = preluPlan(x.shape, weight.shape);
    const dx = Tensor.empty(x.shape, { device: dy.device }, "prelu.backward");
    const each = Tensor.empty(x.shape, { device: dy.device }, "prelu.backward.each");
    launch(dy.device, UNARY, {
      entry: "prelu_backward",
      params: { n: x.numel, ...plan },
      io: { x, dy, dx, w: weight, dw_each: each },
      groups: Device.grid(x.numel),
    });
    let dw: Tensor | null = null;
    if (ctx.needs[1]) {
      const outer = x.numel / (plan.inner * plan.channels);
      dw = sum(each.reshape([outer, plan.channels, plan.inner]), [0, 2]).reshape(weight.shape);
    }
    return [ctx.needs[0] ? dx : null, dw];
  },
};

const NONE: UnaryAttrs = {};
const fwd = (op: OpDef<UnaryAttrs>, x: Tensor, attrs = NONE) => op.forward([x], attrs).output;

/** Elementwise −x. */
export const neg = (x: Tensor): Tensor => fwd(negOp, x);
/** Elementwise `scale·x + shift`. */
export const affine = (x: Tensor, scale: number, shift = 0): Tensor => fwd(affineOp, x, { scale, shift });
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
export const leakyRelu = (x: Tensor, negativeSlope = 0.01): Tensor =>
  fwd(leakyReluOp, x, { slope: negativeSlope });
/** GELU, exact (`approximate = "none"`) or tanh-approximate. */
export const gelu = (x: Tensor, approximate: "none" | "tanh" = "none"): Tensor =>
  fwd(approximate === "tanh" ? geluTanhOp : geluOp, x);
/** SiLU (swish), x·σ(x). */
export const silu = (x: Tensor): Tensor => fwd(siluOp, x);
/** Softplus with PyTorch's `beta` (1) and `threshold` (20). */
export const softplus = (x: Tensor, beta = 1, threshold = 20): Tensor =>
  fwd(softplusOp, x, { beta, threshold });
/**
 * Elementwise log σ(x) = −softplus(−x) (torch.nn.functional.logsigmoid), computed as
 * min(x, 0) − log1p(e^−|x|): finite for every finite x (−x itself far in the negative tail).
 * The gradient is σ(−x).
 * @param x An f32 tensor of any shape.
 * @returns log σ(x), same shape.
 * @throws {TypeError} When x is not f32.
 * @example
 * ```ts
 * import { Device } from "../../gpu/mod.ts";
 * import { fromArray } from "../creation.ts";
 * import { logSigmoid } from "./unary.ts";
 * await Device.request();
 * const y = await logSigmoid(fromArray([-200, 0, 200])).toArray(); // [-200, -0.6931, 0]
 * if (y[0] !== -200 || Math.abs(y[1] + Math.LN2) > 1e-6 || y[2] !== 0) throw new Error(`${y}`);
 * ```
 */
export const logSigmoid = (x: Tensor): Tensor => fwd(logSigmoidOp, x);
/** Clamp into `[min, max]` (either bound may be ±Infinity). */
export function clamp(x: Tensor, min = -Infinity, max = Infinity): Tensor {
  if (min > max) throw new RangeError(`clamp: min ${min} is greater than max ${max}`);
  return fwd(clampOp, x, { lo: Math.max(min, -3.4e38), hi: Math.min(max, 3.4e38) });
}
/** x raised to a scalar power. */
export const powScalar = (x: Tensor, exponent: number): Tensor => fwd(powScalarOp, x, { exponent });
/** ELU with PyTorch's `alpha` (1). */
export const elu = (x: Tensor, alpha = 1): Tensor => fwd(eluOp, x, { alpha });
/** SELU, scale·ELU(x; alpha) with the fixed constants {@link SELU_ALPHA} and {@link SELU_SCALE}. */
export const selu = (x: Tensor): Tensor => fwd(seluOp, x, { alpha: SELU_ALPHA, scale: SELU_SCALE });
/** Mish, x·tanh(softplus(x)). */
export const mish = (x: Tensor): Tensor => fwd(mishOp, x);
/** Hardswish, x·relu6(x + 3)/6. */
export const hardswish = (x: Tensor): Tensor => fwd(hardswishOp, x);
/** Hardsigmoid, relu6(x + 3)/6. */
export const hardsigmoid = (x: Tensor): Tensor => fwd(hardsigmoidOp, x);
/**
 * PReLU with a learned slope per channel (weight [C], C = x's dim 1) or one shared (weight [1]).
 * @throws {RangeError} When weight has C > 1 entries and x's dim 1 is not C (both shapes named).
 */
export const prelu = (x: Tensor, weight: Tensor): Tensor => preluOp.forward([x, weight], undefined).output;
