import { accumulate, clone, fmt, ones, type OpDef, sameShape, type Tensor } from "../tensor/mod.ts";

/**
 * The autograd tape: which op made a value and what it saved. It holds no op-specific
 * math (STYLE.md practice 1); the ops' own backward functions do.
 */
export interface Node {
  readonly op: OpDef<any>;
  readonly attrs: unknown;
  readonly inputs: readonly Variable[];
  readonly saved: readonly Tensor[];
  readonly output: Tensor;
}

const GRAD_KEY = Symbol.for("flodl-webgpu.gradEnabled");
const state = globalThis as { [k: symbol]: boolean | undefined };

/** True unless inside {@link noGrad}. */
export function isGradEnabled(): boolean {
  return state[GRAD_KEY] !== false;
}

/**
 * Run `fn` without recording the tape (inference, parameter updates by hand). Results
 * do not require gradients. Works with sync and async functions.
 */
export function noGrad<T>(fn: () => T): T {
  const prev = state[GRAD_KEY];
  state[GRAD_KEY] = false;
  let result: T;
  try {
    result = fn();
  } catch (e) {
    state[GRAD_KEY] = prev;
    throw e;
  }
  if (result instanceof Promise) {
    return result.finally(() => (state[GRAD_KEY] = prev)) as T;
  }
  state[GRAD_KEY] = prev;
  return result;
}

/**
 * A tensor in the autograd graph: its data, its gradient (`grad`, accumulated by
 * {@link backward} into leaves that require one) and the node that made it.
 */
export class Variable {
  /** The values. */
  data: Tensor;
  /** Accumulated gradient (leaves only), a kept tensor; `null` until the first backward. */
  grad: Tensor | null = null;
  /** Whether gradients flow to this variable. */
  readonly requiresGrad: boolean;
  /** The op that produced it, `null` for leaves. */
  readonly node: Node | null;
  /** Optional name (parameters). */
  name?: string;

  constructor(data: Tensor, requiresGrad = false, node: Node | null = null) {
    this.data = data;
    this.requiresGrad = requiresGrad;
    this.node = node;
  }

  /** Shape of the data. */
  get shape(): readonly number[] {
    return this.data.shape;
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
   * otherwise pass the output gradient (same shape).
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
    runBackward(this, grad ?? ones(this.shape, { device: this.data.device }));
  }

  /** Zero (drop) the accumulated gradient. */
  zeroGrad(): void {
    this.grad?.dispose();
    this.grad = null;
  }

  toString(): string {
    return `Variable(${fmt(this.shape)}${this.requiresGrad ? ", requiresGrad" : ""})`;
  }
}

/**
 * Apply an op to variables: run its forward and, when a gradient is wanted, record it.
 * This is the only place the tape grows.
 */
export function apply<A>(op: OpDef<A>, inputs: readonly Variable[], attrs: A): Variable {
  const tensors = inputs.map((v) => v.data);
  const res = op.forward(tensors, attrs);
  const track = isGradEnabled() && op.backward !== undefined && inputs.some((v) => v.requiresGrad);
  if (!track) return new Variable(res.output, false);
  const node: Node = { op, attrs, inputs, saved: res.saved ?? [], output: res.output };
  return new Variable(res.output, true, node);
}

function topoOrder(root: Variable): Variable[] {
  const order: Variable[] = [];
  const seen = new Set<Variable>();
  const stack: [Variable, number][] = [[root, 0]];
  while (stack.length) {
    const top = stack[stack.length - 1];
    const [v, i] = top;
    if (i === 0) {
      if (seen.has(v)) {
        stack.pop();
        continue;
      }
      seen.add(v);
    }
    const inputs = v.node?.inputs ?? [];
    if (i < inputs.length) {
      top[1]++;
      const next = inputs[i];
      if (next.requiresGrad && !seen.has(next)) stack.push([next, 0]);
    } else {
      stack.pop();
      order.push(v);
    }
  }
  return order.reverse();
}

function runBackward(root: Variable, seed: Tensor): void {
  const grads = new Map<Variable, Tensor>([[root, seed]]);
  for (const v of topoOrder(root)) {
    const g = grads.get(v);
    if (!g) continue;
    grads.delete(v);
    const node = v.node;
    if (!node) {
      if (v.grad) accumulate(v.grad, g);
      else v.grad = clone(g).keep();
      continue;
    }
    const ins = node.op.backward!(g, {
      shapes: node.inputs.map((x) => x.shape),
      needs: node.inputs.map((x) => x.requiresGrad),
      saved: node.saved,
      output: node.output,
      attrs: node.attrs,
    });
    node.inputs.forEach((input, i) => {
      const gi = ins[i];
      if (!gi || !input.requiresGrad) return;
      const prev = grads.get(input);
      if (!prev) grads.set(input, gi);
      else {
        // Accumulate into a fresh copy: `prev` may be another op's output or saved tensor
        // (or `gi` itself, for x + x).
        const sum = clone(prev);
        accumulate(sum, gi);
        grads.set(input, sum);
      }
    });
  }
}
