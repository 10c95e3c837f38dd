import { calculateGain, fanInOut, type Nonlinearity } from "../../../src/nn/init.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

// Printed by torch 1.13 (/usr/bin/python3):
//   from torch.nn import init
//   for n, p in cases: print(repr(init.calculate_gain(n, p)))
//   for s in shapes: print(init._calculate_fan_in_and_fan_out(torch.empty(s)))
const TORCH_GAINS: [Nonlinearity, number | undefined, number][] = [
  ["linear", undefined, 1],
  ["conv2d", undefined, 1],
  ["conv_transpose2d", undefined, 1],
  ["sigmoid", undefined, 1],
  ["tanh", undefined, 1.6666666666666667],
  ["relu", undefined, 1.4142135623730951],
  ["leaky_relu", undefined, 1.4141428569978354],
  ["leaky_relu", 0.2, 1.3867504905630728],
  ["leaky_relu", Math.sqrt(5), 0.5773502691896257],
  ["selu", undefined, 0.75],
];

Deno.test("calculateGain matches torch.nn.init.calculate_gain", () => {
  for (const [n, p, want] of TORCH_GAINS) {
    const got = calculateGain(n, p);
    if (Math.abs(got - want) > 1e-15 * want) throw new Error(`calculateGain(${n}, ${p}): got ${got}, want ${want}`);
  }
});

Deno.test("calculateGain rejects unknown nonlinearities and non-finite slopes", () => {
  assertThrows(() => calculateGain("swish" as Nonlinearity), RangeError, `"swish"`, "leaky_relu");
  assertThrows(() => calculateGain("leaky_relu", NaN), RangeError, "slope", "NaN");
});

Deno.test("fanInOut matches torch's _calculate_fan_in_and_fan_out (Linear, Conv2d, ConvTranspose2d, Conv3d)", () => {
  assertEquals(fanInOut([7, 5]), { fanIn: 5, fanOut: 7 }, "linear [7,5]");
  assertEquals(fanInOut([16, 3, 5, 5]), { fanIn: 75, fanOut: 400 }, "conv [16,3,5,5]");
  assertEquals(fanInOut([3, 8, 3, 3]), { fanIn: 72, fanOut: 27 }, "conv transpose [3,8,3,3]");
  assertEquals(fanInOut([4, 2, 3, 5, 7]), { fanIn: 210, fanOut: 420 }, "conv3d [4,2,3,5,7]");
  assertThrows(() => fanInOut([5]), RangeError, "at least 2 dimensions", "[5]");
});
