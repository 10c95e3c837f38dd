/**
 * Weight initialisers with PyTorch's semantics (`torch.nn.init`), seeded.
 *
 * Each writes new values into an existing f32 tensor (a `Parameter` or its `.data`) with a
 * recorded GPU copy from a freshly generated random tensor, and returns that tensor. With no
 * `seed` the next seed of the global stream is used (`manualSeed` makes runs repeatable);
 * a given seed yields the same values on every device.
 * @module
 */
import { Variable } from "../autograd/mod.ts";
import { fmt, full, nextSeed, rand, randn, type Shape, type Tensor } from "../tensor/mod.ts";

/** A tensor to initialise, or a Variable / Parameter whose data is written. */
export type InitTarget = Tensor | Variable;

/** Nonlinearities {@link calculateGain} knows, with PyTorch's names. */
export type Nonlinearity =
  | "linear"
  | "conv1d"
  | "conv2d"
  | "conv3d"
  | "conv_transpose1d"
  | "conv_transpose2d"
  | "conv_transpose3d"
  | "sigmoid"
  | "tanh"
  | "relu"
  | "leaky_relu"
  | "selu";

const UNIT_GAIN = [
  "linear",
  "conv1d",
  "conv2d",
  "conv3d",
  "conv_transpose1d",
  "conv_transpose2d",
  "conv_transpose3d",
  "sigmoid",
];

/**
 * The recommended gain for a nonlinearity (PyTorch's `calculate_gain`): 1 for linear/conv/sigmoid,
 * 5/3 for tanh, √2 for relu, √(2 / (1 + slope²)) for leaky_relu (slope `param`, default 0.01), 3/4 for selu.
 * @throws {RangeError} For an unknown nonlinearity or a non-finite slope.
 * @example
 * ```ts
 * import { calculateGain } from "./init.ts";
 * if (calculateGain("relu") !== Math.SQRT2) throw new Error("relu gain");
 * ```
 */
export function calculateGain(nonlinearity: Nonlinearity, param?: number): number {
  if (UNIT_GAIN.includes(nonlinearity)) return 1;
  switch (nonlinearity) {
    case "tanh":
      return 5 / 3;
    case "relu":
      return Math.SQRT2;
    case "leaky_relu": {
      const slope = param ?? 0.01;
      if (typeof slope !== "number" || !Number.isFinite(slope)) {
        throw new RangeError(`calculateGain: negative slope must be a finite number, got ${slope}`);
      }
      return Math.sqrt(2 / (1 + slope * slope));
    }
    case "selu":
      return 3 / 4;
  }
  throw new RangeError(
    `calculateGain: unsupported nonlinearity ${JSON.stringify(nonlinearity)}, expected one of ` +
      [...UNIT_GAIN, "tanh", "relu", "leaky_relu", "selu"].join(", "),
  );
}

/**
 * Fan-in and fan-out of a weight shape, as PyTorch's `_calculate_fan_in_and_fan_out`:
 * `fanIn = shape[1] · receptive`, `fanOut = shape[0] · receptive`, receptive = ∏ shape[2:].
 * So Linear `[out, in]` gives (in, out), Conv2d `[Cout, Cin/groups, kh, kw]` gives
 * fanIn = Cin/groups·kh·kw, and ConvTranspose2d `[Cin, Cout/groups, kh, kw]` gives
 * fanIn = Cout/groups·kh·kw (PyTorch reads dim 1 whatever the layer).
 * @throws {RangeError} For fewer than 2 dimensions.
 */
export function fanInOut(shape: Shape): { fanIn: number; fanOut: number } {
  if (shape.length < 2) {
    throw new RangeError(`fanInOut: fan in and fan out need a shape of at least 2 dimensions, got ${fmt(shape)}`);
  }
  const receptive = shape.slice(2).reduce((a, b) => a * b, 1);
  return { fanIn: shape[1] * receptive, fanOut: shape[0] * receptive };
}

function target(t: InitTarget, op: string): Tensor {
  const x = t instanceof Variable ? t.data : t;
  if (x.dtype !== "f32") throw new TypeError(`${op}: tensor must be f32, got ${x.dtype}`);
  return x;
}

/** Copy a generated tensor into `dst` (recorded) and give the temporary back. */
function overwrite(dst: Tensor, src: Tensor): Tensor {
  dst.device.copy(src.buffer, src.byteOffset, dst.buffer, dst.byteOffset, dst.numel * 4);
  src.dispose();
  return dst;
}

function checkFinite(op: string, values: Record<string, number>): void {
  for (const [k, v] of Object.entries(values)) {
    if (typeof v !== "number" || !Number.isFinite(v)) {
      throw new RangeError(`${op}: ${k} must be a finite number, got ${v}`);
    }
  }
}

/**
 * Fill with U(lo, hi).
 * @throws {RangeError} When a bound is not finite or `lo > hi`.
 */
export function uniform(t: InitTarget, lo = 0, hi = 1, seed?: number): Tensor {
  const x = target(t, "uniform");
  checkFinite("uniform", { lo, hi });
  if (lo > hi) throw new RangeError(`uniform: lo must be <= hi, got lo=${lo} hi=${hi}`);
  if (x.numel === 0) return x;
  return overwrite(x, rand(x.shape, { device: x.device, lo, hi, seed: seed ?? nextSeed() }));
}

/**
 * Fill with N(mean, std²).
 * @throws {RangeError} When mean or std is not finite, or std < 0.
 */
export function normal(t: InitTarget, mean = 0, std = 1, seed?: number): Tensor {
  const x = target(t, "normal");
  checkFinite("normal", { mean, std });
  if (std < 0) throw new RangeError(`normal: std must be >= 0, got ${std}`);
  if (x.numel === 0) return x;
  return overwrite(x, randn(x.shape, { device: x.device, mean, std, seed: seed ?? nextSeed() }));
}

/** Fill with a constant. */
export function constant(t: InitTarget, value: number): Tensor {
  const x = target(t, "constant");
  if (x.numel === 0) return x;
  return overwrite(x, full(x.shape, value, { device: x.device }));
}

/** Fill with zeros. */
export function zeros(t: InitTarget): Tensor {
  const x = target(t, "zeros");
  if (x.numel > 0) x.device.clear(x.buffer, x.byteOffset, x.numel * 4);
  return x;
}

/** Fill with ones. */
export function ones(t: InitTarget): Tensor {
  return constant(t, 1);
}

/** Options of the Kaiming initialisers. */
export interface KaimingOptions {
  /** Negative slope of the rectifier after this layer (leaky_relu only). Default 0, as PyTorch. */
  a?: number;
  /** "fanIn" (default) preserves the forward variance, "fanOut" the backward one. */
  mode?: "fanIn" | "fanOut";
  /** Default "leaky_relu", as PyTorch. */
  nonlinearity?: Nonlinearity;
  /** Random seed; default the global stream. */
  seed?: number;
}

function kaimingStd(x: Tensor, o: KaimingOptions, op: string): number {
  const mode = o.mode ?? "fanIn";
  if (mode !== "fanIn" && mode !== "fanOut") {
    throw new RangeError(`${op}: mode must be "fanIn" or "fanOut", got ${JSON.stringify(mode)}`);
  }
  const fans = fanInOut(x.shape);
  const fan = mode === "fanIn" ? fans.fanIn : fans.fanOut;
  return calculateGain(o.nonlinearity ?? "leaky_relu", o.a ?? 0) / Math.sqrt(fan);
}

/**
 * He uniform: U(−b, b) with b = gain · √(3 / fan) (PyTorch's `kaiming_uniform_`).
 * PyTorch's default Linear/Conv weight init is this with `a = √5`, giving b = 1/√fanIn.
 */
export function kaimingUniform(t: InitTarget, options: KaimingOptions = {}): Tensor {
  const x = target(t, "kaimingUniform");
  if (x.numel === 0) return x;
  const bound = Math.sqrt(3) * kaimingStd(x, options, "kaimingUniform");
  return uniform(x, -bound, bound, options.seed);
}

/** He normal: N(0, std²) with std = gain / √fan (PyTorch's `kaiming_normal_`). */
export function kaimingNormal(t: InitTarget, options: KaimingOptions = {}): Tensor {
  const x = target(t, "kaimingNormal");
  if (x.numel === 0) return x;
  return normal(x, 0, kaimingStd(x, options, "kaimingNormal"), options.seed);
}

/** Glorot uniform: U(−b, b) with b = gain · √(6 / (fanIn + fanOut)). */
export function xavierUniform(t: InitTarget, gain = 1, seed?: number): Tensor {
  const x = target(t, "xavierUniform");
  if (x.numel === 0) return x;
  const { fanIn, fanOut } = fanInOut(x.shape);
  const bound = gain * Math.sqrt(6 / (fanIn + fanOut));
  return uniform(x, -bound, bound, seed);
}

/** Glorot normal: N(0, std²) with std = gain · √(2 / (fanIn + fanOut)). */
export function xavierNormal(t: InitTarget, gain = 1, seed?: number): Tensor {
  const x = target(t, "xavierNormal");
  if (x.numel === 0) return x;
  const { fanIn, fanOut } = fanInOut(x.shape);
  return normal(x, 0, gain * Math.sqrt(2 / (fanIn + fanOut)), seed);
}

/**
 * PyTorch's default initialisation of a weighted layer (`reset_parameters` of Linear,
 * Conv1d/2d/3d and ConvTranspose1d/2d/3d): weight `kaiming_uniform_(a = √5)`, i.e.
 * U(−1/√fanIn, 1/√fanIn), and bias U(−1/√fanIn, 1/√fanIn) (0 when fanIn is 0), fanIn from
 * {@link fanInOut} of the weight (dim 1 · kernel size, which for a transposed convolution is
 * Cout/groups · kernel, as PyTorch computes it).
 * @param seed Seeds the weight; the bias uses `seed + 1`. Default: two draws of the global stream.
 * @returns The bound 1/√fanIn used for both.
 * @example
 * ```ts ignore
 * const w = new Parameter(Tensor.empty([16, 8])), b = new Parameter(Tensor.empty([16]));
 * initDefault(w, b);   // both in U(-1/√8, 1/√8)
 * ```
 */
export function initDefault(weight: InitTarget, bias?: InitTarget | null, seed?: number): number {
  const w = target(weight, "initDefault");
  const { fanIn } = fanInOut(w.shape);
  const bound = fanIn > 0 ? 1 / Math.sqrt(fanIn) : 0;
  const s = seed ?? nextSeed();
  kaimingUniform(w, { a: Math.sqrt(5), seed: s });
  if (bias) uniform(bias, -bound, bound, seed === undefined ? nextSeed() : (s + 1) >>> 0);
  return bound;
}

/** PyTorch's default Linear init (weight `[out, in]`): see {@link initDefault}. */
export const initLinear = initDefault;
/** PyTorch's default Conv1d/2d/3d init (weight `[Cout, Cin/groups, ...k]`, fanIn = Cin/groups·∏k): see {@link initDefault}. */
export const initConv = initDefault;
/** PyTorch's default ConvTranspose init (weight `[Cin, Cout/groups, ...k]`, fanIn = Cout/groups·∏k): see {@link initDefault}. */
export const initConvTranspose = initDefault;
