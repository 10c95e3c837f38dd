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

  /** Wrap `data` (not copied); `node` is the op that made it (set by {@link apply}), `null` for a leaf. */
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

  /** `Variable([2, 3])`, with `, requiresGrad` when gradients flow to it. */
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
  /** Elementwise `this + o` with broadcasting (a number adds a constant). */
  add(o: Operand): Variable {
    return typeof o === "number" ? this.#un(T.affineOp, { scale: 1, shift: o }) : this.#bin(T.addOp, o);
  }
  /** Elementwise `this − o` with broadcasting. */
  sub(o: Operand): Variable {
    return typeof o === "number" ? this.#un(T.affineOp, { scale: 1, shift: -o }) : this.#bin(T.subOp, o);
  }
  /** Elementwise `this · o` with broadcasting (a number scales). */
  mul(o: Operand): Variable {
    return typeof o === "number" ? this.#un(T.affineOp, { scale: o }) : this.#bin(T.mulOp, o);
  }
  /** Elementwise `this / o` with broadcasting (a number scales by 1/o). */
  div(o: Operand): Variable {
    return typeof o === "number" ? this.#un(T.affineOp, { scale: 1 / o }) : this.#bin(T.divOp, o);
  }
  /** Elementwise `this ** o` with broadcasting (a number is a scalar exponent). */
  pow(o: Operand): Variable {
    return typeof o === "number" ? this.#un(T.powScalarOp, { exponent: o }) : this.#bin(T.powOp, o);
  }
  /** Elementwise maximum with broadcasting (torch.maximum). */
  maximum(o: Operand): Variable {
    return this.#bin(T.maximumOp, o);
  }
  /** Elementwise minimum with broadcasting (torch.minimum). */
  minimum(o: Operand): Variable {
    return this.#bin(T.minimumOp, o);
  }
  /** Elementwise −x. */
  neg(): Variable {
    return this.#un(T.negOp, NO_ATTRS);
  }

  // ---- comparisons (no gradient; 1 or 0) ----
  /** 1 where `this == o`, else 0 (broadcasting; no gradient). */
  eq(o: Operand): Variable {
    return this.#bin(T.eqOp, o);
  }
  /** 1 where `this != o`, else 0 (broadcasting; no gradient). */
  ne(o: Operand): Variable {
    return this.#bin(T.neOp, o);
  }
  /** 1 where `this < o`, else 0 (broadcasting; no gradient). */
  lt(o: Operand): Variable {
    return this.#bin(T.ltOp, o);
  }
  /** 1 where `this <= o`, else 0 (broadcasting; no gradient). */
  le(o: Operand): Variable {
    return this.#bin(T.leOp, o);
  }
  /** 1 where `this > o`, else 0 (broadcasting; no gradient). */
  gt(o: Operand): Variable {
    return this.#bin(T.gtOp, o);
  }
  /** 1 where `this >= o`, else 0 (broadcasting; no gradient). */
  ge(o: Operand): Variable {
    return this.#bin(T.geOp, o);
  }

  // ---- elementwise ----
  /** Elementwise |x|. */
  abs(): Variable {
    return this.#un(T.absOp, NO_ATTRS);
  }
  /** Elementwise eˣ. */
  exp(): Variable {
    return this.#un(T.expOp, NO_ATTRS);
  }
  /** Elementwise natural logarithm. */
  log(): Variable {
    return this.#un(T.logOp, NO_ATTRS);
  }
  /** Elementwise square root. */
  sqrt(): Variable {
    return this.#un(T.sqrtOp, NO_ATTRS);
  }
  /** Elementwise 1/√x. */
  rsqrt(): Variable {
    return this.#un(T.rsqrtOp, NO_ATTRS);
  }
  /** Elementwise tanh. */
  tanh(): Variable {
    return this.#un(T.tanhOp, NO_ATTRS);
  }
  /** Elementwise logistic sigmoid. */
  sigmoid(): Variable {
    return this.#un(T.sigmoidOp, NO_ATTRS);
  }
  /** Elementwise max(x, 0). */
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
  /** SiLU (swish), x·σ(x). */
  silu(): Variable {
    return this.#un(T.siluOp, NO_ATTRS);
  }
  /** Softplus with PyTorch's `beta` (1) and `threshold` (20, linear above it). */
  softplus(beta = 1, threshold = 20): Variable {
    return this.#un(T.softplusOp, { beta, threshold });
  }
  /**
   * Clamp into `[min, max]` (either bound may be ±Infinity; bounds are capped at ±3.4e38).
   * @throws {RangeError} When `min` is greater than `max`.
   */
  clamp(min = -Infinity, max = Infinity): Variable {
    if (min > max) throw new RangeError(`clamp: min ${min} is greater than max ${max}`);
    return this.#un(T.clampOp, { lo: Math.max(min, -3.4e38), hi: Math.min(max, 3.4e38) });
  }

  // ---- reductions ----
  /** Sum over `dims` (all when omitted); `keepdim` keeps them as size 1. */
  sum(dims?: T.Dims, keepdim = false): Variable {
    return this.#un(T.sumOp, { dims, keepdim });
  }
  /** Mean over `dims` (all when omitted); `keepdim` keeps them as size 1. */
  mean(dims?: T.Dims, keepdim = false): Variable {
    return this.#un(T.meanOp, { dims, keepdim });
  }
  /** Variance with `correction` (1 = unbiased, PyTorch's default). */
  var(dims?: T.Dims, keepdim = false, correction = 1): Variable {
    return this.#un(T.varOp, { dims, keepdim, correction });
  }
  /** Max over `dims` (all when omitted), values only (no indices; see {@link argmax}). */
  max(dims?: T.Dims, keepdim = false): Variable {
    return this.#un(T.maxOp, { dims, keepdim });
  }
  /** Min over `dims` (all when omitted), values only (no indices). */
  min(dims?: T.Dims, keepdim = false): Variable {
    return this.#un(T.minOp, { dims, keepdim });
  }
  /** Index of the max along `dim` (a plain i32 tensor; no gradient). */
  argmax(dim?: number, keepdim = false): Tensor {
    return T.argmax(this.data, dim, keepdim);
  }

  // ---- shape ----
  /** View with another shape (one -1 inferred), as PyTorch `reshape`. */
  reshape(shape: Shape): Variable {
    return this.#un(T.reshapeOp, { shape });
  }
  /** Alias of {@link reshape} (PyTorch's `view`; our tensors are always contiguous). */
  view(shape: Shape): Variable {
    return this.reshape(shape);
  }
  /** Dims `startDim..endDim` (inclusive, default all) merged into one, as PyTorch `flatten`. */
  flatten(startDim = 0, endDim = -1): Variable {
    return this.#un(T.flattenOp, { startDim, endDim });
  }
  /** Without size-1 dims: all of them, or those among `dim` (others stay, as PyTorch). */
  squeeze(dim?: number | readonly number[]): Variable {
    return this.#un(T.squeezeOp, { dim });
  }
  /** With a size-1 dim inserted at `dim` (-(ndim+1)..ndim). */
  unsqueeze(dim: number): Variable {
    return this.#un(T.unsqueezeOp, { dim });
  }
  /** Dims reordered (a copy): output dim k is input dim `dims[k]`. Up to 6 strided dims. */
  permute(dims: readonly number[]): Variable {
    return this.#un(T.permuteOp, { dims });
  }
  /** `dim0` and `dim1` swapped (a copy), as PyTorch `transpose`. */
  transpose(dim0: number, dim1: number): Variable {
    return this.#un(T.transposeOp, { dim0, dim1 });
  }
  /** Transpose of a 2-D variable. */
  get t(): Variable {
    return this.transpose(0, 1);
  }
  /** Entries `start..start+length` along `dim` (a copy; a negative start counts from the end). */
  narrow(dim: number, start: number, length: number): Variable {
    return this.#un(T.narrowOp, { dim, start, length });
  }
  /** Broadcast to `shape` and materialized (-1 keeps a size; new dims may lead), as PyTorch `expand`. */
  expand(shape: Shape): Variable {
    return this.#un(T.expandOp, { shape });
  }
  /**
   * Entries along `dim` at the positions in `index` (i32, 1-D), as torch.index_select; out-of-range
   * indices give zeros (not detected). Gradients flow to this variable only.
   */
  indexSelect(dim: number, index: Tensor): Variable {
    return apply(T.indexSelectOp, [this, new Variable(index)], { dim });
  }
  /**
   * torch.gather along `dim` with an i32 `index` of this variable's rank; the output has the index's shape.
   * Out-of-range indices give 0 (not detected). Gradients flow to this variable only.
   */
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
