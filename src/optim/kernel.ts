import { Device, kernel, launch, type Layout, layout } from "../gpu/mod.ts";
import type { Tensor } from "../tensor/mod.ts";

/** Fields of `struct Params` in shaders/optim.wgsl, in WGSL order: the type of {@link OPTIM_PARAMS}' `fields`. */
export type OptimParamFields = {
  n: "u32";
  first: "u32";
  lr: "f32";
  weight_decay: "f32";
  decay: "f32";
  momentum: "f32";
  one_minus_dampening: "f32";
  nesterov: "u32";
  beta1: "f32";
  one_minus_beta1: "f32";
  beta2: "f32";
  one_minus_beta2: "f32";
  alpha: "f32";
  one_minus_alpha: "f32";
  eps: "f32";
  step_size: "f32";
  bc2_sqrt: "f32";
};

/** Mirrors `struct Params` in shaders/optim.wgsl. */
export const OPTIM_PARAMS: Layout<OptimParamFields> = layout("optim", "Params", {
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

/** Storage bindings of shaders/optim.wgsl: the parameter, its gradient and the state tensors by name. */
export const OPTIM = kernel(OPTIM_PARAMS, {
  param: [1, "read_write"],
  grad: [2, "read"],
  momentum_buffer: [3, "read_write"],
  exp_avg: [4, "read_write"],
  exp_avg_sq: [5, "read_write"],
  square_avg: [6, "read_write"],
  grad_avg: [7, "read_write"],
  segments: [8, "read"],
}, {
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
});

/** A state tensor an optimizer keeps per parameter, by its name in shaders/optim.wgsl. */
export type StateName = Exclude<keyof typeof OPTIM.bindings, "param" | "grad" | "segments">;

/** Threads per workgroup of a multi-tensor entry, one element each (a segment row's most). */
export const MULTI_WG = 256;
/** A packed group for one multi-tensor dispatch: its segment table and workgroup count. */
export interface Segments {
  /** u32 pairs `[start, end)`, one per workgroup, at most MULTI_WG elements of one parameter. */
  table: Tensor;
  /** Workgroups of the dispatch, one per `[start, end)` pair of the table. */
  workgroups: number;
}

/**
 * The segment table of parameters packed at element `offsets` with `sizes` elements: one
 * `[start, end)` row per workgroup of `rowElems` elements ({@link MULTI_WG} by default).
 */
export function segmentRows(offsets: readonly number[], sizes: readonly number[], rowElems = MULTI_WG): Uint32Array {
  const rows: number[] = [];
  offsets.forEach((o, k) => {
    for (let s = 0; s < sizes[k]; s += rowElems) rows.push(o + s, o + sizes[k]);
  });
  return new Uint32Array(rows);
}

/**
 * Record one fused update of `param` (in place) from `grad` and the named state tensors:
 * a single dispatch of `shaders/optim.wgsl` entry `entry`. With `segments`, `param`, `grad`
 * and the state are a group's flat buffers and the dispatch is the entry's multi-tensor
 * form (`<update>_multi_forward`), which updates every parameter of the group with the same
 * per-element math. Nothing is submitted or awaited.
 * @throws {TypeError} When a state name is not a binding of shaders/optim.wgsl.
 */
export function launchUpdate(
  entry: string,
  param: Tensor,
  grad: Tensor,
  state: Readonly<Record<string, Tensor>>,
  values: UpdateValues,
  segments?: Segments,
): void {
  if (segments) {
    launch(param.device, OPTIM, {
      entry: entry.replace(/_forward$/, "_multi_forward"),
      overrides: { WG: MULTI_WG },
      params: { ...values, n: segments.workgroups },
      io: { ...state, param, grad, segments: segments.table },
      groups: Device.grid(segments.workgroups, 1),
    });
    return;
  }
  const n = param.numel;
  launch(param.device, OPTIM, {
    entry,
    params: { ...values, n },
    io: { ...state, param, grad },
    groups: Device.grid(n),
  });
}
