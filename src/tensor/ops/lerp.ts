import { Device, type Kernel, kernel, launch, type Layout, layout, tuning } from "../../gpu/mod.ts";
import { fmt, sameShape } from "../shape.ts";
import { Tensor } from "../tensor.ts";

/** Mirrors `struct Params` in shaders/lerp.wgsl. */
export const LERP_PARAMS: Layout<{
  n: "u32"; alpha: "f32"; chunks: "u32";
}> = layout("lerp", "Params", { n: "u32", alpha: "f32", chunks: "u32" });
/** Storage bindings of shaders/lerp.wgsl. */
export const LERP: Kernel<typeof LERP_PARAMS, {
  pre: [number, "read"]; post: [number, "read"]; out: [number, "read_write"];
  partial: [number, "read_write"]; total: [number, "read_write"];
}> = kernel(LERP_PARAMS, {
  pre: [1, "read"],
  post: [2, "read"],
  out: [3, "read_write"],
  partial: [4, "read_write"],
  total: [5, "read_write"],
});

/** Elements each workgroup of the first pass covers. */
const SPAN = 4096;

/**
 * `(1 − alpha)·pre + alpha·post` (alpha = 1 copies `post` exactly), and in the same pass
 * the squared norms Σ(pre − post)², Σpre², Σpost² as a 3-element tensor: adopting a
 * consensus and measuring the divergence in two dispatches.
 * @throws {RangeError} When shapes differ or alpha is outside [0, 1].
 */
export function lerpWithNorms(pre: Tensor, post: Tensor, alpha: number): { out: Tensor; norms: Tensor } {
  pre.sameDevice(post, "lerpWithNorms");
  if (!sameShape(pre.shape, post.shape)) {
    throw new RangeError(`lerpWithNorms: pre ${fmt(pre.shape)} and post ${fmt(post.shape)} must have the same shape`);
  }
  if (!(alpha >= 0 && alpha <= 1)) throw new RangeError(`lerpWithNorms: alpha must be in [0, 1], got ${alpha}`);
  const device = pre.device, n = pre.numel;
  const chunks = Math.max(1, Math.ceil(n / SPAN));
  const out = Tensor.empty(pre.shape, { device }, "lerp");
  const partial = Tensor.empty([3 * chunks], { device }, "lerp.partial");
  const norms = Tensor.empty([3], { device }, "lerp.norms");
  const params = { n, alpha, chunks };
  const overrides = { WG: tuning.REDUCE_WG };
  launch(device, LERP, {
    entry: "lerp_norms_forward",
    params,
    io: { pre, post, out, partial },
    groups: Device.grid(chunks, 1),
    overrides,
  });
  launch(device, LERP, { entry: "norms_total_forward", params, io: { partial, total: norms }, groups: [1], overrides });
  return { out, norms };
}
