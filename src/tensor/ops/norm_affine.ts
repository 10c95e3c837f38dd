/**
 * Plumbing the norm ops of shaders/norm.wgsl share (layer, batch and RMS norm): where the
 * optional weight and bias sit among the inputs, the stand-ins for absent ones, the checks.
 * Internal: src/tensor/mod.ts does not export this file.
 */
import type { Device } from "../../gpu/mod.ts";
import { fromArray } from "../creation.ts";
import { fmt, sameShape, type Shape } from "../shape.ts";
import { Tensor } from "../tensor.ts";

/**
 * Which optional inputs an op call carries after its fixed ones. When omitted they are
 * inferred from the input count: one extra input is the weight, two are weight and bias.
 */
export interface AffineInputs {
  /** The inputs include a weight. */
  weight?: boolean;
  /** The inputs include a bias (after the weight, when both). */
  bias?: boolean;
}

const constants = new WeakMap<Device, Map<number, Tensor>>();

/**
 * A kept tensor of four `v`s on `device`, made once: the stand-in for an absent weight (1)
 * or bias (0), read with stride 0 (a scalar kernel reads element 0, a vec4 one all four).
 */
export function constant(device: Device, v: number): Tensor {
  let m = constants.get(device);
  if (!m) constants.set(device, m = new Map());
  let t = m.get(v);
  if (!t || t.released) {
    t = fromArray([v, v, v, v], [4], { device }).keep();
    m.set(v, t);
  }
  return t;
}

/** Index of the weight and bias among the inputs (-1 when absent), after `fixed` inputs. */
export function affineSlots(attrs: AffineInputs, count: number, fixed: number): { w: number; b: number } {
  const extra = count - fixed;
  const hasW = attrs.weight ?? extra >= 1;
  const hasB = attrs.bias ?? extra >= 2;
  if (Number(hasW) + Number(hasB) !== extra) {
    throw new RangeError(`Norm op: got ${extra} weight/bias inputs but attrs say weight ${hasW}, bias ${hasB}`);
  }
  return { w: hasW ? fixed : -1, b: hasB ? fixed + Number(hasW) : -1 };
}

/** eps must be a finite number >= 0; the error names the op and the value. */
export function checkEps(eps: number, op: string): void {
  if (!(eps >= 0) || !Number.isFinite(eps)) throw new RangeError(`${op}: eps must be a finite number >= 0, got ${eps}`);
}

/** A weight or bias: f32, on x's device, shaped `want` (both shapes named when not). */
export function checkParam(t: Tensor, want: Shape, x: Tensor, op: string, name: string): void {
  x.sameDevice(t, op);
  if (t.dtype !== "f32") throw new TypeError(`${op}: ${name} must be f32, got ${t.dtype}`);
  if (!sameShape(t.shape, want)) {
    throw new RangeError(`${op}: ${name} ${fmt(t.shape)} must be ${fmt(want)} for input ${fmt(x.shape)}`);
  }
}
