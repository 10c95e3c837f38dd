import { ArrayDataSet, batchDatasetFrom, type DataSet } from "../../../src/data/dataset.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";
import { mulberry32, randn } from "../../util/random.ts";

/** Sample i: x = [i, 2i, 3i] as f32 of shape [3], y = i % 4 as an i32 scalar. */
class Toy implements DataSet {
  readonly fields = [
    { name: "x", dtype: "f32", shape: [3] },
    { name: "y", dtype: "i32", shape: [] },
  ] as const;
  constructor(readonly n = 11, readonly broken?: "type" | "count") {}
  len() {
    return this.n;
  }
  get(i: number) {
    if (this.broken === "count") return [new Float32Array(3)];
    const x = this.broken === "type" ? new Float64Array([i, 2 * i, 3 * i]) : new Float32Array([i, 2 * i, 3 * i]);
    return [x as Float32Array<ArrayBuffer>, new Int32Array([i % 4])];
  }
}

Deno.test("batchDatasetFrom stacks samples position-wise with dim 0 = indices.length", () => {
  const b = batchDatasetFrom(new Toy());
  assertEquals(b.len(), 11, "len");
  const [x, y] = b.getBatch([5, 0, 10, 5]);
  assertEquals(x.shape, [4, 3], "x shape");
  assertEquals(y.shape, [4], "y shape (scalar field)");
  assertEquals([...x.data], [5, 10, 15, 0, 0, 0, 10, 20, 30, 5, 10, 15], "x values");
  assertEquals([...y.data], [1, 0, 2, 1], "y values");
  assertEquals(y.data.constructor.name, "Int32Array", "y dtype");
  assertEquals(b.getBatch([]).map((f) => f.shape), [[0, 3], [0]], "empty batch");
});

Deno.test("batchDatasetFrom checks indices and each sample against the declared fields", () => {
  assertThrows(
    () => batchDatasetFrom(new Toy()).getBatch([3, 11]),
    RangeError,
    "Toy.getBatch",
    "index 11",
    "11 samples",
  );
  assertThrows(() => batchDatasetFrom(new Toy()).getBatch([-1]), RangeError, "index -1");
  assertThrows(() => batchDatasetFrom(new Toy()).getBatch([1.5]), RangeError, "index 1.5");
  assertThrows(
    () => batchDatasetFrom(new Toy(5, "type")).getBatch([2]),
    TypeError,
    "Toy.get(2)",
    `field "x"`,
    "Float32Array of 3",
    "Float64Array",
  );
  assertThrows(
    () => batchDatasetFrom(new Toy(5, "count")).getBatch([2]),
    TypeError,
    "Toy.get(2) returned 1 fields",
    "declares 2",
  );
});

Deno.test("ArrayDataSet get and getBatch agree and are pure functions of the index", () => {
  const rng = mulberry32(3);
  const xs = randn(7 * 2 * 3, rng), ys = new Int32Array([6, 5, 4, 3, 2, 1, 0]);
  const ds = new ArrayDataSet([{ name: "x", data: xs, shape: [7, 2, 3] }, { name: "y", data: ys, shape: [7] }]);
  assertEquals(
    ds.fields,
    [{ name: "x", dtype: "f32", shape: [2, 3] }, { name: "y", dtype: "i32", shape: [] }],
    "fields",
  );
  const [x, y] = ds.getBatch([6, 2]);
  assertEquals(x.shape, [2, 2, 3], "x shape");
  assertEquals([...x.data], [...xs.subarray(36, 42), ...xs.subarray(12, 18)], "x rows");
  assertEquals([...y.data], [0, 4], "y rows");
  const viaSamples = batchDatasetFrom(ds).getBatch([6, 2]);
  assertEquals(viaSamples.map((f) => [...f.data]), [[...x.data], [...y.data]], "stacked samples equal the batch");
  assertEquals(ds.get(3).map((a) => [...a]), ds.get(3).map((a) => [...a]), "same index, same values");
  ds.get(3)[0][0] = 99;
  assertEquals(ds.get(3)[0][0], xs[18], "returned arrays are copies");
  assertThrows(() => ds.get(7), RangeError, "ArrayDataSet.get", "index 7");
  assertThrows(
    () => new ArrayDataSet([{ data: xs, shape: [7, 6] }, { data: ys, shape: [6] }]),
    RangeError,
    `"field1"`,
    "sample count 7",
  );
  assertThrows(() => new ArrayDataSet([{ data: xs, shape: [7, 5] }]), RangeError, "42 values", "needs 35");
});
