/**
 * Rank-side frames: parameters (and buffers) flattened on the GPU in layout order,
 * packed as bf16 there when the wire is bf16 (readback halves too; parameters that are views
 * of one buffer, a `foreach` optimizer's, pack in one dispatch without the flattening
 * copies), and a consensus
 * written back — overwritten or EASGD-blended — with its divergence measured.
 */
import type { Device } from "../../gpu/mod.ts";
import { fromArray, lerpWithNorms, packBf16Tensor, packBf16Tensors, Tensor, unpackBf16Tensor } from "../../tensor/mod.ts";
import type { Adoption, Frame, LayoutTable, SyncAck } from "../protocol/messages.ts";

export { frameToFlat } from "../protocol/frame_codec.ts";

/** Concatenate tensors into one flat f32 tensor on the GPU (copies, recorded). */
function flatten(device: Device, tensors: readonly Tensor[]): Tensor {
  const n = tensors.reduce((a, t) => a + t.numel, 0);
  const flat = Tensor.empty([n], { device }, "frame");
  let at = 0;
  for (const t of tensors) {
    device.copy(t.buffer, t.byteOffset, flat.buffer, at * 4, t.numel * 4);
    at += t.numel;
  }
  return flat;
}

/** Copy slices of a flat tensor back into `tensors` (recorded). */
function scatter(device: Device, flat: Tensor, tensors: readonly Tensor[]): void {
  let at = 0;
  for (const t of tensors) {
    device.copy(flat.buffer, at * 4, t.buffer, t.byteOffset, t.numel * 4);
    at += t.numel;
  }
}

/** Snapshot parameters (bf16 or f32) and buffers (f32) into a frame. */
export async function packFrame(
  device: Device,
  params: readonly Tensor[],
  buffers: readonly Tensor[],
  meta: { rank: number; round: number; batches: number; bf16: boolean },
): Promise<Frame> {
  const inPlace = meta.bf16 && params.length > 0 && params.every((t) => t.buffer === params[0].buffer);
  const flat = inPlace ? undefined : flatten(device, params);
  const words = !meta.bf16 ? undefined : flat ? packBf16Tensor(flat) : packBf16Tensors(params);
  const flatBuf = buffers.length ? flatten(device, buffers) : undefined;
  try {
    const p = words ? new Uint32Array(await words.toArray()) : new Float32Array(await flat!.toArray());
    const b = flatBuf ? new Float32Array(await flatBuf.toArray()) : new Float32Array(0);
    return { rank: meta.rank, round: meta.round, batches: meta.batches, dtype: words ? "bf16" : "f32", params: p, buffers: b };
  } finally {
    flat?.dispose();
    words?.dispose();
    flatBuf?.dispose();
  }
}

/** Overwrite parameters and buffers with host values (the initial broadcast, a resume). */
export function writeFlat(
  device: Device,
  params: readonly Tensor[],
  buffers: readonly Tensor[],
  flat: { params: Float32Array<ArrayBuffer>; buffers: Float32Array<ArrayBuffer> },
): void {
  let at = 0;
  for (const t of params) {
    device.write(t.buffer, t.byteOffset, flat.params.subarray(at, at + t.numel));
    at += t.numel;
  }
  at = 0;
  for (const t of buffers) {
    device.write(t.buffer, t.byteOffset, flat.buffers.subarray(at, at + t.numel));
    at += t.numel;
  }
}

/**
 * Adopt a consensus: overwrite the parameters (or blend them, EASGD) and the buffers, and
 * measure ‖pre − post‖ / ‖post‖ in the same pass. Everything is recorded and submitted at
 * once; the returned promise resolves with the divergence when its 3-value read-back lands
 * (the caller need not wait for it before training on).
 */
export function adoptConsensus(
  device: Device,
  params: readonly Tensor[],
  buffers: readonly Tensor[],
  layout: LayoutTable,
  a: Adoption,
): Promise<Omit<SyncAck, "rank">> {
  const c = a.consensus;
  const pre = flatten(device, params);
  const post = c.dtype === "bf16"
    ? unpackBf16Tensor(fromArray(c.params as Uint32Array<ArrayBuffer>, [c.params.length], { device, dtype: "u32" }), [layout.paramCount])
    : fromArray(c.params as Float32Array<ArrayBuffer>, [layout.paramCount], { device });
  const { out: next, norms } = lerpWithNorms(pre, post, a.easgdAlpha ?? 1);
  scatter(device, next, params);
  if (a.withBuffers && layout.bufferCount > 0) {
    if (c.buffers.length !== layout.bufferCount) {
      throw new RangeError(`Consensus holds ${c.buffers.length} buffer values; the model has ${layout.bufferCount}`);
    }
    scatter(device, fromArray(c.buffers, [layout.bufferCount], { device }), buffers);
  }
  const read = norms.toArray(); // records the copy and submits everything recorded
  device.endStep();
  return read.then(([dd, pp, qq]) => {
    const postNorm = Math.sqrt(qq);
    return { divergence: postNorm > 1e-10 ? Math.sqrt(dd) / postNorm : 0, preNorm: Math.sqrt(pp), postNorm };
  });
}
