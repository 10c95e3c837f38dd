import { IDX_IMAGES_MAGIC, IDX_LABELS_MAGIC, parseIdx } from "../../../src/data/idx.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

/** An IDX file of unsigned bytes written by hand: magic, big-endian dims, then `data`. */
function idx(dims: number[], data: number[], typeByte = 0x08, lead = [0, 0]): Uint8Array {
  const out = new Uint8Array(4 + 4 * dims.length + data.length);
  out.set([...lead, typeByte, dims.length]);
  const view = new DataView(out.buffer);
  dims.forEach((d, i) => view.setUint32(4 + 4 * i, d, false));
  out.set(data, 4 + 4 * dims.length);
  return out;
}

Deno.test("parseIdx reads dims (big-endian) and the bytes after the header", () => {
  const img = parseIdx(idx([2, 3, 2], [...Array(12).keys()]), "img", IDX_IMAGES_MAGIC);
  assertEquals(img.magic, 2051, "images magic");
  assertEquals(img.dims, [2, 3, 2], "dims");
  assertEquals([...img.data], [...Array(12).keys()], "data");
  const big = parseIdx(idx([300], new Array(300).fill(7)), "lbl", IDX_LABELS_MAGIC);
  assertEquals(big.dims, [300], "dim above 255 is read big-endian");
});

Deno.test("parseIdx rejects corrupt headers, naming the file", () => {
  assertThrows(() => parseIdx(new Uint8Array(3), "a.idx"), RangeError, `"a.idx"`, "3 bytes", "magic");
  assertThrows(() => parseIdx(idx([1], [0], 0x08, [1, 0]), "b.idx"), TypeError, `"b.idx"`, "two zero bytes");
  assertThrows(
    () => parseIdx(idx([1], [0]), "labels-as-images", IDX_IMAGES_MAGIC),
    RangeError,
    `"labels-as-images"`,
    "magic number 2049",
    "expected 2051",
  );
  assertThrows(() => parseIdx(idx([1], [0, 0, 0, 0], 0x0d), "f.idx"), TypeError, `"f.idx"`, "0xd", "unsigned bytes");
  assertThrows(
    () => parseIdx(idx([2, 2, 2], []).subarray(0, 10), "cut.idx"),
    RangeError,
    `"cut.idx"`,
    "3 dimensions",
    "16 bytes",
  );
  assertThrows(
    () => parseIdx(idx([2, 3], [1, 2, 3]), "short.idx"),
    RangeError,
    `"short.idx"`,
    "[2,3] = 6 values",
    "holds 3",
  );
  assertThrows(() => parseIdx(idx([1], [1, 2]), "long.idx"), RangeError, "[1] = 1 values", "holds 2");
});
