/**
 * The host tiers of the data plane: a read-through RAM cache of raw samples
 * (`sampleCache`, budget `ramMaxUsage`), backed by a disk stage (`diskStage`,
 * `diskStageDir`) that keeps what RAM evicts, in front of the source. Purity
 * makes this exact: a sample is the same bytes whichever tier serves it. A sample is one
 * record: its fields' bytes back to back.
 *
 * - RAM: least recently used records within `ramBytes`; off (`sampleCache(false)` or a
 *   zero budget) keeps nothing between batches.
 * - Disk: fixed-size slots in one stage file, up to `diskBytes`; a sample evicted from RAM
 *   is written there and read back instead of the source; when the stage is full, evicted
 *   samples are dropped (the source still has them: nothing is ever lost).
 * - The tiers are exclusive (a sample lives in one of them), so together they hold
 *   RAM + disk budgets' worth of distinct samples: a disk hit moves the sample back to
 *   RAM and frees its slot.
 */
import type { StageFile } from "../io/mod.ts";
import type { FieldSpec, HostArray, HostBatch } from "./dataset.ts";
import { type AsyncBatchSource, fieldBytes } from "./pack_source.ts";

/** Counters of one rank's tiers (the record stream and the dashboard show them). */
export interface TierStats {
  /** Samples served from RAM, from the disk stage, and read from the source. */
  ramHits: number;
  /** Samples served from the disk stage. */
  diskHits: number;
  /** Samples read from the source (misses of both tiers, and stage reads that failed). */
  sourceReads: number;
  /** Records and bytes held now. */
  ramSamples: number;
  /** Bytes of the records held in RAM now. */
  ramBytes: number;
  /** Records held in the disk stage now. */
  diskSamples: number;
  /** Bytes of the records held in the disk stage now. */
  diskBytes: number;
  /** Records RAM evicted; of those, spilled to disk and dropped (disk full or off). */
  evictions: number;
  /** Evicted records written to the disk stage. */
  spills: number;
  /** Evicted records dropped (disk stage full or off; the source still has them). */
  drops: number;
}

/** Budgets of {@link SampleTiers} (the trainer's `ramMaxUsage`, `sampleCache`, `diskStage`). */
export interface TierOptions {
  /** RAM budget in bytes (0: nothing retained). */
  ramBytes: number;
  /** flodl's `sample_cache` (default on). */
  sampleCache?: boolean;
  /** The disk stage file (none: no disk tier). */
  disk?: StageFile;
  /** Disk budget in bytes (with `disk`). */
  diskBytes?: number;
}

const ARRAYS = { f32: Float32Array, i32: Int32Array, u32: Uint32Array } as const;

/** An {@link AsyncBatchSource} served through RAM and disk tiers. */
export class SampleTiers implements AsyncBatchSource {
  /** The source's fields, unchanged. */
  readonly fields: readonly FieldSpec[];
  readonly #source: AsyncBatchSource;
  readonly #sizes: number[];
  readonly #record: number;
  readonly #ramSlots: number;
  readonly #diskSlots: number;
  readonly #disk?: StageFile;
  /** Records in RAM, least recently used first (Map keeps insertion order). */
  readonly #ram = new Map<number, Uint8Array>();
  /** Sample index → disk slot. */
  readonly #onDisk = new Map<number, number>();
  /** Disk slots freed by disk hits, reused before new ones. */
  readonly #freeSlots: number[] = [];
  #usedSlots = 0;
  /** Set when a stage write failed (a full disk or OPFS quota): the disk tier is off from then on. */
  #diskError?: string;
  #stats: TierStats = { ramHits: 0, diskHits: 0, sourceReads: 0, ramSamples: 0, ramBytes: 0, diskSamples: 0, diskBytes: 0, evictions: 0, spills: 0, drops: 0 };

  /**
   * Tiers in front of `source`, sized in whole records from the budgets of `options`.
   * @throws {RangeError} For a negative or non-finite budget, naming the knob.
   */
  constructor(source: AsyncBatchSource, options: TierOptions) {
    for (const [knob, v] of [["ramMaxUsage (bytes)", options.ramBytes], ["diskStage (bytes)", options.diskBytes ?? 0]] as const) {
      if (!Number.isFinite(v) || v < 0) throw new RangeError(`${knob}: the budget must be a finite number ≥ 0, got ${v}`);
    }
    this.#source = source;
    this.fields = source.fields;
    this.#sizes = source.fields.map(fieldBytes);
    this.#record = this.#sizes.reduce((a, b) => a + b, 0);
    this.#ramSlots = options.sampleCache === false ? 0 : Math.floor(options.ramBytes / this.#record);
    this.#disk = options.disk;
    this.#diskSlots = options.disk ? Math.floor((options.diskBytes ?? 0) / this.#record) : 0;
  }

  /** Number of samples: the source's. */
  len(): number {
    return this.#source.len();
  }

  /** Bytes of one sample. */
  get recordBytes(): number {
    return this.#record;
  }

  /** The counters so far, with what the tiers hold now. */
  stats(): TierStats {
    return { ...this.#stats, ramSamples: this.#ram.size, ramBytes: this.#ram.size * this.#record, diskSamples: this.#onDisk.size, diskBytes: this.#onDisk.size * this.#record };
  }

  /**
   * The batch of `indices` (repeats allowed): each sample from RAM, the disk stage or the
   * source, in that order of preference; what was read is kept (in RAM, evicting to disk; with RAM off, on disk).
   */
  async readBatch(indices: readonly number[]): Promise<HostBatch> {
    const records = new Map<number, Uint8Array>();
    const fromDisk: [number, number][] = [];
    const misses: number[] = [];
    for (const i of new Set(indices)) {
      const r = this.#ram.get(i);
      if (r) {
        this.#ram.delete(i); // most recently used goes last
        this.#ram.set(i, r);
        records.set(i, r);
        this.#stats.ramHits++;
      } else if (this.#onDisk.has(i)) fromDisk.push([i, this.#onDisk.get(i)!]);
      else misses.push(i);
    }
    const [staged, sourceBatch] = await Promise.all([
      // A failed stage read (the file gone, an I/O error) turns the disk tier off; those
      // samples come from the source instead (below): a sample is never lost to the stage.
      Promise.all(fromDisk.map(([i, slot]) => this.#disk!.read(slot * this.#record, this.#record).catch((e) => this.#diskFailed(i, e, "reading")))),
      misses.length ? this.#source.readBatch(misses) : Promise.resolve(undefined),
    ]);
    const unread = fromDisk.filter((_, k) => staged[k] === undefined);
    if (unread.length) {
      const again = await this.#source.readBatch(unread.map(([i]) => i));
      unread.forEach(([i], row) => records.set(i, this.#recordOf(again, row)));
      this.#stats.sourceReads += unread.length;
      fromDisk.splice(0, fromDisk.length, ...fromDisk.filter((_, k) => staged[k] !== undefined));
    }
    const diskRecords = staged.filter((r): r is Uint8Array<ArrayBuffer> => r !== undefined);
    fromDisk.forEach(([i, slot], k) => {
      records.set(i, diskRecords[k]);
      if (this.#ramSlots > 0 && this.#onDisk.get(i) === slot) {
        this.#onDisk.delete(i); // moves to RAM below
        this.#freeSlots.push(slot);
      }
    });
    this.#stats.diskHits += fromDisk.length;
    this.#stats.sourceReads += misses.length;
    const fresh: [number, Uint8Array][] = this.#ramSlots > 0 ? fromDisk.map(([i], k) => [i, diskRecords[k]]) : [];
    if (sourceBatch) {
      misses.forEach((index, row) => {
        const rec = this.#recordOf(sourceBatch, row);
        records.set(index, rec);
        fresh.push([index, rec]);
      });
    }
    await this.#retain(fresh);
    return this.#assemble(indices, records);
  }

  /** Keep fresh records in RAM (evicting to disk) or, with RAM off, straight on disk. */
  async #retain(fresh: [number, Uint8Array][]): Promise<void> {
    const writes: Promise<void>[] = [];
    const toDisk = (i: number, rec: Uint8Array) => {
      if (this.#onDisk.has(i)) return true;
      if (this.#diskError) return false;
      let slot = this.#freeSlots.pop();
      if (slot === undefined) {
        if (this.#usedSlots >= this.#diskSlots) return false;
        slot = this.#usedSlots++;
      }
      this.#onDisk.set(i, slot);
      writes.push(this.#disk!.write(slot * this.#record, rec).catch((e) => this.#diskFailed(i, e)));
      return true;
    };
    for (const [i, rec] of fresh) {
      if (this.#ramSlots === 0) {
        toDisk(i, rec);
        continue;
      }
      if (this.#ram.has(i)) continue;
      while (this.#ram.size >= this.#ramSlots) {
        const [old, oldRec] = this.#ram.entries().next().value as [number, Uint8Array];
        this.#ram.delete(old);
        this.#stats.evictions++;
        if (toDisk(old, oldRec)) this.#stats.spills++;
        else this.#stats.drops++;
      }
      this.#ram.set(i, rec);
    }
    await Promise.all(writes);
  }

  /** Row `row` of a source batch as one record (the fields' bytes back to back). */
  #recordOf(batch: HostBatch, row: number): Uint8Array {
    const rec = new Uint8Array(this.#record);
    let off = 0;
    batch.forEach((f, k) => {
      rec.set(new Uint8Array(f.data.buffer, f.data.byteOffset + row * this.#sizes[k], this.#sizes[k]), off);
      off += this.#sizes[k];
    });
    return rec;
  }

  /**
   * A failed write or read: that sample is not on disk (the source still has it); stop
   * staging (a failed read also stops reading the stage), say why once.
   */
  #diskFailed(index: number, e: unknown, what = "writing"): undefined {
    this.#onDisk.delete(index);
    if (what === "reading") {
      for (const slot of this.#onDisk.values()) this.#freeSlots.push(slot);
      this.#onDisk.clear();
    }
    if (this.#diskError) return;
    this.#diskError = (e as Error).message;
    console.warn(`diskStage: ${what} ${this.#disk!.where} failed (${this.#diskError}); staging stops, samples come from RAM and the source`);
  }

  #assemble(indices: readonly number[], records: Map<number, Uint8Array>): HostBatch {
    const b = indices.length;
    const out = this.fields.map((f) => {
      const n = this.#sizes[this.fields.indexOf(f)] / 4;
      return { data: new ARRAYS[f.dtype](b * n) as HostArray, shape: [b, ...f.shape] };
    });
    const views = out.map((f) => new Uint8Array(f.data.buffer));
    indices.forEach((index, row) => {
      const rec = records.get(index)!;
      let off = 0;
      this.#sizes.forEach((size, k) => {
        views[k].set(rec.subarray(off, off + size), row * size);
        off += size;
      });
    });
    return out;
  }

  /** Delete the disk stage (end of the run). */
  async close(): Promise<void> {
    this.#ram.clear();
    this.#onDisk.clear();
    await this.#disk?.remove();
  }
}
