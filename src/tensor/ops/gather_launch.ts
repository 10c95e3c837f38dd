/**
 * Launching shaders/gather.wgsl for the index ops (gather.ts, embedding_bag.ts): one thread
 * per element, the index operand's check, and the sorted, deterministic scatter-add that the
 * backward of index_select, embedding and embedding_bag share. Not public.
 */
import { Device, launch } from "../../gpu/mod.ts";
import { fmt } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { GATHER, type GATHER_PARAMS } from "./gather_kernel.ts";

/** Values of shaders/gather.wgsl's Params a launch sets (the rest keep their defaults). */
export type IndexValues = Partial<Record<keyof typeof GATHER_PARAMS.fields, number>>;

/** A launch of one thread per element of `params.n` (gather.ts's and embedding_bag.ts's entries). */
export function perElement(
  entry: string,
  params: IndexValues & { n: number },
): { entry: string; params: IndexValues & { n: number }; groups: [number, number] } {
  return { entry, params, groups: Device.grid(params.n) };
}

/**
 * Check that `index` is an i32 tensor on x's device.
 * @throws {TypeError} Naming `op` and the index's dtype and shape.
 */
export function checkIndex(x: Tensor, index: Tensor, op: string): void {
  x.sameDevice(index, op);
  if (index.dtype !== "i32") {
    throw new TypeError(`${op}: index must be an i32 tensor, got ${index.dtype} ${fmt(index.shape)}`);
  }
}

/** Pairs sorted in one workgroup (shaders/gather.wgsl's LOCAL_SORT: 8 KiB of workgroup memory). */
const LOCAL_SORT = 1024;

/**
 * dx [outer, size, inner] of an index_select whose output was [outer, k, inner]: sort the
 * (index, position) pairs (bitonic: in one workgroup's memory when k ≤ LOCAL_SORT, else one
 * launch per pass), find each row's run, then sum each run in position order. Deterministic,
 * and O(k log² k + dx + dy) rather than the O(dx · k) of scanning every index for every
 * element of dx. Rows equal to `pad` (-1: none) get no gradient.
 */
export function selectBackward(
  dy: Tensor,
  index: Tensor,
  dx: Tensor,
  size: number,
  k: number,
  inner: number,
  pad: number,
): void {
  const device = dy.device;
  let p2 = 1;
  while (p2 < k) p2 *= 2;
  const keys = Tensor.empty([p2], { device, dtype: "u32" }, "indexSelect.keys");
  const pos = Tensor.empty([p2], { device, dtype: "u32" }, "indexSelect.pos");
  const bounds = Tensor.empty([2 * size], { device, dtype: "u32" }, "indexSelect.bounds");
  if (size > 0) device.clear(bounds.buffer);
  const base = { size, k, inner, pad };
  launch(device, GATHER, {
    ...perElement("index_select_backward_keys", { ...base, n: p2 }),
    io: { idx: index, keys, pos },
  });
  if (p2 <= LOCAL_SORT) {
    launch(device, GATHER, { entry: "index_select_backward_sort_local", params: { ...base, n: p2 }, io: { keys, pos }, groups: [1] });
  } else {
    for (let block = 2; block <= p2; block *= 2) {
      for (let stride = block / 2; stride >= 1; stride /= 2) {
        launch(device, GATHER, {
          ...perElement("index_select_backward_sort", { ...base, n: p2 / 2, block, stride }),
          io: { keys, pos },
        });
      }
    }
  }
  launch(device, GATHER, { ...perElement("index_select_backward_bounds", { ...base, n: k }), io: { keys, bounds } });
  launch(device, GATHER, {
    ...perElement("index_select_backward", { ...base, n: dx.numel }),
    io: {
      dy,
      dx,
      pos,
      bounds,
    },
  });
  // Freed buffers are reused only after the next submit, so the launches above still see them.
  for (const t of [keys, pos, bounds]) t.dispose();
}
