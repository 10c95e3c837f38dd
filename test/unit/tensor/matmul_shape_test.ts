import { linearShape, matmulPlan, matmulShape } from "../../../src/tensor/ops/matmul_plan.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

Deno.test("matmulShape multiplies the last two dims, with each transpose", () => {
  assertEquals(matmulShape([7, 5], [5, 9]), [7, 9]);
  assertEquals(matmulShape([5, 7], [5, 9], true), [7, 9]);
  assertEquals(matmulShape([7, 5], [9, 5], false, true), [7, 9]);
  assertEquals(matmulShape([5, 7], [9, 5], true, true), [7, 9]);
  assertEquals(matmulShape([64, 784], [64, 256], true), [784, 256]);
  assertEquals(matmulShape([1, 1], [1, 1]), [1, 1]);
  assertEquals(matmulShape([0, 3], [3, 0]), [0, 0]);
});

Deno.test("matmulShape broadcasts batch dims as NumPy", () => {
  assertEquals(matmulShape([2, 3, 7, 5], [5, 9]), [2, 3, 7, 9]);
  assertEquals(matmulShape([4, 1, 7, 5], [3, 5, 9]), [4, 3, 7, 9]);
  assertEquals(matmulShape([7, 5], [2, 5, 9]), [2, 7, 9]);
  assertEquals(matmulShape([1, 5, 7], [6, 1, 9, 5], true, true), [6, 1, 7, 9]);
});

Deno.test("matmulShape names both shapes and the transposes when they do not fit", () => {
  assertThrows(() => matmulShape([7, 5], [6, 9]), RangeError, "matmul", "a=[7,5]", "b=[6,9]", "5 vs 6");
  assertThrows(() => matmulShape([7, 5], [5, 9], true), RangeError, "a=[7,5]ᵀ", "b=[5,9]", "7 vs 5");
  assertThrows(() => matmulShape([7, 5], [9, 6], false, true), RangeError, "b=[9,6]ᵀ");
  assertThrows(() => matmulShape([2, 7, 5], [3, 5, 9]), RangeError, "batch", "a=[2,7,5]", "b=[3,5,9]");
});

Deno.test("matmulShape refuses operands under 2 dims with a TypeError naming both", () => {
  assertThrows(() => matmulShape([5], [5, 9]), TypeError, "at least 2 dims", "a=[5]", "b=[5,9]");
  assertThrows(() => matmulShape([7, 5], []), TypeError, "b=[]");
});

Deno.test("linearShape follows nn.Linear: x [..,in], w [out,in], b [out]", () => {
  assertEquals(linearShape([33, 129], [7, 129], [7]), [33, 7]);
  assertEquals(linearShape([2, 3, 129], [7, 129]), [2, 3, 7]);
  assertEquals(linearShape([129], [7, 129]), [7]);
  assertThrows(() => linearShape([33, 128], [7, 129]), RangeError, "linear", "x=[33,128]", "w=[7,129]");
  assertThrows(() => linearShape([33, 129], [7, 129], [8]), RangeError, "b=[8]");
  assertThrows(() => linearShape([33, 129], [7, 1, 129]), TypeError, "w=[7,1,129]");
  assertThrows(() => linearShape([], [7, 129]), TypeError, "x=[]");
});

Deno.test("matmulPlan strides broadcast batch dims by 0 and merges contiguous ones", () => {
  // [4,1,7,5]·[3,5,9]: A steps 35 along dim 0 and stays along dim 1; B the other way round.
  const p = matmulPlan([4, 1, 7, 5], [3, 5, 9]);
  assertEquals([p.m, p.n, p.k, p.batch, p.d1, p.d2], [7, 9, 5, 12, 4, 3]);
  assertEquals(p.sa, [0, 35, 0]);
  assertEquals(p.sb, [0, 0, 45]);
  // Both batched the same way: one merged dim.
  const q = matmulPlan([2, 3, 7, 5], [2, 3, 5, 9]);
  assertEquals([q.batch, q.d1, q.d2, q.sa[2], q.sb[2]], [6, 1, 6, 35, 45]);
});

Deno.test("matmulPlan folds A's batch into its rows when B is shared and A is not transposed", () => {
  const p = matmulPlan([2, 3, 7, 5], [5, 9]);
  assertEquals([p.m, p.n, p.k, p.batch], [42, 9, 5, 1]);
  assertEquals(p.out, [2, 3, 7, 9]);
  const t = matmulPlan([2, 3, 5, 7], [5, 9], true);
  assertEquals([t.m, t.batch, t.sa[2]], [7, 6, 35]);
});

Deno.test("matmulPlan refuses batch dims that need more than 3 strides", () => {
  assertThrows(() => matmulPlan([2, 1, 2, 1, 3, 3], [1, 2, 1, 2, 3, 3]), RangeError, "at most 3");
});
