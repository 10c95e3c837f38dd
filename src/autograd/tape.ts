import { accumulate, clone, type OpDef, type Tensor } from "../tensor/mod.ts";
import { Variable } from "./variable.ts";

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

/** Walk the tape from `root` with output gradient `seed`, accumulating into leaves. */
export function runBackward(root: Variable, seed: Tensor): void {
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
