/**
 * Datasets larger than memory: samples read by index from a file, never loaded
 * whole. The file is a safetensors file with one tensor per field, `[N, ...sampleShape]`
 * (F32, I32 or U32), so PyTorch reads it as it is and anything that writes safetensors
 * writes one. Reads go through a {@link RangedFile}: a local file in Deno, HTTP `Range`
 * requests in a browser (a tab on another machine reads what the coordinator serves).
 * A batch's rows are coalesced into one read per run of consecutive indices and field.
 */
import {
  parseSafetensorsHeader,
  type RangedFile,
  safetensorsHeaderBytes,
  type SafetensorsDType,
  type SafetensorsEntry,
} from "../io/mod.ts";
import { type BatchDataSet, checkIndices, type FieldDType, type FieldSpec, type HostArray, type HostBatch } from "./dataset.ts";

/** A dataset whose batches arrive asynchronously (a file, the network, a cache in front of them). */
export interface AsyncBatchSource {
  /** What each field of a batch holds, in order (shapes per sample, without the batch dim). */
  readonly fields: readonly FieldSpec[];
  /** Number of samples; indices are 0..len()−1. */
  len(): number;
  /** The samples at `indices`, in that order, stacked: as {@link BatchDataSet.getBatch}, once read. */
  readBatch(indices: readonly number[]): Promise<HostBatch>;
}

const TO_FIELD: Partial<Record<SafetensorsDType, FieldDType>> = { F32: "f32", I32: "i32", U32: "u32" };
const TO_FILE: Record<FieldDType, SafetensorsDType> = { f32: "F32", i32: "I32", u32: "U32" };
const ARRAYS = { f32: Float32Array, i32: Int32Array, u32: Uint32Array } as const;

/** Metadata key listing the fields in order (safetensors keeps no order of its own that all writers honour). */
export const PACK_FIELDS_KEY = "flodl.fields";

const numel = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** Bytes of one sample's field. */
export function fieldBytes(f: FieldSpec): number {
  return numel(f.shape) * 4;
}

/** A dataset read from a safetensors pack file by index (see the module comment). */
export class PackSource implements AsyncBatchSource {
  /** One per tensor read, in order: its name, dtype and shape without dim 0. */
  readonly fields: readonly FieldSpec[];
  /** The pack file the samples are read from. */
  readonly file: RangedFile;
  readonly #n: number;
  /** Byte offset of field k's first sample in the file. */
  readonly #starts: number[];

  private constructor(file: RangedFile, fields: FieldSpec[], n: number, starts: number[]) {
    this.file = file;
    this.fields = fields;
    this.#n = n;
    this.#starts = starts;
  }

  /**
   * Read the header and check that every field is `[N, ...]` with the same N.
   * @param file The pack file.
   * @param names Fields to read, in order (default: the file's `flodl.fields` metadata, else header order).
   * @throws {TypeError|RangeError} Naming the file and the field for a dtype or shape it cannot serve.
   */
  static async open(file: RangedFile, names?: readonly string[]): Promise<PackSource> {
    const first = await file.read(0, Math.min(8, file.size));
    const headerEnd = safetensorsHeaderBytes(first, file.where);
    const prefix = await file.read(0, Math.min(headerEnd, file.size));
    const header = parseSafetensorsHeader(prefix, file.size, file.where);
    const byName = new Map(header.entries.map((e) => [e.name, e]));
    const order = names ?? header.metadata[PACK_FIELDS_KEY]?.split(",") ?? header.entries.map((e) => e.name);
    if (order.length === 0) throw new RangeError(`pack "${file.where}": holds no tensors, a dataset needs at least one field`);
    let n = -1;
    const fields: FieldSpec[] = [], starts: number[] = [];
    for (const name of order) {
      const e: SafetensorsEntry | undefined = byName.get(name);
      if (!e) throw new RangeError(`pack "${file.where}": no field "${name}" (it holds ${[...byName.keys()].join(", ")})`);
      const dtype = TO_FIELD[e.dtype];
      if (!dtype) throw new TypeError(`pack "${file.where}": field "${name}" is ${e.dtype}; a dataset field must be F32, I32 or U32`);
      if (e.shape.length === 0) throw new RangeError(`pack "${file.where}": field "${name}" is a scalar; fields are [N, ...sample shape]`);
      if (n >= 0 && e.shape[0] !== n) {
        throw new RangeError(`pack "${file.where}": field "${name}" has ${e.shape[0]} samples, "${fields[0].name}" has ${n}`);
      }
      n = e.shape[0];
      fields.push({ name, dtype, shape: e.shape.slice(1) });
      starts.push(header.dataStart + e.begin);
    }
    return new PackSource(file, fields, n, starts);
  }

  /** Number of samples: N, dim 0 of every field's tensor. */
  len(): number {
    return this.#n;
  }

  /** The rows of `indices` (any order, repeats allowed), one read per run of consecutive indices and field. */
  async readBatch(indices: readonly number[]): Promise<HostBatch> {
    checkIndices(indices, this.#n, `pack "${this.file.where}"`);
    const b = indices.length;
    const out = this.fields.map((f) => ({ data: new ARRAYS[f.dtype](b * numel(f.shape)) as HostArray, shape: [b, ...f.shape] }));
    const order = indices.map((index, row) => ({ index, row })).sort((x, y) => x.index - y.index);
    const runs: { first: number; count: number; rows: { index: number; row: number }[] }[] = [];
    for (const o of order) {
      const last = runs[runs.length - 1];
      if (last && o.index <= last.first + last.count) {
        if (o.index === last.first + last.count) last.count++;
        last.rows.push(o);
      } else runs.push({ first: o.index, count: 1, rows: [o] });
    }
    await Promise.all(this.fields.flatMap((f, k) => {
      const size = fieldBytes(f), dst = new Uint8Array(out[k].data.buffer);
      return runs.map(async (run) => {
        const bytes = await this.file.read(this.#starts[k] + run.first * size, run.count * size);
        for (const { index, row } of run.rows) dst.set(bytes.subarray((index - run.first) * size, (index - run.first + 1) * size), row * size);
      });
    }));
    return out;
  }
}

/**
 * Write any batch dataset as a pack file, a chunk of samples at a time (the dataset need
 * not fit in memory twice): the header, then each field's rows in sample order.
 * @param ds The dataset.
 * @param write Appends bytes to the file (called in order, awaited).
 * @param chunk Samples per `getBatch` call.
 */
export async function writePack(ds: BatchDataSet, write: (bytes: Uint8Array) => Promise<void>, chunk = 4096): Promise<void> {
  const n = ds.len();
  const header: Record<string, unknown> = { __metadata__: { [PACK_FIELDS_KEY]: ds.fields.map((f) => f.name).join(",") } };
  let offset = 0;
  for (const f of ds.fields) {
    if (f.name.includes(",")) throw new RangeError(`writePack: field name "${f.name}" may not contain a comma`);
    const bytes = n * fieldBytes(f);
    header[f.name] = { dtype: TO_FILE[f.dtype], shape: [n, ...f.shape], data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - ((8 + new TextEncoder().encode(json).length) % 8)) % 8);
  const text = new TextEncoder().encode(json);
  const prefix = new Uint8Array(8 + text.length);
  new DataView(prefix.buffer).setBigUint64(0, BigInt(text.length), true);
  prefix.set(text, 8);
  await write(prefix);
  for (let k = 0; k < ds.fields.length; k++) {
    for (let s = 0; s < n; s += chunk) {
      const idx = Array.from({ length: Math.min(chunk, n - s) }, (_, i) => s + i);
      const data = ds.getBatch(idx)[k].data;
      await write(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    }
  }
}
