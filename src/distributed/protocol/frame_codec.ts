/**
 * Reading a frame on the host: the wire format of `Frame` (bf16 pairs or f32) decoded to
 * flat f32 in layout order. Shared: the coordinator decodes rank frames (observers,
 * checks), the single-device path and the rank its own frames.
 */
import { unpackBf16 } from "../../tensor/mod.ts";
import type { Frame, LayoutTable } from "./messages.ts";

/** The parameter values of a frame as f32 (host side; decodes bf16 exactly). */
export function frameToFlat(frame: Frame, layout: LayoutTable): { params: Float32Array<ArrayBuffer>; buffers: Float32Array<ArrayBuffer> } {
  const params = frame.dtype === "bf16"
    ? unpackBf16(frame.params as Uint32Array, layout.paramCount)
    : frame.params as Float32Array<ArrayBuffer>;
  if (params.length !== layout.paramCount || frame.buffers.length !== layout.bufferCount) {
    throw new RangeError(
      `Frame of rank ${frame.rank} holds ${params.length} parameter and ${frame.buffers.length} buffer values; ` +
        `the model has ${layout.paramCount} and ${layout.bufferCount}`,
    );
  }
  return { params, buffers: frame.buffers };
}
