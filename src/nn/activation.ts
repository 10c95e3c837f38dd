/** Activation modules (PyTorch names), each a thin Module over a Variable method or a functional form. */
import { Parameter, type Variable } from "../autograd/mod.ts";
import { Device } from "../gpu/mod.ts";
import * as T from "../tensor/mod.ts";
import { Module } from "./module.ts";
import { elu, hardsigmoid, hardswish, logSigmoid, logSoftmax, mish, prelu, selu, softmax } from "./functional.ts";

export class ReLU extends Module {
  forward(x: Variable): Variable {
    return x.relu();
  }
}
export class LeakyReLU extends Module {
  constructor(readonly negativeSlope = 0.01) {
    super();
  }
  forward(x: Variable): Variable {
    return x.leakyRelu(this.negativeSlope);
  }
}
export class GELU extends Module {
  constructor(readonly approximate: "none" | "tanh" = "none") {
    super();
  }
  forward(x: Variable): Variable {
    return x.gelu(this.approximate);
  }
}
export class SiLU extends Module {
  forward(x: Variable): Variable {
    return x.silu();
  }
}
export class Sigmoid extends Module {
  forward(x: Variable): Variable {
    return x.sigmoid();
  }
}
export class Tanh extends Module {
  forward(x: Variable): Variable {
    return x.tanh();
  }
}
export class Softplus extends Module {
  constructor(readonly beta = 1, readonly threshold = 20) {
    super();
  }
  forward(x: Variable): Variable {
    return x.softplus(this.beta, this.threshold);
  }
}
export class Softmax extends Module {
  constructor(readonly dim = -1) {
    super();
  }
  forward(x: Variable): Variable {
    return softmax(x, this.dim);
  }
}
export class LogSoftmax extends Module {
  constructor(readonly dim = -1) {
    super();
  }
  forward(x: Variable): Variable {
    return logSoftmax(x, this.dim);
  }
}
export class Identity extends Module {
  forward(x: Variable): Variable {
    return x;
  }
}
/** x for x > 0, alpha·(eˣ − 1) otherwise (PyTorch's nn.ELU, alpha 1). */
export class ELU extends Module {
  constructor(readonly alpha = 1) {
    super();
    if (!Number.isFinite(alpha)) throw new RangeError(`ELU: alpha must be a finite number, got ${alpha}`);
  }
  forward(x: Variable): Variable {
    return elu(x, this.alpha);
  }
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
  forward(x: Variable): Variable {
    return logSigmoid(x);
  }
}
/** Self-normalizing ELU with the fixed alpha and scale of Klambauer et al. (PyTorch's nn.SELU). */
export class SELU extends Module {
  forward(x: Variable): Variable {
    return selu(x);
  }
}
/** x·tanh(softplus(x)) (PyTorch's nn.Mish). */
export class Mish extends Module {
  forward(x: Variable): Variable {
    return mish(x);
  }
}
/** x·relu6(x + 3)/6 (PyTorch's nn.Hardswish). */
export class Hardswish extends Module {
  forward(x: Variable): Variable {
    return hardswish(x);
  }
}
/** relu6(x + 3)/6 (PyTorch's nn.Hardsigmoid). */
export class Hardsigmoid extends Module {
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
  readonly weight: Parameter;
  // NOTE: the count is not kept as a field: Module.numParameters() is the element count.
  constructor(numParameters = 1, init = 0.25, options: { device?: Device } = {}) {
    super();
    if (!Number.isInteger(numParameters) || numParameters < 1) {
      throw new RangeError(`PReLU: numParameters must be an integer >= 1, got ${numParameters}`);
    }
    const device = options.device ?? Device.default;
    this.weight = new Parameter(T.full([numParameters], init, { device }), "weight");
  }
  forward(x: Variable): Variable {
    return prelu(x, this.weight);
  }
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
