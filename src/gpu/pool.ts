import { POOL_MIN_BYTES, POOL_STEPS } from "./tuning.ts";

/** Usage of every pooled storage buffer: bound to kernels, copied from and to. */
export const STORAGE_USAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/** Byte counts the pool reports (the memory-flatness test compares these across steps). */
export interface PoolStats {
  /** Bytes of buffers handed out and not yet released. */
  liveBytes: number;
  /** Bytes of buffers waiting in the pool (free, or released and waiting for the next submit). */
  pooledBytes: number;
  /** Buffers ever created by the pool. */
  created: number;
}

/**
 * Round a request up to its size class: powers of two split in POOL_STEPS steps,
 * so a buffer is at most 1/POOL_STEPS larger than asked.
 */
export function sizeClass(bytes: number): number {
  if (bytes <= POOL_MIN_BYTES) return POOL_MIN_BYTES;
  const top = 2 ** Math.ceil(Math.log2(bytes));
  const step = top / 2 / POOL_STEPS;
  return Math.ceil(bytes / step) * step;
}

/**
 * A size-bucketed pool of storage buffers for one device.
 *
 * A released buffer may still be read by commands recorded but not yet submitted,
 * so it waits in `pending` until the next submit; only then can a new owner write it
 * (queue writes and later submits are ordered after that submit).
 */
export class BufferPool {
  #free = new Map<number, GPUBuffer[]>();
  #pending: GPUBuffer[] = [];
  #live = 0;
  #pooled = 0;
  #created = 0;

  constructor(
    private readonly create: (bytes: number) => GPUBuffer,
  ) {}

  /** A buffer of at least `bytes` bytes, reused when one of its size class is free; classes never exceed `cap`. */
  acquire(bytes: number, cap = Infinity): GPUBuffer {
    const size = Math.min(sizeClass(bytes), cap);
    const list = this.#free.get(size);
    let buf = list?.pop();
    if (buf) {
      this.#pooled -= size;
    } else {
      buf = this.create(size);
      this.#created++;
    }
    this.#live += size;
    return buf;
  }

  /** Give a buffer back; it becomes reusable after the next submit. */
  release(buf: GPUBuffer): void {
    this.#live -= buf.size;
    this.#pooled += buf.size;
    this.#pending.push(buf);
  }

  /** Called right after a submit: released buffers become reusable. */
  afterSubmit(): void {
    for (const buf of this.#pending) {
      const list = this.#free.get(buf.size);
      if (list) list.push(buf);
      else this.#free.set(buf.size, [buf]);
    }
    this.#pending.length = 0;
  }

  /** Destroy every free buffer (live ones stay with their owners). */
  trim(): void {
    for (const list of this.#free.values()) {
      for (const buf of list) {
        this.#pooled -= buf.size;
        buf.destroy();
      }
    }
    this.#free.clear();
  }

  stats(): PoolStats {
    return { liveBytes: this.#live, pooledBytes: this.#pooled, created: this.#created };
  }
}
