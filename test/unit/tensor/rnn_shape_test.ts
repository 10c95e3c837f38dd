import { recurrencePlan } from "../../../src/tensor/ops/rnn.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

Deno.test("recurrencePlan sizes LSTM [T+1, B, H] and GRU [T, B, H] outputs", () => {
  assertEquals(recurrencePlan("lstm", [[5, 3, 36], [36, 9], [36], [3, 9], [3, 9]], true).out, [6, 3, 9], "lstm out");
  assertEquals(recurrencePlan("gru", [[5, 3, 27], [27, 9], [3, 9]], false).out, [5, 3, 9], "gru out");
});

Deno.test("recurrencePlan refuses a bad shape naming the input and every shape", () => {
  assertThrows(
    () => recurrencePlan("gru", [[5, 3, 27], [27, 9], [27], [2, 9]], true),
    RangeError,
    "h0 must be [3,9]",
    "h0=[2,9]",
  );
  assertThrows(
    () => recurrencePlan("lstm", [[5, 3, 27], [27, 9], [3, 9], [3, 9]], false),
    RangeError,
    "w_hh must be [4·H, H]",
  );
  assertThrows(
    () => recurrencePlan("lstm", [[5, 3, 36], [36, 9], [3, 9]], false),
    RangeError,
    "expects 4 inputs",
    "c0=missing",
  );
  assertThrows(() => recurrencePlan("gru", [[0, 3, 27], [27, 9], [3, 9]], false), RangeError, "at least 1");
  assertThrows(
    () => recurrencePlan("lstm", [[5, 3, 36], [36, 9], [36], [3, 9], [3, 8]], true),
    RangeError,
    "c0 must be [3,9]",
  );
});
