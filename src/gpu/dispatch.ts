/** One kernel launch as `Device.dispatch` records it: pipeline, uniform params, bound buffers, grid. */
import type { Layout } from "./params.ts";

/** One kernel launch: the pipeline, its uniform params (binding 0), its buffers by binding, the grid. */
export interface Dispatch {
  /** Shader family: `shaders/<shader>.wgsl`. */
  shader: string;
  /** Entry point, `<op>_<direction>`. */
  entry: string;
  /** WGSL `override` constants; part of the pipeline key. */
  overrides?: Record<string, number>;
  /** Uniform struct at `@binding(0)`. */
  params?: { layout: Layout<any>; values: Readonly<Record<string, number>> };
  /**
   * Storage buffers by binding number: a whole buffer, or a range of one (a view into an
   * arena, e.g. a parameter packed into its optimizer group's flat buffer; the offset is a
   * multiple of `minStorageBufferOffsetAlignment`).
   */
  buffers: Record<number, GPUBuffer | BufferRange>;
  /** Workgroup counts. */
  groups: readonly [number, number?, number?];
}

/** A byte range of a buffer, bound as a storage binding. */
export interface BufferRange {
  /** The buffer. */
  buffer: GPUBuffer;
  /** First byte bound (a multiple of the adapter's storage offset alignment). */
  offset: number;
  /** Bytes bound. */
  size: number;
}
