/** flodl's positional model file: exact round trips, names in metadata, and refusals. */
import { decodeModelFile, encodeModelFile, type HostModel } from "../../../src/io/model_file.ts";
import { decodeSafetensors, encodeSafetensors } from "../../../src/io/safetensors.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";
import { mulberry32, randn } from "../../util/random.ts";

function bits(a: Float32Array): number[] {
  return [...new Uint32Array(a.buffer, a.byteOffset, a.length)];
}

function model(): HostModel {
  const rng = mulberry32(9);
  return {
    // Names repeat across layers in flodl graphs: positional keys keep both.
    params: [
      { name: "fc.weight", shape: [7, 33], data: randn(7 * 33, rng) },
      { name: "fc.weight", shape: [7], data: randn(7, rng) },
      { name: "scale", shape: [], data: new Float32Array([NaN]) },
    ],
    buffers: [{ name: "bn.running_mean", shape: [7], data: randn(7, rng) }],
  };
}

Deno.test("encodeModelFile writes p{i} then b{j} with the names in metadata; decode is bit-identical", () => {
  const m = model();
  const bytes = encodeModelFile(m, "model", "m.fdl");
  const raw = decodeSafetensors(bytes);
  assertEquals(Object.keys(raw.tensors), ["p0", "p1", "p2", "b0"], "keys");
  assertEquals(raw.metadata.keys, "positional", "keys metadata");
  assertEquals(JSON.parse(raw.metadata.param_names), ["fc.weight", "fc.weight", "scale"], "param names");
  const back = decodeModelFile(bytes, "m.fdl");
  for (const kind of ["params", "buffers"] as const) {
    assertEquals(back[kind].map((t) => [t.name, t.shape]), m[kind].map((t) => [t.name, t.shape]), kind);
    back[kind].forEach((t, i) => assertEquals(bits(t.data), bits(m[kind][i].data), `${kind}[${i}] bits`));
  }
});

Deno.test("decodeModelFile orders by index and falls back to keys without names", () => {
  const t = (v: number) => ({ dtype: "F32" as const, shape: [1], data: new Float32Array([v]) });
  const back = decodeModelFile(encodeSafetensors({ b0: t(9), p1: t(1), p0: t(0) }), "foreign.fdl");
  assertEquals(back.params.map((p) => [p.name, p.data[0]]), [["p0", 0], ["p1", 1]], "params");
  assertEquals(back.buffers.map((p) => [p.name, p.data[0]]), [["b0", 9]], "buffers");
});

Deno.test("decodeModelFile refuses named keys, gaps, non-F32 and bad names, naming the file", () => {
  const t = { dtype: "F32" as const, shape: [1], data: new Float32Array(1) };
  assertThrows(
    () => decodeModelFile(encodeSafetensors({ "fc.weight": t }), "n.fdl"),
    TypeError,
    `"n.fdl"`,
    `"fc.weight" is not positional`,
  );
  assertThrows(() => decodeModelFile(encodeSafetensors({ p0: t, p2: t }), "g.fdl"), RangeError, `"g.fdl"`, `no "p1"`);
  assertThrows(() => decodeModelFile(encodeSafetensors({ p01: t }), "z.fdl"), TypeError, `"p01"`);
  const bf = { dtype: "BF16" as const, shape: [1], data: new Uint16Array(1) };
  assertThrows(() => decodeModelFile(encodeSafetensors({ p0: bf }), "b.fdl"), TypeError, `"p0" is BF16`);
  assertThrows(
    () => decodeModelFile(encodeSafetensors({ p0: t }, { param_names: '["a","b"]' }), "c.fdl"),
    RangeError,
    "2 names for 1 tensors",
  );
  assertThrows(
    () => decodeModelFile(encodeSafetensors({ p0: t }, { param_names: "[1]" }), "c.fdl"),
    TypeError,
    "array of strings",
  );
  assertThrows(
    () => decodeModelFile(encodeSafetensors({ p0: t }, { param_names: "[" }), "c.fdl"),
    TypeError,
    "not valid JSON",
  );
});

Deno.test("encodeModelFile refuses a wrong array type and a shape that does not fit, naming the tensor", () => {
  const m = model();
  m.params[1].data = new Int32Array(7) as never;
  assertThrows(() => encodeModelFile(m, "model", "w.fdl"), TypeError, `"w.fdl"`, `"fc.weight" (p1)`, "Int32Array");
  const n = model();
  n.buffers[0].shape = [8];
  assertThrows(() => encodeModelFile(n, "model", "w.fdl"), RangeError, `"w.fdl"`, `"b0"`, "[8]");
});
