/** The optimizer-state file: exact round trips and the refusals of a corrupt or foreign file. */
import { encodeSafetensors } from "../../../src/io/safetensors.ts";
import { decodeOptimState, encodeOptimState, type HostOptimState } from "../../../src/io/optim_state.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";
import { mulberry32, randn } from "../../util/random.ts";

/** Bit patterns, so NaN payloads, -0 and subnormals count. */
function bits(a: Float32Array): number[] {
  return [...new Uint32Array(a.buffer, a.byteOffset, a.length)];
}

function sample(): HostOptimState {
  const rng = mulberry32(5);
  const special = new Float32Array([NaN, -0, Infinity, -Infinity, 1e-45, -3.4028234663852886e38, 0.1]);
  return {
    tensors: { "0.exp_avg": randn(33 * 7, rng), "0.exp_avg_sq": randn(33 * 7, rng), "2.exp_avg": special },
    shapes: { "0.exp_avg": [33, 7], "0.exp_avg_sq": [33, 7], "2.exp_avg": [7] },
    scalars: { "0.step": 12, "2.step": 1, "param_groups.0.lr": 0.1 + 0.2, "param_groups.1.lr": 5e-324 },
  };
}

Deno.test("encodeOptimState then decodeOptimState is bit-identical (tensors, shapes, scalars)", () => {
  const s = sample();
  const back = decodeOptimState(encodeOptimState(s), "a.optim");
  assertEquals(Object.keys(back.tensors), Object.keys(s.tensors), "tensor order");
  for (const k of Object.keys(s.tensors)) {
    assertEquals(bits(back.tensors[k]), bits(s.tensors[k]), `bits of ${k}`);
    assertEquals(back.shapes[k], s.shapes[k], `shape of ${k}`);
  }
  for (const [k, v] of Object.entries(s.scalars)) {
    assert(Object.is(back.scalars[k], v), `scalar ${k}: ${back.scalars[k]} vs ${v}`);
  }
  assertEquals(back.metadata.flodl_kind, "optim", "kind");
});

Deno.test("encodeOptimState refuses bad tensors, shapes and scalars, naming the file and key", () => {
  const s = sample();
  assertThrows(
    () => encodeOptimState({ ...s, shapes: { ...s.shapes, "0.exp_avg": [7, 7] } }, "x.optim"),
    RangeError,
    `"x.optim"`,
    `"0.exp_avg"`,
    "[7,7]",
    "231",
  );
  assertThrows(() => encodeOptimState({ ...s, scalars: { "0.step": NaN } }, "x.optim"), RangeError, `"0.step"`, "NaN");
  assertThrows(
    () => encodeOptimState({ ...s, tensors: { ...s.tensors, "0.exp_avg": new Float64Array(3) as never } }),
    TypeError,
    "Float32Array",
    "Float64Array",
  );
  assertThrows(
    () => encodeOptimState({ tensors: {}, shapes: { "0.x": [1] }, scalars: {} }),
    TypeError,
    `"0.x"`,
    "no tensor",
  );
});

Deno.test("decodeOptimState refuses foreign and corrupt files, naming the file", () => {
  const t = { dtype: "F32" as const, shape: [1], data: new Float32Array(1) };
  assertThrows(
    () => decodeOptimState(encodeSafetensors({ "0.exp_avg": t }), "w.safetensors"),
    TypeError,
    `"w.safetensors"`,
    `no "scalars"`,
  );
  assertThrows(
    () => decodeOptimState(encodeSafetensors({}, { scalars: "{oops" }), "c.optim"),
    TypeError,
    `"c.optim"`,
    "not valid JSON",
  );
  assertThrows(() => decodeOptimState(encodeSafetensors({}, { scalars: "[1]" }), "c.optim"), TypeError, "JSON object");
  assertThrows(
    () => decodeOptimState(encodeSafetensors({}, { scalars: '{"0.step":"3"}' }), "c.optim"),
    TypeError,
    `"0.step"`,
    `"3"`,
  );
  const half = { dtype: "BF16" as const, shape: [1], data: new Uint16Array(1) };
  assertThrows(
    () => decodeOptimState(encodeSafetensors({ "0.m": half }, { scalars: "{}" }), "h.optim"),
    TypeError,
    `"0.m" is BF16`,
  );
  const good = encodeOptimState(sample());
  assertThrows(() => decodeOptimState(good.subarray(0, good.length - 5), "cut.optim"), RangeError, `"cut.optim"`);
});
