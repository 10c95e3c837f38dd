import { Device, type StepScoped } from "../gpu/mod.ts";
import { settleIndexChecks } from "./index_check.ts";
import { checkShape, fmt, inferShape, numel, type Shape } from "./shape.ts";

/** Element types a tensor can hold. All are 4 bytes wide. */
export type DType = "f32" | "i32" | "u32";

/** Typed array of a dtype. */
export type ArrayOf<D extends DType> = D extends "f32" ? Float32Array<ArrayBuffer>
  : D extends "i32" ? Int32Array<ArrayBuffer>
  : Uint32Array<ArrayBuffer>;

/** Options shared by tensor constructors. */
export interface TensorOptions {
  /** Device to allocate on; default {@link Device.default}. */
  device?: Device;
  /** Element type; default "f32". */
  dtype?: DType;
}

/** Reference-counted GPU memory shared by a tensor and its views (reshape). */
class Storage {
  refs = 1;
  constructor(readonly device: Device, public buffer: GPUBuffer | undefined, readonly bytes: number) {}
  retain(): void {
    this.refs++;
  }
  drop(): void {
    if (--this.refs === 0 && this.buffer) {
      this.device.free(this.buffer);
      this.buffer = undefined;
    }
  }
}

/**
 * A GPU-resident, contiguous, row-major tensor.
 *
 * Tensors made during a training step are step-scoped: {@link Device.endStep} gives their
 * memory back. Call {@link keep} on a tensor that must outlive the step (parameters,
 * gradients and optimizer state are kept by the library). Reading values is the only
 * operation that waits: `await t.toArray()`.
 */
export class Tensor implements StepScoped {
  /** The device whose memory holds the values; an op's inputs must all be on one device. */
  readonly device: Device;
  /** Sizes of the dims, outermost first (PyTorch's `shape`), frozen; `[]` for a scalar. */
  readonly shape: readonly number[];
  /** Element type, 4 bytes each: "f32", "i32" or "u32" (PyTorch's `dtype`). */
  readonly dtype: DType;
  /** Element count. */
  readonly numel: number;
  #storage: Storage;
  #released = false;
  #kept = false;
  /** Which op made it, for messages. */
  readonly origin: string;
  /**
   * Where the values start in {@link buffer}, in bytes: 0, or a multiple of the device's
   * `minStorageBufferOffsetAlignment` for a view into an arena ({@link Tensor.view}).
   */
  readonly byteOffset: number;

  /** Wrap storage; use the static constructors instead. */
  constructor(device: Device, shape: Shape, dtype: DType, storage: Storage | GPUBuffer, origin = "tensor", byteOffset = 0) {
    this.device = device;
    this.byteOffset = byteOffset;
    this.shape = Object.freeze([...shape]);
    this.dtype = dtype;
    this.numel = numel(shape);
    this.origin = origin;
    this.#storage = storage instanceof Storage ? storage : new Storage(device, storage, this.numel * 4);
    device.track(this);
  }

  /**
   * An uninitialised tensor (contents are whatever the pooled buffer held).
   * @throws {RangeError} When the byte size exceeds the device's binding limit (size and limit named).
   */
  static empty(shape: Shape, options: TensorOptions = {}, origin = "empty"): Tensor {
    checkShape(shape, origin);
    const device = options.device ?? Device.default;
    const dtype = options.dtype ?? "f32";
    const n = numel(shape);
    const buf = device.alloc(n * 4, `${origin} ${fmt(shape)}`);
    return new Tensor(device, shape, dtype, new Storage(device, buf, n * 4), origin);
  }

  /**
   * A view of `shape` into `base`'s memory from element `offset` on (shared, ref-counted
   * storage, as {@link reshape}): how an optimizer packs its group's parameters, gradients
   * and state into one flat buffer each, so one dispatch updates them all. The view binds
   * its own byte range, so every op works on it unchanged.
   * @throws {RangeError} When the range does not fit in `base` or the byte offset is not a
   *   multiple of the device's `minStorageBufferOffsetAlignment` (offset, alignment named).
   */
  static view(base: Tensor, offset: number, shape: Shape, origin = base.origin): Tensor {
    checkShape(shape, origin);
    const n = numel(shape);
    const align = base.device.limits.minStorageBufferOffsetAlignment;
    const bytes = base.byteOffset + offset * 4;
    if (!Number.isInteger(offset) || offset < 0 || offset + n > base.numel) {
      throw new RangeError(`Tensor.view: elements [${offset}, ${offset + n}) do not fit in ${fmt(base.shape)}`);
    }
    if (bytes % align !== 0) {
      throw new RangeError(`Tensor.view: byte offset ${bytes} is not a multiple of minStorageBufferOffsetAlignment ${align}`);
    }
    void base.buffer; // throws if released
    base.#storage.retain();
    return new Tensor(base.device, shape, base.dtype, base.#storage, origin, bytes);
  }

  /** Bytes of the values (numel × 4). */
  get byteLength(): number {
    return this.numel * 4;
  }

  /** Number of dimensions. */
  get ndim(): number {
    return this.shape.length;
  }

  /** Size of one dimension (negative counts from the end). */
  size(dim: number): number {
    const d = dim < 0 ? dim + this.ndim : dim;
    if (d < 0 || d >= this.ndim) throw new RangeError(`size: dim ${dim} out of range for shape ${fmt(this.shape)}`);
    return this.shape[d];
  }

  /**
   * The GPU buffer (at least byteOffset + numel × 4 bytes; the values start at
   * {@link byteOffset}). Throws if the tensor was released.
   */
  get buffer(): GPUBuffer {
    const b = this.#storage.buffer;
    if (this.#released || !b) {
      throw new Error(
        `A ${this.origin} tensor ${fmt(this.shape)} was used after its memory went back to the pool ` +
          "(it was made in a step that ended, or disposed); call .keep() on tensors that must outlive a step",
      );
    }
    return b;
  }

  /** True once released. */
  get released(): boolean {
    return this.#released;
  }

  /** True when kept (persistent across steps). */
  get kept(): boolean {
    return this.#kept;
  }

  /** Keep this tensor past the end of the step; it lives until {@link dispose}. Returns this. */
  keep(): this {
    this.#kept = true;
    this.device.untrack(this);
    return this;
  }

  /** Give the memory back now (views of it keep theirs alive). Idempotent. */
  dispose(): void {
    this.device.untrack(this);
    this.release();
  }

  /** StepScoped: called by {@link Device.endStep}. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#storage.drop();
  }

  /** A view with another shape over the same memory (one `-1` is inferred). No copy. */
  reshape(shape: Shape): Tensor {
    const s = inferShape(shape, this.numel, "reshape");
    void this.buffer; // throws if released
    this.#storage.retain();
    return new Tensor(this.device, s, this.dtype, this.#storage, this.origin, this.byteOffset);
  }

  /** Copy the values to the host (waits for the GPU). */
  async toArray(): Promise<Float32Array<ArrayBuffer> | Int32Array<ArrayBuffer> | Uint32Array<ArrayBuffer>> {
    // Record the read before any await: a step's tensors go back to the pool when it ends.
    const read = this.device.read(this.buffer, this.byteOffset, this.numel * 4);
    await settleIndexChecks(this.device); // throws for a bad index found in checked mode
    const bytes = await read;
    return this.dtype === "f32" ? new Float32Array(bytes) : this.dtype === "i32" ? new Int32Array(bytes) : new Uint32Array(bytes);
  }

  /** The values as a Float32Array (f32 tensors), for callers that know the dtype. */
  async toF32(): Promise<Float32Array<ArrayBuffer>> {
    if (this.dtype !== "f32") throw new TypeError(`toF32: tensor is ${this.dtype}, not f32`);
    const read = this.device.read(this.buffer, this.byteOffset, this.numel * 4);
    await settleIndexChecks(this.device);
    return new Float32Array(await read);
  }

  /** The single value of a one-element tensor. */
  async item(): Promise<number> {
    if (this.numel !== 1) throw new RangeError(`item: tensor ${fmt(this.shape)} has ${this.numel} elements, not 1`);
    return (await this.toArray())[0];
  }

  /** Write host values into this tensor (length must match). Recorded work is submitted first. */
  write(data: ArrayLike<number>): void {
    if (data.length !== this.numel) {
      throw new RangeError(`write: got ${data.length} values for a tensor ${fmt(this.shape)} of ${this.numel}`);
    }
    this.device.write(this.buffer, this.byteOffset, toTyped(data, this.dtype));
  }

  /** Throw unless `other` lives on the same device (names the op and both devices). */
  sameDevice(other: Tensor, op: string): void {
    if (other.device !== this.device) {
      throw new Error(`${op}: tensors are on different devices ("${this.device.label}" and "${other.device.label}")`);
    }
  }

  /** Shape, dtype and origin, e.g. `Tensor([2,3], f32, matmul)`; no values (reading them is async). */
  toString(): string {
    return `Tensor(${fmt(this.shape)}, ${this.dtype}, ${this.origin})`;
  }
}

/** Host values as the typed array of a dtype (copied when the type differs). */
export function toTyped(data: ArrayLike<number>, dtype: DType): Float32Array<ArrayBuffer> | Int32Array<ArrayBuffer> | Uint32Array<ArrayBuffer> {
  switch (dtype) {
    case "f32":
      return data instanceof Float32Array ? data as Float32Array<ArrayBuffer> : Float32Array.from(data);
    case "i32":
      return data instanceof Int32Array ? data as Int32Array<ArrayBuffer> : Int32Array.from(data);
    case "u32":
      return data instanceof Uint32Array ? data as Uint32Array<ArrayBuffer> : Uint32Array.from(data);
  }
}
