/** Shape rules of attention and RoPE, without an adapter: accepted shapes and refusals naming both sides. */
import { attentionBiasStrides, attentionDims } from "../../../src/tensor/ops/attention.ts";
import { ropeAttrs } from "../../../src/tensor/ops/rope.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

Deno.test("attentionDims reads B, H, Tq, Tk, D and accepts masks of [Tq, Tk] and [B, Tk]", () => {
  assertEquals(attentionDims([2, 3, 7, 5], [2, 3, 9, 5], [2, 3, 9, 5], [7, 9], [2, 9]), {
    b: 2,
    h: 3,
    tq: 7,
    tk: 9,
    d: 5,
  });
});

Deno.test("attentionDims refuses mismatched q, k, v and masks, showing the shapes", () => {
  assertThrows(() => attentionDims([2, 3, 7], [2, 3, 7], [2, 3, 7]), TypeError, "[B, H, T, D]", "q=[2,3,7]");
  assertThrows(() => attentionDims([2, 3, 7, 5], [2, 3, 9, 4], [2, 3, 9, 4]), RangeError, "q=[2,3,7,5]", "k=[2,3,9,4]");
  assertThrows(() => attentionDims([2, 3, 7, 5], [2, 3, 9, 5], [2, 3, 8, 5]), RangeError, "v=[2,3,8,5]");
  assertThrows(() => attentionDims([2, 3, 7, 5], [1, 3, 9, 5], [1, 3, 9, 5]), RangeError, "k=[1,3,9,5]");
  assertThrows(
    () => attentionDims([2, 3, 7, 5], [2, 3, 9, 5], [2, 3, 9, 5], [9, 7]),
    RangeError,
    "attnMask",
    "[7, 9]",
    "[9,7]",
  );
  assertThrows(
    () => attentionDims([2, 3, 7, 5], [2, 3, 9, 5], [2, 3, 9, 5], undefined, [3, 9]),
    RangeError,
    "keyPaddingMask",
    "[2, 9]",
    "[3,9]",
  );
});

Deno.test("attentionBiasStrides reads a bias as [B, H, Tq, Tk]: 0 on broadcast dims, refusals show both shapes", () => {
  const dims = { b: 2, h: 3, tq: 4, tk: 5 };
  const s = (shape: number[]) => Object.values(attentionBiasStrides(shape, dims));
  assertEquals(s([2, 3, 4, 5]), [60, 20, 5, 1]);
  assertEquals(s([4, 5]), [0, 0, 5, 1]);
  assertEquals(s([3, 4, 5]), [0, 20, 5, 1]);
  assertEquals(s([1, 3, 4, 5]), [0, 20, 5, 1], "ALiBi's [1, H, Tq, Tk]");
  assertEquals(s([2, 1, 1, 5]), [5, 0, 0, 1], "per key [B, 1, 1, Tk]");
  assertEquals(s([2, 1, 4, 1]), [4, 0, 1, 0]);
  assertEquals(s([]), [0, 0, 0, 0], "a scalar");
  assertThrows(() => attentionBiasStrides([5, 4], dims), RangeError, "attnBias", "[2,3,4,5]", "[5,4]");
  assertThrows(() => attentionBiasStrides([2, 4, 5], dims), RangeError, "[2,4,5]");
  assertThrows(() => attentionBiasStrides([1, 2, 3, 4, 5], dims), RangeError, "[1,2,3,4,5]");
});

Deno.test("ropeAttrs gives defaults and refuses a base <= 1 or a bad offset", () => {
  assertEquals(ropeAttrs({}), { base: 10000, offset: 0, interleaved: false });
  assertThrows(() => ropeAttrs({ base: 0.5 }), RangeError, "base", "0.5");
  assertThrows(() => ropeAttrs({ offset: 1.5 }), RangeError, "offset", "1.5");
});
