import {
  decodeSafetensors,
  encodeSafetensors,
  int64ToNumbers,
  MAX_HEADER_BYTES,
  type SafeTensor,
  toBf16Bits,
  toFloat32,
} from "../../../src/io/safetensors.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";
import { mulberry32, randn } from "../../util/random.ts";

const FIXTURES = new URL("../../fixtures/safetensors/", import.meta.url);
const PYTHON = "/usr/bin/python3";

/** bf16 rounding of one f32, by comparing the two neighbouring bf16 values in f64 (independent of src/). */
function bf16Ref(x: number): number {
  if (Number.isNaN(x) || !Number.isFinite(x)) return x;
  const f = new Float32Array([x]), u = new Uint32Array(f.buffer);
  const lo = u[0] & 0xffff0000, down = new Float32Array(new Uint32Array([lo]).buffer)[0];
  const upBits = (lo + 0x10000) >>> 0, up = new Float32Array(new Uint32Array([upBits]).buffer)[0];
  const dDown = Math.abs(f[0] - down), dUp = Math.abs(up - f[0]);
  if (dDown < dUp) return down;
  if (dUp < dDown) return up;
  return ((lo >>> 16) & 1) === 0 ? down : up; // tie: even mantissa
}

/** File bytes with a hand-made header (string or object), `dataLen` data bytes and an optional forged length. */
function craft(header: unknown, dataLen = 0, forgedLen?: bigint): Uint8Array {
  const json = new TextEncoder().encode(typeof header === "string" ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + dataLen);
  new DataView(out.buffer).setBigUint64(0, forgedLen ?? BigInt(json.length), true);
  out.set(json, 8);
  return out;
}

function sample(): Record<string, SafeTensor> {
  const rng = mulberry32(31);
  return {
    "z.last": { dtype: "F32", shape: [3, 7], data: randn(21, rng) },
    "a.first": { dtype: "BF16", shape: [5], data: toBf16Bits(randn(5, rng, 10)) },
    half: { dtype: "F16", shape: [2], data: new Uint16Array([0x3c00, 0xc000]) },
    count: { dtype: "I32", shape: [], data: new Int32Array([-42]) },
    ids: { dtype: "U32", shape: [1, 3], data: new Uint32Array([0, 7, 0xffffffff]) },
    none: { dtype: "F32", shape: [0, 4], data: new Float32Array(0) },
  };
}

Deno.test("encodeSafetensors keeps key order, pads the header to 8 bytes and tiles the data", () => {
  const bytes = encodeSafetensors(sample(), { format: "pt" });
  const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assertEquals(n % 8, 0, "header length mod 8");
  const text = new TextDecoder().decode(bytes.subarray(8, 8 + n));
  assert(/^\{.*\} *$/.test(text), `header is JSON padded with spaces: ${JSON.stringify(text.slice(-12))}`);
  const header = JSON.parse(text);
  assertEquals(Object.keys(header), ["__metadata__", "z.last", "a.first", "half", "count", "ids", "none"], "keys");
  assertEquals(header["z.last"], { dtype: "F32", shape: [3, 7], data_offsets: [0, 84] }, "z.last entry");
  assertEquals(header["a.first"].data_offsets, [84, 94], "a.first offsets");
  assertEquals(bytes.length, 8 + n + 84 + 10 + 4 + 4 + 12, "file length");
  // Little-endian f32 bytes of the first value, read independently.
  const first = new DataView(bytes.buffer, 8 + n).getFloat32(0, true);
  assertEquals(first, sample()["z.last"].data[0], "first value");
});

Deno.test("decodeSafetensors round-trips every dtype, shapes, metadata and order", () => {
  const want = sample();
  const { tensors, metadata } = decodeSafetensors(encodeSafetensors(want, { format: "pt", note: "x" }), "rt");
  assertEquals(metadata, { format: "pt", note: "x" }, "metadata");
  assertEquals(Object.keys(tensors), Object.keys(want), "order");
  for (const [k, t] of Object.entries(want)) {
    assertEquals(tensors[k].dtype, t.dtype, `${k} dtype`);
    assertEquals(tensors[k].shape, t.shape, `${k} shape`);
    assertEquals(tensors[k].data.constructor.name, t.data.constructor.name, `${k} array`);
    assertEquals([...tensors[k].data], [...t.data], `${k} data`);
  }
  assertEquals(decodeSafetensors(encodeSafetensors({})).tensors, Object.create(null), "empty file");
});

Deno.test("decodeSafetensors reads a file written from torch tensors (test/fixtures/safetensors)", () => {
  const bytes = Deno.readFileSync(new URL("torch_small.safetensors", FIXTURES));
  const want = JSON.parse(Deno.readTextFileSync(new URL("torch_small.json", FIXTURES)));
  const { tensors, metadata } = decodeSafetensors(bytes, "torch_small.safetensors");
  assertEquals(metadata, want.metadata, "metadata");
  assertEquals(Object.keys(tensors), Object.keys(want.tensors), "keys");
  for (
    const [k, w] of Object.entries(want.tensors) as [
      string,
      { dtype: string; shape: number[]; values: (number | string)[] },
    ][]
  ) {
    const t = tensors[k];
    assertEquals(t.dtype, w.dtype, `${k} dtype`);
    assertEquals(t.shape, w.shape, `${k} shape`);
    const got = t.dtype === "I32" || t.dtype === "U32" ? [...t.data] : [...toFloat32(t)];
    assertEquals(
      got.map(String),
      w.values.map((v) => (v === "inf" ? "Infinity" : v === "-inf" ? "-Infinity" : String(v))),
      `${k} values`,
    );
  }
});

Deno.test("PyTorch reads our file: values, shapes and dtypes seen by torch match (interop.py read)", async () => {
  const want = sample();
  const dir = Deno.makeTempDirSync();
  const path = `${dir}/ours.safetensors`;
  try {
    Deno.writeFileSync(path, encodeSafetensors(want, { writer: "flodl-webgpu" }));
    let out: Deno.CommandOutput;
    try {
      out = await new Deno.Command(PYTHON, { args: [new URL("interop.py", FIXTURES).pathname, "read", path] }).output();
    } catch (e) {
      throw new Error(`This test needs Debian's python3 with torch at ${PYTHON} (apt-get install python3-torch): ${e}`);
    }
    assert(out.success, `interop.py failed: ${new TextDecoder().decode(out.stderr)}`);
    const seen = JSON.parse(new TextDecoder().decode(out.stdout));
    assertEquals(seen.metadata, { writer: "flodl-webgpu" }, "metadata seen by python");
    assertEquals(Object.keys(seen.tensors).sort(), Object.keys(want).sort(), "keys seen by python");
    const rng = mulberry32(31);
    const f32 = randn(21, rng), bf = randn(5, rng, 10);
    const expect: Record<string, number[]> = {
      "z.last": [...f32],
      "a.first": [...bf].map(bf16Ref),
      half: [1, -2],
      count: [-42],
      ids: [0, 7, 4294967295],
      none: [],
    };
    for (const [k, t] of Object.entries(want)) {
      assertEquals(seen.tensors[k].dtype, t.dtype, `${k} dtype seen by torch`);
      assertEquals(seen.tensors[k].shape, t.shape, `${k} shape seen by torch`);
      assertEquals(seen.tensors[k].values, expect[k], `${k} values seen by torch`);
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("toBf16Bits rounds to nearest even, keeps NaN and Inf, overflows to Inf", () => {
  const rng = mulberry32(5);
  const xs = randn(257, rng, 1e3);
  const got = toFloat32({ dtype: "BF16", shape: [257], data: toBf16Bits(xs) });
  assertEquals([...got], [...xs].map(bf16Ref), "random values");
  const bits = (u: number) => new Float32Array(new Uint32Array([u]).buffer)[0];
  const special = new Float32Array([
    bits(0x3f808000),
    bits(0x3f818000),
    bits(0x3f808001),
    NaN,
    bits(0x7f800001),
    Infinity,
    -Infinity,
    3.4e38,
    -0,
  ]);
  const out = toBf16Bits(special);
  assertEquals([...out].map((b) => b.toString(16)), [
    "3f80",
    "3f82",
    "3f81",
    "7fc0",
    "7fc0",
    "7f80",
    "ff80",
    "7f80",
    "8000",
  ], "special");
});

Deno.test("toFloat32 widens F16 exactly (normal, subnormal, Inf, NaN) and refuses integers", () => {
  const h = new Uint16Array([0x3c00, 0xc000, 0x7bff, 0x0001, 0x8400, 0x7c00, 0xfc00, 0x7e00, 0x3555]);
  const got = [...toFloat32({ dtype: "F16", shape: [9], data: h })];
  assertEquals(got.slice(0, 7), [1, -2, 65504, 2 ** -24, -(2 ** -14), Infinity, -Infinity], "values");
  assert(Number.isNaN(got[7]), "NaN");
  assertEquals(got[8], (1 + 0x155 / 1024) * 2 ** -2, "1/3 in f16");
  assertThrows(
    () => toFloat32({ dtype: "I32", shape: [1], data: new Int32Array(1) }),
    TypeError,
    "I32",
    "not a floating type",
  );
});

Deno.test("decodeSafetensors rejects bad lengths before allocating, naming the file", () => {
  assertThrows(
    () => decodeSafetensors(new Uint8Array(5), "tiny.fdl"),
    RangeError,
    `"tiny.fdl"`,
    "5 bytes",
    "shorter than the 8-byte",
  );
  const huge = craft({}, 0, 10n * 1024n ** 3n);
  assertThrows(
    () => decodeSafetensors(huge, "huge.fdl"),
    RangeError,
    `"huge.fdl"`,
    "10737418240",
    `limit of ${MAX_HEADER_BYTES}`,
  );
  assertThrows(() => decodeSafetensors(craft({}, 0, 1n << 63n), "u64.fdl"), RangeError, "exceeds the limit");
  assertThrows(
    () => decodeSafetensors(craft({}, 0, 4096n), "short.fdl"),
    RangeError,
    `"short.fdl"`,
    "header length 4096",
    "past the end",
  );
});

Deno.test("decodeSafetensors rejects bad JSON and bad entries, naming the file and tensor", () => {
  const f = (h: unknown, n = 0) => () => decodeSafetensors(craft(h, n), "m.fdl");
  assertThrows(f("{not json"), TypeError, `"m.fdl"`, "not valid UTF-8 JSON");
  assertThrows(() => decodeSafetensors(craft("{}").fill(0xff, 8), "bad.fdl"), TypeError, "not valid UTF-8 JSON");
  assertThrows(f("[1,2]"), TypeError, "header must be a JSON object", "array");
  assertThrows(
    f({ w: { dtype: "F64", shape: [1], data_offsets: [0, 8] } }, 8),
    TypeError,
    `tensor "w"`,
    `"F64"`,
    "F32, F16, BF16, I32, U32",
  );
  assertThrows(
    f({ w: { dtype: "F32", shape: [1.5], data_offsets: [0, 4] } }, 4),
    TypeError,
    `tensor "w"`,
    "shape",
    "[1.5]",
  );
  assertThrows(f({ w: { dtype: "F32", shape: [-1], data_offsets: [0, 4] } }, 4), TypeError, `tensor "w"`, "[-1]");
  assertThrows(f({ w: { dtype: "F32", shape: [1] } }, 4), TypeError, `tensor "w"`, "data_offsets must be two");
  assertThrows(f({ w: [1] }, 4), TypeError, `tensor "w" must be an object`);
  assertThrows(f({ __metadata__: { a: 1 } }), TypeError, `"__metadata__" value of "a" must be a string`);
});

Deno.test("decodeSafetensors rejects offsets outside, overlapping, with gaps or not covering the data", () => {
  const f = (h: unknown, n: number) => () => decodeSafetensors(craft(h, n), "o.fdl");
  const e = (name: string, a: number, b: number, shape = [(b - a) / 4]) => ({
    [name]: { dtype: "F32", shape, data_offsets: [a, b] },
  });
  assertThrows(
    f(e("w", 0, 16), 8),
    RangeError,
    `"o.fdl"`,
    `tensor "w"`,
    "[0,16] fall outside the data section of 8 bytes",
  );
  assertThrows(f({ w: { dtype: "F32", shape: [1], data_offsets: [8, 4] } }, 8), RangeError, `tensor "w"`, "[8,4]");
  assertThrows(f({ ...e("a", 0, 8), ...e("b", 4, 12) }, 12), RangeError, `tensor "b"`, "overlap", `"a" [0,8]`);
  assertThrows(f({ ...e("a", 0, 4), ...e("b", 8, 12) }, 12), RangeError, "gap", `before tensor "b"`, "bytes 4..8");
  assertThrows(f(e("a", 0, 8), 12), RangeError, "cover 8 bytes", "holds 12");
  assertThrows(f(e("a", 4, 8), 8), RangeError, "gap", `tensor "a"`);
  assertThrows(f(e("w", 0, 12, [2, 2]), 12), RangeError, `tensor "w"`, "shape [2,2] of F32 needs 16 bytes", "hold 12");
  assertThrows(f({ w: { dtype: "BF16", shape: [3], data_offsets: [0, 8] } }, 8), RangeError, "BF16 needs 6 bytes");
});

Deno.test("encodeSafetensors refuses bad names, arrays, shapes and metadata", () => {
  const t = (x: Partial<SafeTensor>) => ({ dtype: "F32", shape: [2], data: new Float32Array(2), ...x }) as SafeTensor;
  assertThrows(() => encodeSafetensors({ __metadata__: t({}) }), TypeError, "__metadata__");
  assertThrows(
    () => encodeSafetensors({ w: t({ data: new Int32Array(2) }) }),
    TypeError,
    `"w"`,
    "Float32Array",
    "Int32Array",
  );
  assertThrows(() => encodeSafetensors({ w: t({ dtype: "F64" as "F32" }) }), TypeError, `"w"`, `"F64"`);
  assertThrows(() => encodeSafetensors({ w: t({ shape: [3] }) }), RangeError, `"w"`, "[3] has 3 elements, data has 2");
  assertThrows(() => encodeSafetensors({ w: t({ shape: [-2] }) }), TypeError, `"w"`, "[-2]");
  assertThrows(() => encodeSafetensors({ w: t({}) }, { a: 1 as unknown as string }), TypeError, "metadata", `"a"`);
});

Deno.test("I64 round-trips exactly, past 2^53 too, and PyTorch reads our I64 as torch.int64", async () => {
  const big = [0n, -1n, 3n, 2n ** 53n + 1n, -(2n ** 63n), 2n ** 63n - 1n];
  const bytes = encodeSafetensors({ n: { dtype: "I64", shape: [2, 3], data: BigInt64Array.from(big) } });
  const back = decodeSafetensors(bytes, "i64").tensors.n;
  assertEquals([back.dtype, back.shape, back.data.constructor.name], ["I64", [2, 3], "BigInt64Array"], "dtype, shape, array");
  assertEquals([...back.data].map(String), big.map(String), "values");
  // Bytes: little-endian two's complement, read independently of src/.
  const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assertEquals(String(new DataView(bytes.buffer, 8 + n).getBigInt64(8, true)), "-1", "second value's bytes");
  const dir = Deno.makeTempDirSync();
  try {
    const path = `${dir}/counts.safetensors`;
    const small = [7n, -2n, 2n ** 40n];
    Deno.writeFileSync(path, encodeSafetensors({ "bn.num_batches_tracked": { dtype: "I64", shape: [3], data: BigInt64Array.from(small) } }));
    const out = await new Deno.Command(PYTHON, { args: [new URL("interop.py", FIXTURES).pathname, "read", path] }).output();
    assert(out.success, `interop.py failed: ${new TextDecoder().decode(out.stderr)}`);
    const seen = JSON.parse(new TextDecoder().decode(out.stdout)).tensors["bn.num_batches_tracked"];
    assertEquals(seen, { dtype: "I64", shape: [3], values: small.map(Number) }, "what torch sees");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("int64ToNumbers is exact within 2^53 and refuses beyond, naming the tensor, value and position", () => {
  const t = (v: bigint[]) => ({ dtype: "I64" as const, shape: [v.length], data: BigInt64Array.from(v) });
  const max = BigInt(Number.MAX_SAFE_INTEGER);
  assertEquals([...int64ToNumbers(t([0n, -max, max]), "ok")], [0, -Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER], "exact");
  assertThrows(() => int64ToNumbers(t([1n, max + 2n]), "bn.num_batches_tracked"), RangeError, `"bn.num_batches_tracked"`, "9007199254740993", "flat index 1", "2^53");
  assertThrows(() => int64ToNumbers(t([-(2n ** 63n)]), "m"), RangeError, `"m"`, "-9223372036854775808");
  assertThrows(() => int64ToNumbers(t([5n]), "c", [0, 4]), RangeError, `"c"`, "5", "outside [0, 4]");
  assertThrows(() => int64ToNumbers({ dtype: "F32", shape: [1], data: new Float32Array(1) }, "w"), TypeError, `"w"`, "F32");
  assertEquals([...int64ToNumbers({ dtype: "U32", shape: [1], data: new Uint32Array([4294967295]) }, "u")], [4294967295], "U32");
});
