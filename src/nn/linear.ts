/** Linear: the fully connected layer, with its fused activation and residual forms. */
import { apply, Parameter, type Variable } from "../autograd/mod.ts";
import { Device } from "../gpu/mod.ts";
import * as T from "../tensor/mod.ts";
import { nextSeed } from "../tensor/mod.ts";
import { fusedActivation } from "./activation.ts";
import { Dropout } from "./dropout.ts";
import { initDefault } from "./init.ts";
import { checkPositiveInt, type LayerOptions } from "./layer_options.ts";
import { Module } from "./module.ts";

/** y = x·Wᵀ + b, W [out, in] (PyTorch's nn.Linear, its default init U(±1/√in)). */
export class Linear extends Module {
  /** W [outFeatures, inFeatures] (PyTorch's `weight`); default init U(±1/√in). */
  readonly weight: Parameter;
  /** b [outFeatures] (PyTorch's `bias`), init U(±1/√in); absent when built with `bias: false`. */
  readonly bias?: Parameter;
  /**
   * A Linear on `options.device`, initialised as PyTorch (seeded by `options.seed`); `bias`
   * defaults to true.
   * @throws {RangeError} When inFeatures or outFeatures is not an integer >= 1.
   */
  constructor(
    /** Size of each input row: the last dim of x. */
    readonly inFeatures: number,
    /** Size of each output row: the last dim of y. */
    readonly outFeatures: number,
    options: LayerOptions & { bias?: boolean } = {},
  ) {
    super();
    checkPositiveInt("Linear", "inFeatures", inFeatures);
    checkPositiveInt("Linear", "outFeatures", outFeatures);
    const device = options.device ?? Device.default;
    this.weight = new Parameter(T.zeros([outFeatures, inFeatures], { device }), "weight");
    if (options.bias !== false) this.bias = new Parameter(T.zeros([outFeatures], { device }), "bias");
    initDefault(this.weight, this.bias, options.seed);
  }
  /**
   * x·Wᵀ + b: x [..., inFeatures] to [..., outFeatures].
   * @throws {RangeError} When the last dim of x is not inFeatures.
   */
  forward(x: Variable): Variable {
    return apply(T.linearOp, this.#inputs(x), undefined);
  }
  /** relu(this.forward(x)) in one dispatch (`T.linearReluOp`); what Sequential runs for Linear → ReLU. */
  forwardRelu(x: Variable): Variable {
    return this.forwardAct(x, "relu");
  }
  /**
   * act(this.forward(x)) in one dispatch (`T.linearActOps[act]`): the activation runs in the
   * matmul's store, and its gradient folds into the next Linear's dx product when that Linear
   * consumes the output directly. What Sequential runs for Linear → ReLU/GELU/Tanh/Sigmoid/SiLU.
   */
  forwardAct(x: Variable, act: T.Activation): Variable {
    return apply(T.linearActOps[act], this.#inputs(x), undefined);
  }
  /**
   * then.forward(this.forward(x)), fused into one dispatch when `then` is an activation the
   * store can apply (`fusedActivation`: ReLU, GELU, Tanh, Sigmoid, SiLU), for models that call
   * their layers by hand (`ff_up.forwardThen(x, gelu)` in a transformer block).
   */
  forwardThen(x: Variable, then: Module): Variable {
    const act = fusedActivation(then);
    return act ? this.forwardAct(x, act) : then.forward(this.forward(x));
  }
  /**
   * res + drop.forward(this.forward(x)) in one dispatch (`T.linearResidualOp`: the dropout
   * mask and the residual add run in the matmul's store; dropout draws its seed as
   * `Dropout.forward` would, so the stream and the mask are the same). A `drop` of another
   * class than `Dropout` runs unfused. A transformer block's `x + drop(ff_down(h))`.
   * @throws {RangeError} When res does not have the output's shape.
   */
  forwardResidual(x: Variable, res: Variable, drop?: Module): Variable {
    if (drop && drop.constructor !== Dropout) return res.add(drop.forward(this.forward(x)));
    const d = drop as Dropout | undefined;
    const dropout = d && d.training && d.p > 0 ? { p: d.p, training: true, seed: nextSeed() } : null;
    return apply(T.linearResidualOp, [...this.#inputs(x), res], { bias: !!this.bias, dropout });
  }
  #inputs(x: Variable): Variable[] {
    const last = x.shape[x.shape.length - 1];
    if (last !== this.inFeatures) {
      throw new RangeError(`Linear(${this.inFeatures}, ${this.outFeatures}): input [${x.shape}] has ${last} features, expected ${this.inFeatures}`);
    }
    return this.bias ? [x, this.weight, this.bias] : [x, this.weight];
  }
  /** `in, out, bias=…`, for the module tree's printout. */
  override extraRepr(): string {
    return `${this.inFeatures}, ${this.outFeatures}, bias=${!!this.bias}`;
  }
}
