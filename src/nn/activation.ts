/** Activation modules (PyTorch names), each a thin Module over a Variable method or a functional form. */
import { Parameter, type Variable } from "../autograd/mod.ts";
import { Device } from "../gpu/mod.ts";
import * as T from "../tensor/mod.ts";
import { Module } from "./module.ts";
import { elu, hardsigmoid, hardswish, logSigmoid, logSoftmax, mish, prelu, selu, softmax } from "./functional.ts";

/** max(x, 0) elementwise (PyTorch's nn.ReLU); after a Linear, Sequential fuses it into the matmul. */
export class ReLU extends Module {
  /** max(x, 0) of every element of x (any shape), `x.relu()`. */
  forward(x: Variable): Variable {
    return x.relu();
  }
}
/** x for x ≥ 0, negativeSlope·x otherwise (PyTorch's nn.LeakyReLU, slope 0.01). */
export class LeakyReLU extends Module {
  /** Leaky ReLU with the given slope for negative inputs. */
  constructor(
    /** Factor of negative inputs; default 0.01 (PyTorch's `negative_slope`). */
    readonly negativeSlope = 0.01,
  ) {
    super();
  }
  /** Leaky ReLU of every element of x (any shape), `x.leakyRelu(negativeSlope)`. */
  forward(x: Variable): Variable {
    return x.leakyRelu(this.negativeSlope);
  }
}
/** x·Φ(x), exact or tanh-approximate (PyTorch's nn.GELU); after a Linear, Sequential fuses it. */
export class GELU extends Module {
  /** GELU, exact by default. */
  constructor(
    /** "none": the exact erf form (PyTorch's default); "tanh": the tanh approximation (GPT-2's). */
    readonly approximate: "none" | "tanh" = "none",
  ) {
    super();
  }
  /** GELU of every element of x (any shape), `x.gelu(approximate)`. */
  forward(x: Variable): Variable {
    return x.gelu(this.approximate);
  }
}
/** x·σ(x), swish (PyTorch's nn.SiLU); after a Linear, Sequential fuses it into the matmul. */
export class SiLU extends Module {
  /** x·σ(x) of every element of x (any shape), `x.silu()`. */
  forward(x: Variable): Variable {
    return x.silu();
  }
}
/** σ(x) = 1/(1 + e⁻ˣ) elementwise (PyTorch's nn.Sigmoid); after a Linear, Sequential fuses it. */
export class Sigmoid extends Module {
  /** σ(x) of every element of x (any shape), in (0, 1); `x.sigmoid()`. */
  forward(x: Variable): Variable {
    return x.sigmoid();
  }
}
/** tanh(x) elementwise (PyTorch's nn.Tanh); after a Linear, Sequential fuses it into the matmul. */
export class Tanh extends Module {
  /** tanh of every element of x (any shape), in (−1, 1); `x.tanh()`. */
  forward(x: Variable): Variable {
    return x.tanh();
  }
}
/** log(1 + e^(beta·x))/beta, linear where beta·x > threshold (PyTorch's nn.Softplus). */
export class Softplus extends Module {
  /** Softplus with PyTorch's defaults, beta 1 and threshold 20. */
  constructor(
    /** Sharpness: larger is closer to relu. Default 1. */
    readonly beta = 1,
    /** Above this value of beta·x the output is x itself (for stability). Default 20. */
    readonly threshold = 20,
  ) {
    super();
  }
  /** Softplus of every element of x (any shape), `x.softplus(beta, threshold)`. */
  forward(x: Variable): Variable {
    return x.softplus(this.beta, this.threshold);
  }
}
/** exp(x) normalized to sum 1 along `dim` (PyTorch's nn.Softmax, here with dim −1 by default). */
export class Softmax extends Module {
  /** Softmax along `dim`. */
  constructor(/** The dim that sums to 1; negative counts from the end. Default −1, the last. */ readonly dim = -1) {
    super();
  }
  /** Softmax of x along `dim`: x's shape, each slice along `dim` summing to 1. */
  forward(x: Variable): Variable {
    return softmax(x, this.dim);
  }
}
/** log(softmax(x)) along `dim`, computed stably (PyTorch's nn.LogSoftmax; the input of nllLoss). */
export class LogSoftmax extends Module {
  /** Log-softmax along `dim`. */
  constructor(/** The dim normalized over; negative counts from the end. Default −1. */ readonly dim = -1) {
    super();
  }
  /** Log-softmax of x along `dim`: x's shape, each slice's exp summing to 1. */
  forward(x: Variable): Variable {
    return logSoftmax(x, this.dim);
  }
}
/** Returns its input (PyTorch's nn.Identity): a placeholder where a layer is optional. */
export class Identity extends Module {
  /** x itself, the same Variable (no op on the tape). */
  forward(x: Variable): Variable {
    return x;
  }
}
/** x for x > 0, alpha·(eˣ − 1) otherwise (PyTorch's nn.ELU, alpha 1). */
export class ELU extends Module {
  /**
   * ELU with the given alpha.
   * @throws {RangeError} When alpha is not a finite number.
   */
  constructor(/** Negative saturation: the output tends to −alpha as x → −∞. Default 1. */ readonly alpha = 1) {
    super();
    if (!Number.isFinite(alpha)) throw new RangeError(`ELU: alpha must be a finite number, got ${alpha}`);
  }
  /** ELU of every element of x (any shape). */
  forward(x: Variable): Variable {
    return elu(x, this.alpha);
  }
  /** `alpha=…`, for the module tree's printout. */
  override extraRepr(): string {
    return `alpha=${this.alpha}`;
  }
}
/**
 * log σ(x) = −softplus(−x), stable for large |x| (PyTorch's nn.LogSigmoid): the usual
 * head of a binary log-likelihood or of word2vec's negative sampling.
 * @example
 * ```ts
 * import { Device } from "../gpu/mod.ts";
 * import { Variable } from "../autograd/mod.ts";
 * import { fromArray } from "../tensor/mod.ts";
 * import { LogSigmoid } from "./activation.ts";
 * await Device.request();
 * const y = new LogSigmoid().forward(new Variable(fromArray([0])));
 * if (Math.abs((await y.data.toArray())[0] + Math.LN2) > 1e-6) throw new Error("log σ(0) is -ln 2");
 * ```
 */
export class LogSigmoid extends Module {
  /** log σ of every element of x (any shape), all ≤ 0. */
  forward(x: Variable): Variable {
    return logSigmoid(x);
  }
}
/** Self-normalizing ELU with the fixed alpha and scale of Klambauer et al. (PyTorch's nn.SELU). */
export class SELU extends Module {
  /** SELU of every element of x (any shape): scale·elu(x, alpha), scale ≈ 1.0507, alpha ≈ 1.6733. */
  forward(x: Variable): Variable {
    return selu(x);
  }
}
/** x·tanh(softplus(x)) (PyTorch's nn.Mish). */
export class Mish extends Module {
  /** Mish of every element of x (any shape). */
  forward(x: Variable): Variable {
    return mish(x);
  }
}
/** x·relu6(x + 3)/6 (PyTorch's nn.Hardswish). */
export class Hardswish extends Module {
  /** Hardswish of every element of x (any shape). */
  forward(x: Variable): Variable {
    return hardswish(x);
  }
}
/** relu6(x + 3)/6 (PyTorch's nn.Hardsigmoid). */
export class Hardsigmoid extends Module {
  /** Hardsigmoid of every element of x (any shape), in [0, 1]. */
  forward(x: Variable): Variable {
    return hardsigmoid(x);
  }
}
/**
 * x for x > 0, a·x otherwise, with the slope `a` learned: one per channel (dim 1 of the
 * input) when `numParameters` is the channel count, or one shared when it is 1
 * (PyTorch's nn.PReLU: `weight` [numParameters], every entry `init`).
 * @throws {RangeError} When numParameters is not a positive integer; from forward, when
 * numParameters > 1 and the input's dim 1 differs.
 */
export class PReLU extends Module {
  /** The learned slopes a, [numParameters] (PyTorch's `weight`), every entry `init` at first. */
  readonly weight: Parameter;
  // NOTE: the count is not kept as a field: Module.numParameters() is the element count.
  /**
   * `numParameters` slopes (1, shared, by default; else the input's channel count), each
   * starting at `init` (default 0.25, as PyTorch), on `options.device` (default `Device.default`).
   */
  constructor(numParameters = 1, init = 0.25, options: { device?: Device } = {}) {
    super();
    if (!Number.isInteger(numParameters) || numParameters < 1) {
      throw new RangeError(`PReLU: numParameters must be an integer >= 1, got ${numParameters}`);
    }
    const device = options.device ?? Device.default;
    this.weight = new Parameter(T.full([numParameters], init, { device }), "weight");
  }
  /** PReLU of x: one slope for all, or slope c for channel c of dim 1 (x [N, C, *]); x's shape. */
  forward(x: Variable): Variable {
    return prelu(x, this.weight);
  }
  /** `numParameters=…`, the slope count, for the module tree's printout. */
  override extraRepr(): string {
    return `numParameters=${this.weight.data.numel}`;
  }
}

/**
 * The activation a Linear's store can apply in place of `m` (its exact class, so an
 * overridden forward is always called): ReLU, GELU (exact or tanh), Tanh, Sigmoid, SiLU; else
 * undefined. Sequential and `Linear.forwardThen` fuse through it.
 * @example
 * ```ts
 * import { fusedActivation, GELU, ReLU, LeakyReLU } from "./activation.ts";
 * if (fusedActivation(new GELU("tanh")) !== "geluTanh" || fusedActivation(new ReLU()) !== "relu") throw new Error("rule");
 * if (fusedActivation(new LeakyReLU()) !== undefined) throw new Error("rule");
 * ```
 */
export function fusedActivation(m: Module | undefined): T.Activation | undefined {
  switch (m?.constructor) {
    case ReLU:
      return "relu";
    case GELU:
      return (m as GELU).approximate === "tanh" ? "geluTanh" : "gelu";
    case Tanh:
      return "tanh";
    case Sigmoid:
      return "sigmoid";
    case SiLU:
      return "silu";
  }
  return undefined;
}
