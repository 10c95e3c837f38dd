/**
 * The uniform arena: one buffer holding the params of every dispatch recorded since the last
 * submit, each in its own aligned slot, written on the host and uploaded once per submit.
 */
import { type Layout, writeParams } from "./params.ts";
import { UNIFORM_ARENA_BYTES, UNIFORM_SLOT_BYTES } from "./tuning.ts";

/** A device's uniform arena: `UNIFORM_ARENA_BYTES` (tuning.ts) in slots of at least `UNIFORM_SLOT_BYTES`. */
export class UniformArena {
  /** The GPU side, bound at `@binding(0)` with a slot's offset. */
  readonly buffer: GPUBuffer;
  #data = new ArrayBuffer(UNIFORM_ARENA_BYTES);
  #view = new DataView(this.#data);
  #used = 0;
  #slot: number;

  /** The arena of `gpu`, its slot rounded up to the device's uniform offset alignment. */
  constructor(gpu: GPUDevice, label: string) {
    this.#slot = Math.max(UNIFORM_SLOT_BYTES, gpu.limits.minUniformBufferOffsetAlignment);
    this.buffer = gpu.createBuffer({
      label: `${label}/uniform-arena`,
      size: UNIFORM_ARENA_BYTES,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
  }

  /** True when no slot is left: the device must submit before the next dispatch with params. */
  get full(): boolean {
    return this.#used + this.#slot > UNIFORM_ARENA_BYTES;
  }

  /**
   * Write `values` by `layout` into the next slot.
   * @returns The slot's byte offset in {@link buffer}.
   */
  write(layout: Layout<any>, values: Readonly<Record<string, number>>): number {
    const offset = this.#used;
    writeParams(this.#view, offset, layout, values);
    this.#used += this.#slot;
    return offset;
  }

  /** Queue the slots written since the last upload to the GPU and start over at slot 0. */
  upload(queue: GPUQueue): void {
    if (this.#used > 0) {
      queue.writeBuffer(this.buffer, 0, this.#data, 0, this.#used);
      this.#used = 0;
    }
  }
}
