import type { Variable } from "../autograd/mod.ts";
import { Device, kernel, launch, type Layout, layout, tuning } from "../gpu/mod.ts";
import { fromArray, Tensor, zeros } from "../tensor/mod.ts";
import { checkNonNegative } from "./check.ts";
import { MULTI_WG, segmentRows } from "./kernel.ts";

/** Fields of `struct Params` in shaders/clip.wgsl, in WGSL order: the type of {@link CLIP_PARAMS}' `fields`. */
export type ClipParamFields = {
  n: "u32";
  offset: "u32";
  count: "u32";
  kind: "u32";
  norm_type: "f32";
  max_norm: "f32";
  clip_value: "f32";
};

/** Mirrors `struct Params` in shaders/clip.wgsl. */
export const CLIP_PARAMS: Layout<ClipParamFields> = layout("clip", "Params", {
  n: "u32",
  offset: "u32",
  count: "u32",
  kind: "u32",
  norm_type: "f32",
  max_norm: "f32",
  clip_value: "f32",
});
/** Storage bindings of shaders/clip.wgsl. */
export const CLIP = kernel(CLIP_PARAMS, {
  grad: [1, "read_write"],
  partials: [2, "read_write"],
  total: [3, "read_write"],
  coef: [4, "read_write"],
  segments: [5, "read"],
}, { n: 0, offset: 0, count: 0, kind: 2, norm_type: 2, max_norm: 0, clip_value: 0 });

/**
 * Most partial values one gradient contributes to {@link clipGradNorm}: enough workgroups to
 * spread a large gradient over a GPU, few enough that the final single-workgroup reduction of
 * all partials stays short (a 100-tensor model gives at most 6,400).
 */
const MAX_PARTIALS_PER_GRAD = 64;

/** Segment tables of packed gradients, per flat buffer and layout (uploaded once). */
const tables = new WeakMap<GPUBuffer, Map<string, Tensor>>();

/**
 * The rows of gradients that all live in one flat buffer (a foreach group's), or null: then
 * clipping is one norm launch and one scale launch for all of them.
 */
function packedRows(grads: readonly Tensor[]): { table: Tensor; rows: number } | null {
  const live = grads.filter((g) => g.numel > 0);
  if (live.length < 2 || live.some((g) => g.buffer !== live[0].buffer)) return null;
  const offsets = live.map((g) => g.byteOffset / 4), sizes = live.map((g) => g.numel);
  const key = `${offsets}|${sizes}`;
  const byKey = tables.get(live[0].buffer) ?? new Map<string, Tensor>();
  tables.set(live[0].buffer, byKey);
  let table = byKey.get(key);
  if (!table) {
    const rows = segmentRows(offsets, sizes);
    byKey.set(key, table = fromArray(rows, [rows.length], { device: live[0].device, dtype: "u32" }).keep());
  }
  return { table, rows: table.numel / 2 };
}

/** Kernel `kind` of a norm type: 0 max, 1 general p, 2 squares, 3 absolute values. */
function normKind(normType: number): number {
  if (normType === Infinity) return 0;
  if (normType === 2) return 2;
  if (normType === 1) return 3;
  return 1;
}

function gradsOf(params: readonly Variable[], op: string): Tensor[] {
  if (!Array.isArray(params)) throw new TypeError(`${op}: params must be an array of Parameters`);
  const grads = params.map((p) => p.grad).filter((g): g is Tensor => g !== null);
  for (const g of grads) {
    if (g.dtype !== "f32") throw new TypeError(`${op}: gradients must be f32, got ${g.dtype}`);
    g.sameDevice(grads[0], op);
  }
  return grads;
}

/**
 * Scale all gradients jointly so that their total norm is at most `maxNorm`, in place on the
 * GPU, as PyTorch's `clip_grad_norm_`: total = ‖(‖g₁‖, ‖g₂‖, …)‖ₚ, every gradient multiplied
 * by min(1, maxNorm / (total + 1e-6)). Nothing is read back: the norm and the coefficient stay
 * in GPU buffers (partial sums per gradient, one reduction, one in-place scale per gradient;
 * gradients packed in one flat buffer by a `foreach` optimizer: three launches in all), so a
 * training step never waits (flodl's `max_grad_norm`). Parameters without a gradient are
 * skipped.
 * @param maxNorm Largest allowed total norm, finite and >= 0.
 * @param normType p of the norm, > 0, or Infinity (largest |g|). Default 2.
 * @returns A step-scoped scalar f32 tensor holding the total norm before clipping (0 when no
 *   parameter has a gradient); `await norm.item()` reads it.
 * @throws {RangeError} When maxNorm or normType is out of range.
 * @example
 * ```ts
 * import { clipGradNorm, Device, Parameter, randn } from "../index.ts";
 * await Device.request();
 * const w = new Parameter(randn([3]), "w");
 * // after loss.backward():
 * const norm = clipGradNorm([w], 1.0);
 * ```
 */
export function clipGradNorm(params: readonly Variable[], maxNorm: number, normType = 2): Tensor {
  checkNonNegative("clipGradNorm", "maxNorm", maxNorm);
  if (typeof normType !== "number" || !(normType > 0)) {
    throw new RangeError(`clipGradNorm: normType must be > 0 or Infinity, got ${normType}`);
  }
  const grads = gradsOf(params, "clipGradNorm");
  const device = grads[0]?.device ?? params[0]?.data.device ?? Device.default;
  if (grads.length === 0) return zeros([], { device });
  const base = {
    kind: normKind(normType),
    norm_type: normType === Infinity ? 0 : normType,
    max_norm: maxNorm,
  };
  const packed = packedRows(grads);
  if (packed) {
    // One partial per row of the flat buffer, their total, one scale: 3 launches in all.
    const partials = Tensor.empty([packed.rows], { device }, "clipGradNorm.partials");
    const total = Tensor.empty([], { device }, "clipGradNorm");
    const coef = Tensor.empty([1], { device }, "clipGradNorm.coef");
    const flat = grads.find((g) => g.numel > 0)!.buffer;
    const multi = { overrides: { WG: MULTI_WG }, groups: Device.grid(packed.rows, 1) };
    launch(device, CLIP, {
      entry: "norm_partial_multi_forward",
      ...multi,
      params: { ...base, count: packed.rows },
      io: { grad: flat, partials, segments: packed.table },
    });
    launch(device, CLIP, {
      entry: "norm_total_forward",
      overrides: { WG: tuning.REDUCE_WG },
      params: { ...base, count: packed.rows },
      io: { partials, total, coef },
      groups: [1],
    });
    launch(device, CLIP, {
      entry: "clip_scale_multi_forward",
      ...multi,
      params: { ...base, count: packed.rows },
      io: { grad: flat, coef, segments: packed.table },
    });
    return total;
  }
  const wg = tuning.REDUCE_WG;
  const counts = grads.map((g) => Math.max(1, Math.min(MAX_PARTIALS_PER_GRAD, Math.ceil(g.numel / wg))));
  const count = counts.reduce((a, b) => a + b, 0);
  const partials = Tensor.empty([count], { device }, "clipGradNorm.partials");
  const total = Tensor.empty([], { device }, "clipGradNorm");
  const coef = Tensor.empty([1], { device }, "clipGradNorm.coef");
  let offset = 0;
  grads.forEach((g, i) => {
    launch(device, CLIP, {
      entry: "norm_partial_forward",
      overrides: { WG: wg },
      params: { ...base, n: g.numel, offset },
      io: { grad: g, partials },
      groups: [counts[i]],
    });
    offset += counts[i];
  });
  launch(device, CLIP, {
    entry: "norm_total_forward",
    overrides: { WG: wg },
    params: { ...base, count },
    io: { partials, total, coef },
    groups: [1],
  });
  for (const g of grads) {
    if (g.numel === 0) continue;
    launch(device, CLIP, {
      entry: "clip_scale_forward",
      params: { ...base, n: g.numel },
      io: { grad: g, coef },
      groups: Device.grid(g.numel),
    });
  }
  return total;
}

/**
 * Clamp every gradient into [−clipValue, clipValue], in place on the GPU (PyTorch's
 * `clip_grad_value_`). Parameters without a gradient are skipped. Nothing is read back.
 * @throws {RangeError} When clipValue is negative or not finite.
 * @example
 * ```ts
 * import { clipGradValue, Device, Parameter, randn } from "../index.ts";
 * await Device.request();
 * clipGradValue([new Parameter(randn([3]), "w")], 0.5);
 * ```
 */
export function clipGradValue(params: readonly Variable[], clipValue: number): void {
  checkNonNegative("clipGradValue", "clipValue", clipValue);
  for (const g of gradsOf(params, "clipGradValue")) {
    if (g.numel === 0) continue;
    launch(g.device, CLIP, {
      entry: "clip_value_forward",
      params: { n: g.numel, clip_value: clipValue },
      io: { grad: g },
      groups: Device.grid(g.numel),
    });
  }
}
