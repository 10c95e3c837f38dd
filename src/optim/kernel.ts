import { Device, layout } from "../gpu/mod.ts";
import type { Tensor } from "../tensor/mod.ts";

/** Mirrors `struct Params` in shaders/optim.wgsl. */
export const OPTIM_PARAMS = layout("optim", "Params", {
  n: "u32",
  first: "u32",
  lr: "f32",
  weight_decay: "f32",
  decay: "f32",
  momentum: "f32",
  one_minus_dampening: "f32",
  nesterov: "u32",
  beta1: "f32",
  one_minus_beta1: "f32",
  beta2: "f32",
  one_minus_beta2: "f32",
  alpha: "f32",
  one_minus_alpha: "f32",
  eps: "f32",
  step_size: "f32",
  bc2_sqrt: "f32",
});

/** Uniform values of one update; fields an optimizer does not use stay neutral. */
export type UpdateValues = Partial<Record<keyof typeof OPTIM_PARAMS.fields, number>>;

const NEUTRAL: Record<keyof typeof OPTIM_PARAMS.fields, number> = {
  n: 0,
  first: 0,
  lr: 0,
  weight_decay: 0,
  decay: 1,
  momentum: 0,
  one_minus_dampening: 1,
  nesterov: 0,
  beta1: 0,
  one_minus_beta1: 1,
  beta2: 0,
  one_minus_beta2: 1,
  alpha: 0,
  one_minus_alpha: 1,
  eps: 0,
  step_size: 0,
  bc2_sqrt: 1,
};

/** Binding numbers of the state tensors in shaders/optim.wgsl, by state name. */
const STATE_BINDING: Record<string, number> = {
  momentum_buffer: 3,
  exp_avg: 4,
  exp_avg_sq: 5,
  square_avg: 6,
  grad_avg: 7,
};

/**
 * Record one fused update of `param` (in place) from `grad` and the named state tensors:
 * a single dispatch of `shaders/optim.wgsl` entry `entry`. Nothing is submitted or awaited.
 */
export function launchUpdate(
  entry: string,
  param: Tensor,
  grad: Tensor,
  state: Readonly<Record<string, Tensor>>,
  values: UpdateValues,
): void {
  const n = param.numel;
  if (n === 0) return;
  const buffers: Record<number, GPUBuffer> = { 1: param.buffer, 2: grad.buffer };
  for (const [name, t] of Object.entries(state)) buffers[STATE_BINDING[name]] = t.buffer;
  param.device.dispatch({
    shader: "optim",
    entry,
    params: { layout: OPTIM_PARAMS, values: { ...NEUTRAL, ...values, n } },
    buffers,
    groups: Device.grid(n),
  });
}
