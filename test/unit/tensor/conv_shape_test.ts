import type { Layout } from "../../../src/gpu/mod.ts";
import { CONV_PARAMS } from "../../../src/tensor/ops/conv.ts";
import { conv2dShape, convTranspose2dShape } from "../../../src/tensor/ops/conv_shape.ts";
import { adaptiveAvgPool2dShape, pool2dShape, POOL_PARAMS } from "../../../src/tensor/ops/pool.ts";
import { conv2dRefShape, convTranspose2dRefShape } from "../../reference/conv.ts";
import { poolRefShape } from "../../reference/pool.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

Deno.test("conv2dShape gives LeNet's shapes and handles stride, padding, dilation, groups and 3-D input", () => {
  assertEquals(conv2dShape([64, 1, 28, 28], [6, 1, 5, 5], [6]), [64, 6, 24, 24], "conv1");
  assertEquals(conv2dShape([64, 6, 12, 12], [16, 6, 5, 5]), [64, 16, 8, 8], "conv2");
  assertEquals(
    conv2dShape([2, 4, 9, 11], [6, 2, 3, 5], undefined, {
      stride: [2, 3],
      padding: [2, 1],
      dilation: [2, 1],
      groups: 2,
    }),
    [
      2,
      6,
      5,
      3,
    ],
    "all options",
  );
  assertEquals(conv2dShape([3, 7, 9], [2, 3, 3, 3], [2], { padding: 1 }), [2, 7, 9], "unbatched");
});

Deno.test("conv2dShape and convTranspose2dShape agree with the reference formulas over a grid of options", () => {
  for (const h of [7, 9, 13]) {
    for (const k of [1, 3, 5]) {
      for (const s of [1, 2, 3]) {
        for (const p of [0, 1, 2]) {
          for (const d of [1, 2]) {
            const o = {
              stride: [s, s] as [number, number],
              padding: [p, p] as [number, number],
              dilation: [d, d] as [number, number],
              groups: 1,
            };
            if (h + 2 * p >= d * (k - 1) + 1) {
              assertEquals(
                conv2dShape([1, 3, h, h + 2], [4, 3, k, k], undefined, o),
                conv2dRefShape([1, 3, h, h + 2], [4, 3, k, k], o),
                `conv ${h} ${k} ${s} ${p} ${d}`,
              );
            }
            for (const op of [0, 1]) {
              if (op >= Math.max(s, d)) continue;
              const ot = { ...o, outputPadding: [op, op] as [number, number] };
              const want = convTranspose2dRefShape([1, 3, h, h], [3, 2, k, k], ot);
              if (want[2] < 1) continue;
              assertEquals(
                convTranspose2dShape([1, 3, h, h], [3, 2, k, k], undefined, ot),
                want,
                `transpose ${h} ${k} ${s} ${p} ${d} ${op}`,
              );
            }
          }
        }
      }
    }
  }
});

Deno.test("convTranspose2dShape: (H-1)·s - 2p + d·(k-1) + outputPadding + 1, Cout = weight[1]·groups", () => {
  assertEquals(convTranspose2dShape([1, 4, 7, 7], [4, 2, 3, 3], undefined, { stride: 2, outputPadding: 1 }), [
    1,
    2,
    16,
    16,
  ], "stride 2");
  assertEquals(
    convTranspose2dShape([2, 4, 7, 9], [4, 3, 3, 5], [6], {
      stride: [3, 2],
      padding: [2, 0],
      dilation: [1, 2],
      outputPadding: [2, 1],
      groups: 2,
    }),
    [
      2,
      6,
      19,
      26,
    ],
    "all options",
  );
  assertEquals(
    convTranspose2dShape([4, 7, 7], [4, 3, 3, 3], undefined, { dilation: 2, outputPadding: 1 }),
    [3, 12, 12],
    "unbatched, outputPadding < dilation",
  );
});

Deno.test("pool2dShape follows PyTorch's floor and ceil rules, default stride = kernelSize", () => {
  assertEquals(pool2dShape([64, 6, 24, 24], { kernelSize: 2 }), [64, 6, 12, 12], "LeNet");
  assertEquals(pool2dShape([1, 2, 8, 10], { kernelSize: 3, stride: 2, padding: 1 }), [1, 2, 4, 5], "floor");
  assertEquals(
    pool2dShape([1, 2, 8, 10], { kernelSize: 3, stride: 2, padding: 1, ceilMode: true }),
    [1, 2, 5, 6],
    "ceil adds a window",
  );
  assertEquals(
    pool2dShape([1, 2, 7, 9], { kernelSize: 2, stride: 2, padding: 1, ceilMode: true }),
    [1, 2, 4, 5],
    "ceil drops a window in the padding",
  );
  assertEquals(
    pool2dShape([3, 9, 11], { kernelSize: 3, stride: [1, 2], padding: 1, dilation: 2 }),
    [3, 7, 5],
    "dilation, unbatched",
  );
  for (const h of [7, 9, 13]) {
    for (const k of [1, 2, 3, 5]) {
      for (const s of [1, 2, 3]) {
        for (const p of [0, 1, 2]) {
          if (p > k / 2) continue;
          for (const ceilMode of [false, true]) {
            const o = {
              kernel: [k, k] as [number, number],
              stride: [s, s] as [number, number],
              padding: [p, p] as [number, number],
              dilation: [1, 1] as [number, number],
              ceilMode,
              countIncludePad: true,
            };
            assertEquals(
              pool2dShape([1, 1, h, h], { kernelSize: k, stride: s, padding: p, ceilMode }),
              poolRefShape([1, 1, h, h], o),
              `pool ${h} ${k} ${s} ${p} ${ceilMode}`,
            );
          }
        }
      }
    }
  }
  assertEquals(adaptiveAvgPool2dShape([2, 3, 7, 9], [3, 4]), [2, 3, 3, 4], "adaptive");
  assertEquals(adaptiveAvgPool2dShape([3, 7, 9], 11), [3, 11, 11], "adaptive, larger, unbatched");
});

Deno.test("conv2dShape errors name the op, the parameter and the values", () => {
  assertThrows(() => conv2dShape([28, 28], [6, 1, 5, 5]), TypeError, "conv2d", "input", "[28,28]");
  assertThrows(() => conv2dShape([1, 1, 28, 28], [6, 5, 5]), TypeError, "conv2d", "weight", "[6,5,5]");
  assertThrows(
    () => conv2dShape([1, 3, 7, 7], [2, 1, 3, 3], undefined, { groups: 2 }),
    RangeError,
    "conv2d",
    "input channels 3",
    "groups 2",
  );
  assertThrows(
    () => conv2dShape([1, 4, 7, 7], [3, 2, 3, 3], undefined, { groups: 2 }),
    RangeError,
    "conv2d",
    "output channels 3",
    "[3,2,3,3]",
    "groups 2",
  );
  assertThrows(
    () => conv2dShape([1, 4, 7, 7], [2, 3, 3, 3], undefined, { groups: 2 }),
    RangeError,
    "conv2d",
    "[2,3,3,3]",
    "[1,4,7,7]",
    "6 channels",
  );
  assertThrows(() => conv2dShape([1, 3, 7, 7], [2, 2, 3, 3]), RangeError, "conv2d", "[2,2,3,3]", "[1,3,7,7]");
  assertThrows(() => conv2dShape([1, 3, 7, 7], [2, 3, 3, 3], [3]), RangeError, "conv2d", "bias", "[2]", "[3]");
  assertThrows(
    () => conv2dShape([1, 1, 7, 7], [1, 1, 9, 9]),
    RangeError,
    "conv2d",
    "kernel [9,9]",
    "padded input [7,7]",
  );
  assertThrows(
    () => conv2dShape([1, 1, 7, 7], [1, 1, 5, 5], undefined, { dilation: 2 }),
    RangeError,
    "conv2d",
    "dilation [2,2]",
    "spans [9,9]",
    "padded input [7,7]",
  );
  assertEquals(
    conv2dShape([1, 1, 7, 7], [1, 1, 5, 5], undefined, { dilation: 2, padding: 1 }),
    [1, 1, 1, 1],
    "dilated kernel fills the padded input",
  );
  assertThrows(
    () => conv2dShape([1, 1, 7, 7], [1, 1, 3, 3], undefined, { stride: 0 }),
    RangeError,
    "conv2d",
    "stride",
    "0",
  );
  assertThrows(
    () => conv2dShape([1, 1, 7, 7], [1, 1, 3, 3], undefined, { padding: [1, -1] }),
    RangeError,
    "conv2d",
    "padding",
    "[1,-1]",
  );
  assertThrows(
    () => conv2dShape([1, 1, 7, 7], [1, 1, 3, 3], undefined, { dilation: 1.5 }),
    RangeError,
    "conv2d",
    "dilation",
    "1.5",
  );
  assertThrows(
    () => conv2dShape([1, 1, 7, 7], [1, 1, 3, 3], undefined, { stride: [1, 2, 3] as unknown as [number, number] }),
    TypeError,
    "conv2d",
    "stride",
    "[1,2,3]",
  );
  assertThrows(
    () => conv2dShape([1, 1, 7, 7], [1, 1, 3, 3], undefined, { groups: 0 }),
    RangeError,
    "conv2d",
    "groups",
    "0",
  );
});

Deno.test("convTranspose2dShape errors name the op, the parameter and the values", () => {
  assertThrows(
    () => convTranspose2dShape([1, 4, 7, 7], [3, 2, 3, 3]),
    RangeError,
    "convTranspose2d",
    "[3,2,3,3]",
    "[1,4,7,7]",
    "3 channels",
  );
  assertThrows(
    () => convTranspose2dShape([1, 3, 7, 7], [3, 2, 3, 3], undefined, { groups: 2 }),
    RangeError,
    "convTranspose2d",
    "input channels 3",
    "groups 2",
  );
  assertThrows(
    () =>
      convTranspose2dShape([1, 2, 7, 7], [2, 2, 3, 3], undefined, { stride: 2, dilation: 1, outputPadding: [1, 2] }),
    RangeError,
    "convTranspose2d",
    "outputPadding [1,2]",
    "stride [2,2]",
    "dilation [1,1]",
  );
  assertThrows(
    () => convTranspose2dShape([1, 2, 7, 7], [2, 2, 3, 3], undefined, { outputPadding: 1 }),
    RangeError,
    "outputPadding [1,1]",
  );
  assertThrows(
    () => convTranspose2dShape([1, 2, 2, 2], [2, 2, 1, 1], undefined, { padding: 1 }),
    RangeError,
    "convTranspose2d",
    "output size [0,0]",
  );
  assertThrows(
    () => convTranspose2dShape([1, 2, 7, 7], [2, 2, 3, 3], [3]),
    RangeError,
    "convTranspose2d",
    "bias",
    "[2]",
    "[3]",
  );
});

Deno.test("pool2dShape errors name the op, the parameter and the values", () => {
  assertThrows(() => pool2dShape([7, 7], { kernelSize: 2 }, "maxPool2d"), TypeError, "maxPool2d", "[7,7]");
  assertThrows(
    () => pool2dShape([1, 1, 7, 7], { kernelSize: 3, padding: 2 }, "maxPool2d"),
    RangeError,
    "maxPool2d",
    "padding [2,2]",
    "kernelSize [3,3]",
  );
  assertThrows(
    () => pool2dShape([1, 1, 2, 2], { kernelSize: 3 }, "avgPool2d"),
    RangeError,
    "avgPool2d",
    "output size [0,0]",
    "[1,1,2,2]",
  );
  assertThrows(() => pool2dShape([1, 1, 7, 7], { kernelSize: 0 }), RangeError, "pool2d", "kernelSize", "0");
  assertThrows(
    () => pool2dShape([1, 1, 7, 7], { kernelSize: 2, stride: [2, 0] }),
    RangeError,
    "pool2d",
    "stride",
    "[2,0]",
  );
  assertThrows(() => pool2dShape([1, 1, 7, 7], {} as { kernelSize: number }), TypeError, "pool2d", "kernelSize");
  assertThrows(
    () => adaptiveAvgPool2dShape([1, 1, 7, 7], [0, 2]),
    RangeError,
    "adaptiveAvgPool2d",
    "outputSize",
    "[0,2]",
  );
  assertThrows(() => adaptiveAvgPool2dShape([1, 7, 7, 7, 7], 2), TypeError, "adaptiveAvgPool2d", "[1,7,7,7,7]");
});

Deno.test("CONV_PARAMS and POOL_PARAMS list the fields of their WGSL structs in order", () => {
  for (const l of [CONV_PARAMS, POOL_PARAMS] as Layout[]) {
    const text = Deno.readTextFileSync(new URL(`../../../shaders/${l.shader}.wgsl`, import.meta.url));
    const body = text.match(/struct Params \{([^}]*)\}/)![1];
    const fields = [...body.matchAll(/(\w+)\s*:\s*(\w+)/g)].map((m) => `${m[1]}:${m[2]}`);
    assertEquals(fields, l.names.map((n) => `${n}:${l.fields[n]}`), `${l.shader}.wgsl Params`);
  }
});
