/**
 * Dataset contracts, on the host.
 *
 * flodl's datasets return device tensors. Ours return host typed arrays, and one
 * {@link toDevice} call uploads a batch (one `writeBuffer` per field), because:
 * - the coordinator, which has no GPU, can hold a dataset to count its length and the
 *   coverage of an epoch;
 * - a rank can gather and prefetch the next batch on the CPU (or in a Worker) while the
 *   GPU trains on the current one, and batches cross `postMessage` as transferables;
 * - purity (same index, same values) is checkable without reading back from a GPU.
 */
import { fromArray, type Tensor, type TensorOptions } from "../tensor/mod.ts";

/** Host storage of one field. */
export type HostArray = Float32Array<ArrayBuffer> | Int32Array<ArrayBuffer> | Uint32Array<ArrayBuffer>;

/** Element type of a field (the tensor dtype it uploads to). */
export type FieldDType = "f32" | "i32" | "u32";

/** What a dataset declares about one position of its samples. */
export interface FieldSpec {
  /** Name, for messages ("image", "label"). */
  name: string;
  /** Element type. */
  dtype: FieldDType;
  /** Shape of one sample's field (`[]` for a scalar such as a class label). */
  shape: readonly number[];
}

/**
 * A per-sample dataset (flodl's `DataSet`). `get(i)` returns one host array per field, in
 * the order of `fields`, each with the field's dtype and `numel(shape)` elements.
 * Purity: `get(i)` must be a pure function of `i` (caches re-serve it); randomness belongs
 * in a per-batch transform keyed by the pick.
 */
export interface DataSet {
  /** What each position of a sample holds, in order. */
  readonly fields: readonly FieldSpec[];
  /** Number of samples (flodl's `len`); indices are 0..len()−1. */
  len(): number;
  /** Sample `index`: one host array per field, in field order. */
  get(index: number): HostArray[];
}

/** One field of a batch: values of every sample, concatenated; `shape[0]` is the batch size. */
export interface HostField {
  /** The values, row-major, `numel(shape)` of them. */
  data: HostArray;
  /** Shape of the batch's field: `[batch, ...field shape]`. */
  shape: number[];
}

/** A batch on the host: one {@link HostField} per dataset field, in field order. */
export type HostBatch = HostField[];

/** A batched dataset (flodl's `BatchDataSet`): `getBatch(indices)` has dim 0 = `indices.length`. */
export interface BatchDataSet {
  /** What each field of a batch holds, in order (shapes per sample, without the batch dim). */
  readonly fields: readonly FieldSpec[];
  /** Number of samples (flodl's `len`); indices are 0..len()−1. */
  len(): number;
  /** The samples at `indices`, in that order, stacked: one {@link HostField} per field. */
  getBatch(indices: readonly number[]): HostBatch;
}

const ARRAYS = { f32: Float32Array, i32: Int32Array, u32: Uint32Array } as const;

/** Number of elements of a shape. */
function count(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/**
 * Throw unless every index is an integer in [0, len).
 * @throws {RangeError} Naming the dataset, the bad index and the length.
 */
export function checkIndices(indices: readonly number[], len: number, what: string): void {
  for (const i of indices) {
    if (!Number.isInteger(i) || i < 0 || i >= len) {
      throw new RangeError(`${what}: index ${i} is out of range for ${len} samples`);
    }
  }
}

/**
 * Promote a per-sample dataset to a batched one by stacking samples position-wise
 * (flodl's `batch_dataset_from`). Each sample is checked against the declared fields.
 * @throws {TypeError} From `getBatch`, when a sample's field has the wrong array type or length.
 * @example
 * ```ts
 * import { batchDatasetFrom, type DataSet } from "./dataset.ts";
 * const squares: DataSet = {
 *   fields: [{ name: "x", dtype: "f32", shape: [2] }],
 *   len: () => 10,
 *   get: (i) => [new Float32Array([i, i * i])],
 * };
 * const [x] = batchDatasetFrom(squares).getBatch([3, 1]);
 * if (x.shape.join() !== "2,2" || x.data[1] !== 9) throw new Error("stacked");
 * ```
 */
export function batchDatasetFrom(ds: DataSet): BatchDataSet {
  const name = ds.constructor?.name && ds.constructor !== Object ? ds.constructor.name : "DataSet";
  return {
    fields: ds.fields,
    len: () => ds.len(),
    getBatch(indices) {
      checkIndices(indices, ds.len(), `${name}.getBatch`);
      const b = indices.length;
      const out = ds.fields.map((f) => ({ data: new ARRAYS[f.dtype](b * count(f.shape)), shape: [b, ...f.shape] }));
      indices.forEach((index, row) => {
        const sample = ds.get(index);
        if (sample.length !== ds.fields.length) {
          throw new TypeError(
            `${name}.get(${index}) returned ${sample.length} fields, the dataset declares ${ds.fields.length}`,
          );
        }
        ds.fields.forEach((f, j) => {
          const n = count(f.shape), v = sample[j];
          if (!(v instanceof ARRAYS[f.dtype]) || v.length !== n) {
            throw new TypeError(
              `${name}.get(${index}) field "${f.name}" must be a ${ARRAYS[f.dtype].name} of ${n} values ` +
                `(shape [${f.shape}]), got ${v?.constructor?.name} of ${v?.length}`,
            );
          }
          out[j].data.set(v, row * n);
        });
      });
      return out;
    },
  };
}

/**
 * Upload a host batch: one tensor per field (`fromArray`, one `writeBuffer` each, recorded
 * before the step's kernels). The tensors are step-scoped.
 * @param device Where to put them; default the default device.
 */
export function toDevice(batch: HostBatch, device?: TensorOptions["device"]): Tensor[] {
  return batch.map((f) => fromArray(f.data, f.shape, { device }));
}

/**
 * A dataset over host arrays held in memory (synthetic data, tests): field `k` is
 * `{ data, shape }` with `shape[0]` = number of samples, the same for every field.
 * Implements both {@link DataSet} and {@link BatchDataSet}.
 * @throws {RangeError} When fields disagree on the sample count or data length does not fill shape.
 */
export class ArrayDataSet implements DataSet, BatchDataSet {
  /** One spec per field: its name (`field<k>` when unnamed), dtype from the array type, shape without dim 0. */
  readonly fields: readonly FieldSpec[];
  readonly #data: readonly HostArray[];
  readonly #n: number;

  /** Hold `fields` (not copied); each field's dim 0 is the sample count. */
  constructor(fields: readonly (HostField & { name?: string })[]) {
    if (fields.length === 0) throw new RangeError("ArrayDataSet: needs at least one field, got none");
    this.#n = fields[0].shape[0];
    this.fields = fields.map((f, k) => {
      const name = f.name ?? `field${k}`;
      if (f.shape.length === 0 || f.shape[0] !== this.#n) {
        throw new RangeError(
          `ArrayDataSet: field "${name}" shape [${f.shape}] must start with the sample count ${this.#n}`,
        );
      }
      if (count(f.shape) !== f.data.length) {
        throw new RangeError(
          `ArrayDataSet: field "${name}" has ${f.data.length} values, shape [${f.shape}] needs ${count(f.shape)}`,
        );
      }
      const dtype: FieldDType = f.data instanceof Float32Array ? "f32" : f.data instanceof Int32Array ? "i32" : "u32";
      return { name, dtype, shape: f.shape.slice(1) };
    });
    this.#data = fields.map((f) => f.data);
  }

  /** Number of samples: dim 0 of the fields. */
  len(): number {
    return this.#n;
  }

  /**
   * Sample `index`, each field a copy.
   * @throws {RangeError} When `index` is not an integer in [0, len()).
   */
  get(index: number): HostArray[] {
    checkIndices([index], this.#n, "ArrayDataSet.get");
    return this.fields.map((f, k) => {
      const n = count(f.shape);
      return this.#data[k].slice(index * n, (index + 1) * n) as HostArray;
    });
  }

  /**
   * The samples at `indices`, gathered into fresh arrays (dim 0 = `indices.length`).
   * @throws {RangeError} When an index is not an integer in [0, len()).
   */
  getBatch(indices: readonly number[]): HostBatch {
    checkIndices(indices, this.#n, "ArrayDataSet.getBatch");
    return this.fields.map((f, k) => {
      const n = count(f.shape), src = this.#data[k];
      const data = new ARRAYS[f.dtype](indices.length * n);
      indices.forEach((i, row) => data.set(src.subarray(i * n, (i + 1) * n), row * n));
      return { data, shape: [indices.length, ...f.shape] };
    });
  }
}
