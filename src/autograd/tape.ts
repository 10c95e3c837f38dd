import { accumulate, clone, type OpDef, type Tensor } from "../tensor/mod.ts";

/**
 * The autograd tape: which op made a value and what it saved. It holds no op-specific
 * math; the ops' own backward functions do.
 *
 * The tape walks values through {@link TapeValue}, the part of a `Variable` it reads, so it
 * imports nothing from `variable.ts` (which records onto it through `apply`): no cycle.
 */
export interface TapeNode<V> {
  /** The op that ran; its `backward` turns the output gradient into the inputs'. */
  readonly op: OpDef<any>;
  /** The attributes the op ran with (passed back to its backward as `ctx.attrs`). */
  readonly attrs: unknown;
  /** The op's inputs, in order (the values gradients flow back to). */
  readonly inputs: readonly V[];
  /** Tensors the forward saved for the backward (`OpResult.saved`; empty when none). */
  readonly saved: readonly Tensor[];
  /** The forward's output tensor (the data of the variable this node made). */
  readonly output: Tensor;
}

/** What the backward walk reads and writes of a value (a `Variable`). */
export interface TapeValue {
  grad: Tensor | null;
  /** A leaf's gradient home (see Variable.gradHome), or null. */
  readonly gradHome: Tensor | null;
  readonly requiresGrad: boolean;
  /** Recorded ops that consume it (see Variable.uses). */
  readonly uses: number;
  readonly node: TapeNode<TapeValue> | null;
  readonly shape: readonly number[];
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

function topoOrder(root: TapeValue): TapeValue[] {
  const order: TapeValue[] = [];
  const seen = new Set<TapeValue>();
  const stack: [TapeValue, number][] = [[root, 0]];
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

/** Copy `g` into the leaf's gradient home; the gradient is a new kept view of the home. */
function moveInto(home: Tensor, g: Tensor): Tensor {
  const there = g.buffer === home.buffer && g.byteOffset === home.byteOffset; // the op wrote it there
  if (!there) home.device.copy(g.buffer, g.byteOffset, home.buffer, home.byteOffset, home.byteLength);
  return home.reshape(home.shape).keep();
}

/** Walk the tape from `root` with output gradient `seed`, accumulating into leaves. */
export function runBackward(root: TapeValue, seed: Tensor): void {
  const grads = new Map<TapeValue, Tensor>([[root, seed]]);
  // Values whose whole gradient so far is one that its consumer already passed through the
  // value's producer's first backward step (OpContext.folded): a second contribution unmarks it.
  const folded = new Set<TapeValue>();
  for (const v of topoOrder(root)) {
    const g = grads.get(v);
    if (!g) continue;
    grads.delete(v);
    const node = v.node;
    if (!node) {
      if (v.grad) accumulate(v.grad, g);
      else if (v.gradHome) v.grad = moveInto(v.gradHome, g);
      else v.grad = clone(g).keep();
      continue;
    }
    const ins = node.op.backward!(g, {
      shapes: node.inputs.map((x) => x.shape),
      needs: node.inputs.map((x) => x.requiresGrad),
      saved: node.saved,
      output: node.output,
      attrs: node.attrs,
      sole: node.inputs.map((x) => x.uses === 1),
      producers: node.inputs.map((x) => x.node),
      folded: folded.has(v),
      // A leaf's first gradient may go straight to its home (an unused home: no grad yet and
      // no contribution so far this backward; a later one is summed into a fresh tensor).
      into: node.inputs.map((x, i) =>
        x.node === null && !x.grad && !grads.has(x) && node.inputs.indexOf(x) === i ? x.gradHome : null
      ),
    });
    node.inputs.forEach((input, i) => {
      const gi = ins[i];
      if (!gi || !input.requiresGrad) return;
      const prev = grads.get(input);
      if (!prev) {
        grads.set(input, gi);
        if (ins.folded?.[i]) folded.add(input);
      } else {
        folded.delete(input);
        // Accumulate into a fresh copy: `prev` may be another op's output or saved tensor
        // (or `gi` itself, for x + x).
        const sum = clone(prev);
        accumulate(sum, gi);
        grads.set(input, sum);
      }
    });
  }
}
