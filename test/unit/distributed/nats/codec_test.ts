/** encodeValue/decodeValue: every value the protocol sends comes back equal, typed arrays bit-exact. */
import { assert, assertEquals } from "../../../util/assert.ts";
import { mulberry32 } from "../../../util/random.ts";
import { decodeValue, encodeValue } from "../../../../src/distributed/nats/codec.ts";

function bytesOf(a: ArrayBufferView): number[] {
  return [...new Uint8Array(a.buffer, a.byteOffset, a.byteLength)];
}

Deno.test("encodeValue/decodeValue: nested objects with every typed array kind come back bit-exact and typed", () => {
  const rng = mulberry32(11);
  const raw = new Uint8Array(8 * 33).map(() => Math.floor(rng() * 256));
  const kinds = [
    Float32Array,
    Float64Array,
    Int8Array,
    Int16Array,
    Int32Array,
    Uint8Array,
    Uint8ClampedArray,
    Uint16Array,
    Uint32Array,
  ];
  // Odd lengths and offsets: each attachment lands unaligned in the source, aligned in the message.
  const arrays = kinds.map((C, i) => new C(raw.slice(0, C.BYTES_PER_ELEMENT * (7 + i)).buffer));
  const value = {
    frame: { rank: 2, round: 9, dtype: "bf16", arrays },
    tail: arrays[1].subarray(3, 5),
    ab: raw.buffer.slice(1, 6),
  };
  const back = decodeValue(encodeValue(value)) as typeof value;
  for (const [i, a] of arrays.entries()) {
    const b = back.frame.arrays[i];
    assert(b.constructor === a.constructor, `array ${i}: ${b.constructor.name}, want ${a.constructor.name}`);
    assertEquals(bytesOf(b), bytesOf(a), `bytes of the ${a.constructor.name}`);
    assert(b.byteOffset === 0 && b.buffer.byteLength === b.byteLength, `${a.constructor.name} owns its buffer`);
  }
  assertEquals(bytesOf(back.tail), bytesOf(value.tail), "a subarray's bytes");
  assertEquals([...new Uint8Array(back.ab)], [...new Uint8Array(value.ab)], "an ArrayBuffer's bytes");
  assertEquals([back.frame.rank, back.frame.round, back.frame.dtype], [2, 9, "bf16"], "scalars");
});

Deno.test("encodeValue/decodeValue: NaN, ±Infinity, -0 and undefined survive (JSON alone loses them)", () => {
  const back = decodeValue(
    encodeValue({ v: [NaN, Infinity, -Infinity, -0, 0, undefined, null, "s", true], u: undefined }),
  ) as {
    v: unknown[];
    u: unknown;
  };
  const v = back.v;
  assert(Number.isNaN(v[0]) && v[1] === Infinity && v[2] === -Infinity, `non-finite: ${v.slice(0, 3)}`);
  assert(Object.is(v[3], -0) && Object.is(v[4], 0), "signed zeros");
  assert(v[5] === undefined && v[6] === null && v[7] === "s" && v[8] === true, `others: ${v.slice(5)}`);
  assert("u" in back && back.u === undefined, "an undefined property keeps its key");
});

Deno.test("encodeValue: functions, Maps and class instances are refused naming their path", () => {
  const cases: [unknown, string][] = [
    [{ sink: { batch() {} } }, "value.sink.batch is a function"],
    [{ m: [new Map()] }, "value.m[0] is a Map"],
    [{ d: new DataView(new ArrayBuffer(4)) }, "value.d is a DataView"],
    [{ "§flodl": 1 }, `value uses the reserved key "§flodl"`],
  ];
  for (const [v, want] of cases) {
    let got = "";
    try {
      encodeValue(v);
    } catch (e) {
      got = `${(e as Error).name}: ${(e as Error).message}`;
    }
    assert(got.startsWith("TypeError: encodeValue: ") && got.includes(want), `want "${want}", got "${got}"`);
  }
});

Deno.test("decodeValue: a truncated message is refused with both sizes", () => {
  const bytes = encodeValue({ a: new Float32Array(10) });
  let got = "";
  try {
    decodeValue(bytes.subarray(0, bytes.length - 4));
  } catch (e) {
    got = (e as Error).message;
  }
  assert(/attachment \[0, 40\) beyond the 36 bytes sent/.test(got), got);
});
