/**
 * The device tier of the data plane (`vramPool`, `vramMaxUsage`): samples stay
 * resident on the rank's GPU after their first upload, one storage buffer per field
 * (`[capacity, ...sampleShape]`), and a batch whose samples are all resident is gathered on
 * the device by sample slot (the `indexSelect` kernel, a bit copy) instead of uploaded: the
 * upload shrinks from the batch's bytes to its slot indices. Slots are handed out in
 * arrival order and never evicted (epochs revisit every sample, so a full pool simply
 * stops growing and the rest keep the upload path).
 */
import type { Device } from "../gpu/mod.ts";
import { fromArray, indexSelectOp, run, Tensor } from "../tensor/mod.ts";
import type { FieldSpec, HostBatch } from "./dataset.ts";
import { fieldBytes } from "./pack_source.ts";

/** Counters of one rank's device tier. */
export interface VramStats {
  /** Batches gathered with no upload, and batches that uploaded rows (to the pool or as the batch). */
  gathered: number;
  /** Batches that uploaded rows (to the pool or as the batch). */
  uploaded: number;
  /** Samples resident, the pool's capacity and its bytes on the device. */
  resident: number;
  /** Samples the pool can hold. */
  capacity: number;
  /** Bytes the pool's buffers take on the device (capacity × one sample's bytes). */
  bytes: number;
}

/** Samples of `fields` a budget holds on `device`, capped by the binding size limit and `len`. */
export function vramCapacity(fields: readonly FieldSpec[], device: Device, budgetBytes: number, len: number): number {
  if (!Number.isFinite(budgetBytes) || budgetBytes < 0) {
    throw new RangeError(`vramMaxUsage: the pool budget must be a finite number of bytes ≥ 0, got ${budgetBytes}`);
  }
  const record = fields.reduce((a, f) => a + fieldBytes(f), 0);
  const maxBinding = device.limits.maxStorageBufferBindingSize;
  const perField = Math.min(...fields.map((f) => Math.floor(maxBinding / fieldBytes(f))));
  return Math.max(0, Math.min(len, perField, Math.floor(budgetBytes / record)));
}

/**
 * The device tier (see the module comment): `capacity` samples of `fields` resident on one
 * device, one kept storage buffer per field, gathered by slot into a batch.
 */
export class VramPool {
  /** The dataset's fields; the pool keeps one `[capacity, ...shape]` buffer per field. */
  readonly fields: readonly FieldSpec[];
  /** Samples the pool holds at most (0: off, no buffers). */
  readonly capacity: number;
  readonly #device: Device;
  readonly #pools: Tensor[];
  readonly #slots = new Map<number, number>();
  #gathered = 0;
  #uploaded = 0;

  /** Allocate the buffers for `capacity` samples on `device` (see {@link vramCapacity}); none when 0. */
  constructor(fields: readonly FieldSpec[], device: Device, capacity: number) {
    this.fields = fields;
    this.capacity = capacity;
    this.#device = device;
    this.#pools = capacity > 0
      ? fields.map((f) => Tensor.empty([capacity, ...f.shape], { device, dtype: f.dtype }, `vramPool ${f.name}`).keep())
      : [];
  }

  /** The counters so far, with what the pool holds now. */
  stats(): VramStats {
    const record = this.fields.reduce((a, f) => a + fieldBytes(f), 0);
    return { gathered: this.#gathered, uploaded: this.#uploaded, resident: this.#slots.size, capacity: this.capacity, bytes: this.capacity * record };
  }

  /** True when every sample of `indices` is resident. */
  holds(indices: readonly number[]): boolean {
    return this.capacity > 0 && indices.every((i) => this.#slots.has(i));
  }

  /** Free slots. */
  get room(): number {
    return this.capacity - this.#slots.size;
  }

  /** The distinct samples of `indices` not resident, in first-seen order. */
  lacking(indices: readonly number[]): number[] {
    return [...new Set(indices.filter((i) => !this.#slots.has(i)))];
  }

  /**
   * The batch gathered on the device when every sample is resident, else undefined.
   * @param count Count it as a gathered batch (false right after {@link admit} filled the pool: that batch was uploaded).
   */
  gather(indices: readonly number[], count = true): Tensor[] | undefined {
    if (this.capacity === 0) return undefined;
    const slots = new Int32Array(indices.length);
    for (let r = 0; r < indices.length; r++) {
      const s = this.#slots.get(indices[r]);
      if (s === undefined) return undefined;
      slots[r] = s;
    }
    const index = fromArray(slots, [slots.length], { device: this.#device, dtype: "i32" });
    if (count) this.#gathered++;
    return this.#pools.map((pool) => run(indexSelectOp, [pool, index], { dim: 0 }));
  }

  /**
   * Count an uploaded batch and make its non-resident samples resident while slots last:
   * their rows, in batch order, go to consecutive slots (one write per field).
   */
  admit(indices: readonly number[], batch: HostBatch): void {
    this.#uploaded++;
    if (this.capacity === 0) return;
    const rows: number[] = [];
    const seen = new Set<number>();
    for (let r = 0; r < indices.length && this.#slots.size + rows.length < this.capacity; r++) {
      const i = indices[r];
      if (this.#slots.has(i) || seen.has(i)) continue;
      seen.add(i);
      rows.push(r);
    }
    if (rows.length === 0) return;
    const first = this.#slots.size;
    rows.forEach((r, k) => this.#slots.set(indices[r], first + k));
    this.fields.forEach((f, k) => {
      const size = fieldBytes(f), src = new Uint8Array(batch[k].data.buffer, batch[k].data.byteOffset, batch[k].data.byteLength);
      const staged = new Uint8Array(rows.length * size);
      rows.forEach((r, j) => staged.set(src.subarray(r * size, (r + 1) * size), j * size));
      this.#device.write(this.#pools[k].buffer, first * size, staged);
    });
  }

  /** Free the device buffers. */
  dispose(): void {
    for (const p of this.#pools) p.dispose();
    this.#slots.clear();
  }
}
