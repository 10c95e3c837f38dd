/**
 * Shared helpers of the optimizer GPU tests: seeded problems (parameters of odd shapes and
 * a gradient per step), running an optimizer and its f64 reference side by side, and the
 * comparison of parameters and state. Not a test file itself.
 */
import { Parameter } from "../../../src/autograd/mod.ts";
import type { Device } from "../../../src/gpu/mod.ts";
import type { Optimizer } from "../../../src/optim/mod.ts";
import { fromArray } from "../../../src/tensor/mod.ts";
import type { RefState } from "../../reference/optim.ts";
import { assertEquals, assertRelClose } from "../../util/assert.ts";
import { count, mulberry32, randn } from "../../util/random.ts";

/** Odd shapes: below, around and above one 256-thread workgroup. */
export const SHAPES: number[][] = [[7], [33, 7], [3, 5, 3], [257]];

/** Initial parameters and one gradient per step per parameter (f32 values). */
export interface Problem {
  shapes: number[][];
  p0: Float32Array<ArrayBuffer>[];
  /** grads[step][param] */
  grads: Float32Array<ArrayBuffer>[][];
}

export function problem(seed: number, steps = 5, gradScale = 1, shapes = SHAPES): Problem {
  const rng = mulberry32(seed);
  const p0 = shapes.map((s) => randn(count(s), rng));
  const grads = Array.from({ length: steps }, () => shapes.map((s) => randn(count(s), rng, gradScale)));
  return { shapes, p0, grads };
}

export function parametersOf(pr: Problem): Parameter[] {
  return pr.p0.map((p, i) => new Parameter(fromArray(p, pr.shapes[i]), `p${i}`));
}

/** Replace every parameter's gradient (kept tensors, uploaded without a submit). */
export function setGrads(params: Parameter[], grads: Float32Array<ArrayBuffer>[]): void {
  params.forEach((p, i) => {
    p.zeroGrad();
    p.grad = fromArray(grads[i], p.shape).keep();
  });
}

/** Free what a test kept. */
export function release(params: Parameter[], opt?: Optimizer<any>): void {
  opt?.resetState();
  for (const p of params) {
    p.zeroGrad();
    p.data.dispose();
  }
}

/** The f64 twin of a problem's parameters, with empty reference state. */
export function refOf(pr: Problem): { params: Float64Array[]; states: RefState[] } {
  return { params: pr.p0.map((p) => Float64Array.from(p)), states: pr.p0.map(() => ({ step: 0 })) };
}

export type RefStep = (p: Float64Array, g: ArrayLike<number>, s: RefState, paramIndex: number) => void;

/**
 * Run `steps` steps of `opt` on the GPU and of `refStep` in f64 from the same start, checking
 * that stepping never submitted (recorded only).
 */
export function runBoth(
  device: Device,
  pr: Problem,
  params: Parameter[],
  opt: Optimizer<any>,
  ref: { params: Float64Array[]; states: RefState[] },
  refStep: RefStep,
  steps = pr.grads.length,
): void {
  for (let t = 0; t < steps; t++) {
    setGrads(params, pr.grads[t]);
    const submits = device.submits;
    opt.step();
    assertEquals(device.submits, submits, `submits during ${opt.name}.step()`);
    ref.params.forEach((p, j) => refStep(p, pr.grads[t][j], ref.states[j], j));
  }
}

/** Compare parameters and every named state tensor with the reference. */
export async function compare(
  params: Parameter[],
  opt: Optimizer<any>,
  ref: { params: Float64Array[]; states: RefState[] },
  names: readonly string[],
  tol: number,
  label: string,
): Promise<void> {
  const sd = opt.stateDict();
  for (let j = 0; j < params.length; j++) {
    assertRelClose(await params[j].data.toF32(), ref.params[j], tol, `${label} param ${j} ${params[j].shape}`);
    assertEquals(sd.scalars[`${j}.step`], ref.states[j].step, `${label} ${j}.step`);
    for (const name of names) {
      const want = (ref.states[j] as unknown as Record<string, Float64Array | undefined>)[name];
      if (!want) throw new Error(`${label}: reference has no ${name}`);
      const got = sd.tensors[`${j}.${name}`];
      if (!got) throw new Error(`${label}: optimizer has no tensor "${j}.${name}"`);
      assertRelClose(await got.toF32(), want, tol, `${label} ${j}.${name}`);
    }
  }
  const extra = Object.keys(sd.tensors).filter((k) => !names.includes(k.replace(/^\d+\./, "")));
  assertEquals(extra, [], `${label}: unexpected state tensors`);
}
