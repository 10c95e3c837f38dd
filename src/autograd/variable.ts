import * as T from "../tensor/mod.ts";
import { fmt, type OpDef, sameShape, type Shape, type Tensor } from "../tensor/mod.ts";
import { isGradEnabled, runBackward, type TapeNode } from "./tape.ts";

/**
 * The seed 1 of a scalar's backward, kept per device and shape: filling a fresh one was a
 * launch in every training step. Safe to share: no backward writes its output gradient (they
 * return new tensors, and leaves copy or accumulate into their own).
 */
const seeds = new WeakMap<object, Map<string, Tensor>>();
function unitSeed(like: Tensor): Tensor {
  const byShape = seeds.get(like.device) ?? new Map<string, Tensor>();
  seeds.set(like.device, byShape);
  const key = like.shape.join(",");
  let t = byShape.get(key);
  if (!t || t.released) byShape.set(key, t = T.ones(like.shape, { device: like.device }).keep());
  return t;
}

/** The op that made a variable, its inputs and what it saved for backward. */
export type VariableNode = TapeNode<Variable>;

/**
 * Apply an op to variables: run its forward and, when a gradient is wanted, record it.
 * This is the only place the tape grows.
 */
export function apply<A>(op: OpDef<A>, inputs: readonly Variable[], attrs: A): Variable {
  const tensors = inputs.map((v) => v.data);
  const res = op.forward(tensors, attrs);
  const track = isGradEnabled() && op.backward !== undefined && inputs.some((v) => v.requiresGrad);
  if (!track) return new Variable(res.output, false);
  const node: VariableNode = { op, attrs, inputs, saved: res.saved ?? [], output: res.output };
  for (const v of inputs) v.uses++;
  return new Variable(res.output, true, node);
}

/** A Variable, or a number that becomes a constant scalar on the other operand's device. */
export type Operand = Variable | number;

const NO_ATTRS = {};

/**
 * A tensor in the autograd graph: its data, its gradient (`grad`, accumulated by
 * {@link backward} into leaves that require one) and the node that made it.
 *
 * Every method records its op on the tape (when a gradient is wanted) and returns a
 * new Variable; the math lives in the ops of `src/tensor/ops/`.
 */
export class Variable {
  /** The values. */
  data: Tensor;
  /** Accumulated gradient (leaves only), a kept tensor; `null` until the first backward. */
  grad: Tensor | null = null;
  /**
   * Where backward puts a leaf's first gradient instead of a fresh tensor: a kept view into
   * an optimizer group's flat gradient buffer (set by a `foreach` optimizer), so the group's
   * update is one dispatch. `null`: a fresh tensor.
   */
  gradHome: Tensor | null = null;
  /** Whether gradients flow to this variable. */
  readonly requiresGrad: boolean;
  /** The op that produced it, `null` for leaves. */
  readonly node: VariableNode | null;
  /** Optional name (parameters). */
  name?: string;
  /**
   * Recorded ops that took this variable as an input (twice for x + x): backward tells an op
   * whether it is the only consumer (`OpContext.sole`), so a fused kernel may take the
   * gradient through the producer's activation only when no other gradient joins it.
   */
  uses = 0;

  constructor(data: Tensor, requiresGrad = false, node: VariableNode | null = null) {
    this.data = data;
    this.requiresGrad = requiresGrad;
    this.node = node;
  }

  /** Shape of the data. */
  get shape(): readonly number[] {
    return this.data.shape;
  }

  /** Number of dimensions. */
  get ndim(): number {
    return this.data.ndim;
  }

  /** Leaf = not produced by a recorded op. */
  get isLeaf(): boolean {
    return this.node === null;
  }

  /** A variable over the same data, cut from the graph. */
  detach(): Variable {
    return new Variable(this.data, false);
  }

  /**
   * Accumulate d(this)/d(leaf) into every leaf's `grad`. A scalar needs no argument;
   * otherwise pass the output gradient (same shape). Calling it again adds to the
   * gradients (accumulation), until the optimizer's `zeroGrad()`.
   * @throws {RangeError} For a non-scalar without a gradient, or a gradient of another shape.
   * @throws {Error} When this variable does not require a gradient.
   */
  backward(grad?: Tensor): void {
    if (!this.requiresGrad) {
      throw new Error("backward: this variable does not require a gradient (no parameter or input with requiresGrad reaches it)");
    }
    if (!grad && this.data.numel !== 1) {
      throw new RangeError(`backward: output ${fmt(this.shape)} is not a scalar; pass its gradient`);
    }
    if (grad && !sameShape(grad.shape, this.shape)) {
      throw new RangeError(`backward: gradient ${fmt(grad.shape)} does not match output ${fmt(this.shape)}`);
    }
    runBackward(this, grad ?? unitSeed(this.data));
  }

  /** Drop the accumulated gradient. */
  zeroGrad(): void {
    this.grad?.dispose();
    this.grad = null;
  }

  /** Read the values (waits for the GPU). */
  toArray(): ReturnType<Tensor["toArray"]> {
    return this.data.toArray();
  }

  /** The single value of a one-element variable (waits for the GPU). */
  item(): Promise<number> {
    return this.data.item();
  }

  toString(): string {
    return `Variable(${fmt(this.shape)}${this.requiresGrad ? ", requiresGrad" : ""})`;
  }

  #un<A>(op: OpDef<A>, attrs: A): Variable {
    return apply(op, [this], attrs);
  }

  #bin(op: OpDef, other: Operand): Variable {
    return apply(op, [this, constant(other, this)], undefined);
  }

  // ---- arithmetic (broadcasting) ----
  add(o: Operand): Variable {
    return typeof o === "number" ? this.#un(T.affineOp, { scale: 1, shift: o }) : this.#bin(T.addOp, o);
  }
  sub(o: Operand): Variable {
    return typeof o === "number" ? this.#un(T.affineOp, { scale: 1, shift: -o }) : this.#bin(T.subOp, o);
  }
  mul(o: Operand): Variable {
    return typeof o === "number" ? this.#un(T.affineOp, { scale: o }) : this.#bin(T.mulOp, o);
  }
  div(o: Operand): Variable {
    return typeof o === "number" ? this.#un(T.affineOp, { scale: 1 / o }) : this.#bin(T.divOp, o);
  }
  pow(o: Operand): Variable {
    return typeof o === "number" ? this.#un(T.powScalarOp, { exponent: o }) : this.#bin(T.powOp, o);
  }
  maximum(o: Operand): Variable {
    return this.#bin(T.maximumOp, o);
  }
  minimum(o: Operand): Variable {
    return this.#bin(T.minimumOp, o);
  }
  neg(): Variable {
    return this.#un(T.negOp, NO_ATTRS);
  }

  // ---- comparisons (no gradient; 1 or 0) ----
  eq(o: Operand): Variable {
    return this.#bin(T.eqOp, o);
  }
  ne(o: Operand): Variable {
    return this.#bin(T.neOp, o);
  }
  lt(o: Operand): Variable {
    return this.#bin(T.ltOp, o);
  }
  le(o: Operand): Variable {
    return this.#bin(T.leOp, o);
  }
  gt(o: Operand): Variable {
    return this.#bin(T.gtOp, o);
  }
  ge(o: Operand): Variable {
    return this.#bin(T.geOp, o);
  }

  // ---- elementwise ----
  abs(): Variable {
    return this.#un(T.absOp, NO_ATTRS);
  }
  exp(): Variable {
    return this.#un(T.expOp, NO_ATTRS);
  }
  log(): Variable {
    return this.#un(T.logOp, NO_ATTRS);
  }
  sqrt(): Variable {
    return this.#un(T.sqrtOp, NO_ATTRS);
  }
  rsqrt(): Variable {
    return this.#un(T.rsqrtOp, NO_ATTRS);
  }
  tanh(): Variable {
    return this.#un(T.tanhOp, NO_ATTRS);
  }
  sigmoid(): Variable {
    return this.#un(T.sigmoidOp, NO_ATTRS);
  }
  relu(): Variable {
    return this.#un(T.reluOp, NO_ATTRS);
  }
  /** Leaky ReLU with `negativeSlope` (PyTorch default 0.01). */
  leakyRelu(negativeSlope = 0.01): Variable {
    return this.#un(T.leakyReluOp, { slope: negativeSlope });
  }
  /** GELU, exact (`"none"`, PyTorch's default) or tanh-approximate. */
  gelu(approximate: "none" | "tanh" = "none"): Variable {
    return this.#un(approximate === "tanh" ? T.geluTanhOp : T.geluOp, NO_ATTRS);
  }
  silu(): Variable {
    return this.#un(T.siluOp, NO_ATTRS);
  }
  softplus(beta = 1, threshold = 20): Variable {
    return this.#un(T.softplusOp, { beta, threshold });
  }
  clamp(min = -Infinity, max = Infinity): Variable {
    if (min > max) throw new RangeError(`clamp: min ${min} is greater than max ${max}`);
    return this.#un(T.clampOp, { lo: Math.max(min, -3.4e38), hi: Math.min(max, 3.4e38) });
  }

  // ---- reductions ----
  sum(dims?: T.Dims, keepdim = false): Variable {
    return this.#un(T.sumOp, { dims, keepdim });
  }
  mean(dims?: T.Dims, keepdim = false): Variable {
    return this.#un(T.meanOp, { dims, keepdim });
  }
  /** Variance with `correction` (1 = unbiased, PyTorch's default). */
  var(dims?: T.Dims, keepdim = false, correction = 1): Variable {
    return this.#un(T.varOp, { dims, keepdim, correction });
  }
  max(dims?: T.Dims, keepdim = false): Variable {
    return this.#un(T.maxOp, { dims, keepdim });
  }
  min(dims?: T.Dims, keepdim = false): Variable {
    return this.#un(T.minOp, { dims, keepdim });
  }
  /** Index of the max along `dim` (a plain i32 tensor; no gradient). */
  argmax(dim?: number, keepdim = false): Tensor {
    return T.argmax(this.data, dim, keepdim);
  }

  // ---- shape ----
  reshape(shape: Shape): Variable {
    return this.#un(T.reshapeOp, { shape });
  }
  /** Alias of {@link reshape} (PyTorch's `view`; our tensors are always contiguous). */
  view(shape: Shape): Variable {
    return this.reshape(shape);
  }
  flatten(startDim = 0, endDim = -1): Variable {
    return this.#un(T.flattenOp, { startDim, endDim });
  }
  squeeze(dim?: number | readonly number[]): Variable {
    return this.#un(T.squeezeOp, { dim });
  }
  unsqueeze(dim: number): Variable {
    return this.#un(T.unsqueezeOp, { dim });
  }
  permute(dims: readonly number[]): Variable {
    return this.#un(T.permuteOp, { dims });
  }
  transpose(dim0: number, dim1: number): Variable {
    return this.#un(T.transposeOp, { dim0, dim1 });
  }
  /** Transpose of a 2-D variable. */
  get t(): Variable {
    return this.transpose(0, 1);
  }
  narrow(dim: number, start: number, length: number): Variable {
    return this.#un(T.narrowOp, { dim, start, length });
  }
  expand(shape: Shape): Variable {
    return this.#un(T.expandOp, { shape });
  }
  indexSelect(dim: number, index: Tensor): Variable {
    return apply(T.indexSelectOp, [this, new Variable(index)], { dim });
  }
  gather(dim: number, index: Tensor): Variable {
    return apply(T.gatherOp, [this, new Variable(index)], { dim });
  }
}

/** A number as a constant scalar Variable on `like`'s device (variables pass through). */
export function constant(o: Operand, like: Variable): Variable {
  return typeof o === "number" ? new Variable(T.full([], o, { device: like.data.device })) : o;
}

/** A Variable over a tensor (a constant unless `requiresGrad`); variables pass through. */
export function variable(x: Tensor | Variable, requiresGrad = false): Variable {
  return x instanceof Variable ? x : new Variable(x, requiresGrad);
}

/** Concatenate along `dim`. */
export function cat(vars: readonly Variable[], dim = 0): Variable {
  return apply(T.catOp, vars, { dim });
}

/** Stack along a new `dim`. */
export function stack(vars: readonly Variable[], dim = 0): Variable {
  return apply(T.stackOp, vars, { dim });
}

/** Elements of `a` where `cond` is non-zero, else of `b` (all broadcast); gradients flow to a and b. */
export function where(cond: Tensor, a: Operand, b: Operand): Variable {
  const like = a instanceof Variable ? a : b instanceof Variable ? b : undefined;
  if (!like) return new Variable(T.where(cond, a as number, b as number));
  return apply(T.whereOp, [constant(a, like), constant(b, like), new Variable(cond)], undefined);
}
