import { ArrayDataSet, toDevice } from "../../../src/data/dataset.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randint, randn } from "../../util/random.ts";

gpuTest("toDevice uploads a host batch as one tensor per field with its shape and dtype", async (device) => {
  const rng = mulberry32(9);
  const xs = randn(33 * 7, rng), ys = randint(33, 10, rng), ids = Uint32Array.from({ length: 33 }, (_, i) => 4e9 + i);
  const ds = new ArrayDataSet([
    { name: "x", data: xs, shape: [33, 7] },
    { name: "y", data: ys, shape: [33] },
    { name: "id", data: ids, shape: [33] },
  ]);
  const batch = ds.getBatch([32, 0, 5]);
  const [x, y, id] = toDevice(batch, device);
  assertEquals([x.shape, y.shape, id.shape], [[3, 7], [3], [3]], "shapes");
  assertEquals([x.dtype, y.dtype, id.dtype], ["f32", "i32", "u32"], "dtypes");
  assert(x.device === device, "device");
  assertEquals([...await x.toArray()], [...xs.subarray(224, 231), ...xs.subarray(0, 7), ...xs.subarray(35, 42)], "x");
  assertEquals([...await y.toArray()], [ys[32], ys[0], ys[5]], "y");
  assertEquals([...await id.toArray()], [4e9 + 32, 4e9, 4e9 + 5], "id");
  const [empty] = toDevice(ds.getBatch([]));
  assertEquals(empty.shape, [0, 7], "empty batch");
});
