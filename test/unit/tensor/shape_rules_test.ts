/** Shape rules of the shape and indexing ops (pure, no GPU) and their error messages. */
import {
  catShape,
  copyPlan,
  dimOf,
  expandShape,
  flattenShape,
  narrowShape,
  permuteShape,
  SHAPE_PARAMS,
  squeezeShape,
  stackShape,
  transposeDims,
  unsqueezeShape,
} from "../../../src/tensor/ops/shape.ts";
import {
  embeddingShape,
  gatherShape,
  indexSelectShape,
  oneHotShape,
} from "../../../src/tensor/ops/gather.ts";
import { GATHER_PARAMS } from "../../../src/tensor/ops/gather_kernel.ts";
import type { Layout } from "../../../src/gpu/mod.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

Deno.test("dimOf counts negative dims from the end and names op, dim and shape when out of range", () => {
  assertEquals(dimOf(-1, [2, 3, 4], "op"), 2, "-1");
  assertEquals(dimOf(3, [2, 3, 4], "op", 1), 3, "insert position");
  assertThrows(() => dimOf(3, [2, 3, 4], "narrow"), RangeError, "narrow", "dim 3", "[2,3,4]", "-3..2");
  assertThrows(() => dimOf(-4, [2, 3, 4], "cat"), RangeError, "cat", "dim -4");
  assertThrows(() => dimOf(1.5, [2, 3, 4], "cat"), RangeError, "dim 1.5");
});

Deno.test("permuteShape reorders sizes and rejects dims that are not a permutation", () => {
  assertEquals(
    permuteShape([2, 3, 4, 5, 6], [4, 0, -2, 1, 2]),
    { shape: [6, 2, 5, 3, 4], dims: [4, 0, 3, 1, 2] },
    "5-D",
  );
  assertThrows(() => permuteShape([2, 3, 4], [0, 0, 1]), RangeError, "permute", "[0,0,1]", "[2,3,4]");
  assertThrows(() => permuteShape([2, 3, 4], [1, 0]), RangeError, "permute", "[1,0]", "3 dims");
  assertThrows(() => permuteShape([2, 3], [0, 2]), RangeError, "permute", "dim 2");
  assertEquals(transposeDims([2, 3, 4], 0, -1), [2, 1, 0], "transpose");
  assertThrows(() => transposeDims([2, 3], 0, 2), RangeError, "transpose", "dim 2", "[2,3]");
});

Deno.test("squeeze, unsqueeze and flatten shapes follow PyTorch", () => {
  assertEquals(squeezeShape([1, 3, 1, 5]), [3, 5], "all");
  assertEquals(squeezeShape([1, 3, 1, 5], -2), [1, 3, 5], "one");
  assertEquals(squeezeShape([1, 3, 1, 5], 1), [1, 3, 1, 5], "size 3 stays");
  assertEquals(squeezeShape([1, 3, 1, 5], [0, 2]), [3, 5], "list");
  assertThrows(() => squeezeShape([1, 3], 2), RangeError, "squeeze", "dim 2", "[1,3]");
  assertEquals(unsqueezeShape([3, 5], 0), [1, 3, 5], "front");
  assertEquals(unsqueezeShape([3, 5], -1), [3, 5, 1], "-1 appends");
  assertEquals(unsqueezeShape([3, 5], 2), [3, 5, 1], "ndim appends");
  assertThrows(() => unsqueezeShape([3, 5], 3), RangeError, "unsqueeze", "dim 3", "-3..2");
  assertEquals(flattenShape([2, 3, 4, 5]), [120], "all");
  assertEquals(flattenShape([2, 3, 4, 5], 1, -2), [2, 12, 5], "middle");
  assertEquals(flattenShape([]), [1], "scalar");
  assertThrows(() => flattenShape([2, 3, 4], 2, 1), RangeError, "flatten", "startDim 2", "endDim 1", "[2,3,4]");
});

Deno.test("narrowShape accepts a negative start and names start, length and size when out of range", () => {
  assertEquals(narrowShape([4, 7], -1, -3, 2), { shape: [4, 2], dim: 1, start: 4 }, "negative");
  assertEquals(narrowShape([4, 7], 0, 4, 0), { shape: [0, 7], dim: 0, start: 4 }, "empty at end");
  assertThrows(() => narrowShape([4, 7], 1, 5, 3), RangeError, "narrow", "start 5", "length 3", "size 7", "[4,7]");
  assertThrows(() => narrowShape([4, 7], 1, 8, 0), RangeError, "narrow", "start 8");
  assertThrows(() => narrowShape([4, 7], 1, 0, -1), RangeError, "length -1");
});

Deno.test("catShape sums sizes along dim; a mismatch names both shapes", () => {
  assertEquals(catShape([[2, 1, 3], [2, 4, 3], [2, 2, 3]], -2), { shape: [2, 7, 3], dim: 1 }, "3 inputs");
  assertThrows(() => catShape([[2, 3], [3, 3]], 1), RangeError, "cat", "tensor 1", "[3,3]", "[2,3]", "dim 1");
  assertThrows(() => catShape([[2, 3], [2, 3, 1]], 0), RangeError, "cat", "[2,3,1]", "[2,3]");
  assertThrows(() => catShape([], 0), RangeError, "cat", "at least one");
  assertEquals(stackShape([[2, 3], [2, 3], [2, 3]], -1), { shape: [2, 3, 3], dim: 2 }, "stack at end");
  assertThrows(() => stackShape([[2, 3], [2, 4]], 0), RangeError, "stack", "[2,4]", "[2,3]");
  assertThrows(() => stackShape([[2, 3]], 3), RangeError, "stack", "dim 3");
});

Deno.test("expandShape follows PyTorch expand: -1 keeps, new dims lead, only size-1 dims grow", () => {
  assertEquals(expandShape([3, 1], [2, -1, 4]), [2, 3, 4], "lead and -1");
  assertEquals(expandShape([1], [0]), [0], "to empty");
  assertThrows(() => expandShape([3, 2], [3, 4]), RangeError, "expand", "[3,2]", "[3,4]", "dim 1 has size 2");
  assertThrows(() => expandShape([3], [-1, 3]), RangeError, "expand", "-1", "leading");
  assertThrows(() => expandShape([3, 1], [3]), RangeError, "expand", "fewer dims");
  assertThrows(() => expandShape([3], [2.5]), RangeError, "expand", "2.5");
});

Deno.test("copyPlan merges dims contiguous on both sides and drops size-1 dims", () => {
  assertEquals(copyPlan([2, 3, 4], [12, 4, 1], [12, 4, 1]).dims, [24], "contiguous");
  const t = copyPlan([4, 1, 3], [1, 99, 4], [3, 3, 1]); // transpose of [3,4] with a size-1 dim
  assertEquals([t.dims, t.src, t.dst], [[4, 3], [1, 4], [3, 1]], "transpose");
  const e = copyPlan([5, 2, 3], [0, 0, 1], [6, 3, 1]); // expand [3] to [5,2,3]
  assertEquals([e.dims, e.src, e.dst], [[10, 3], [0, 1], [3, 1]], "expand");
  const seven = [2, 2, 2, 2, 2, 2, 2];
  const rev = [1, 2, 4, 8, 16, 32, 64];
  assertThrows(() => copyPlan(seven, rev, [64, 32, 16, 8, 4, 2, 1], 0, 0, "permute"), RangeError, "permute", "7", "6");
});

Deno.test("index rules: indexSelect, gather, oneHot and embedding shapes and errors", () => {
  assertEquals(
    indexSelectShape([4, 5, 6], -2, [7]),
    { shape: [4, 7, 6], dim: 1, outer: 4, size: 5, inner: 6, k: 7 },
    "select",
  );
  assertThrows(() => indexSelectShape([4, 5], 0, [2, 2]), RangeError, "indexSelect", "1-D", "[2,2]", "[4,5]");
  assertEquals(gatherShape([4, 5, 6], 1, [3, 9, 6]), { shape: [3, 9, 6], dim: 1 }, "gather");
  assertThrows(() => gatherShape([4, 5, 6], 1, [5, 2, 6]), RangeError, "gather", "[5,2,6]", "[4,5,6]", "dim 0");
  assertThrows(() => gatherShape([4, 5], 0, [4]), RangeError, "gather", "[4]", "[4,5]", "1 dims");
  assertThrows(() => gatherShape([1, 1, 1, 1, 1, 1, 1], 0, [1, 1, 1, 1, 1, 1, 1]), RangeError, "gather", "6 dims");
  assertEquals(oneHotShape([2, 3], 10), [2, 3, 10], "oneHot");
  assertThrows(() => oneHotShape([2], 0), RangeError, "oneHot", "numClasses", "0");
  assertEquals(embeddingShape([10, 4], [2, 3]), { shape: [2, 3, 4], pad: -1 }, "embedding");
  assertEquals(embeddingShape([10, 4], [5], -1).pad, 9, "negative paddingIdx");
  assertThrows(() => embeddingShape([10, 4], [5], 10), RangeError, "embedding", "paddingIdx", "-10..9", "10");
  assertThrows(() => embeddingShape([10], [5]), RangeError, "embedding", "[V, D]", "[10]");
});

Deno.test("SHAPE_PARAMS and GATHER_PARAMS mirror their WGSL structs field for field", () => {
  for (const l of [SHAPE_PARAMS, GATHER_PARAMS] as Layout[]) {
    const text = Deno.readTextFileSync(new URL(`../../../shaders/${l.shader}.wgsl`, import.meta.url));
    const body = text.match(/struct Params \{([^}]*)\}/)![1].replace(/\/\/.*$/gm, "");
    const fields = [...body.matchAll(/(\w+)\s*:\s*(\w+)/g)].map((m) => `${m[1]}:${m[2]}`);
    assertEquals(fields, l.names.map((n) => `${n}:${l.fields[n]}`), `${l.shader}.wgsl Params`);
  }
});
