import { sizeClass } from "../../../src/gpu/mod.ts";
import { assert, assertEquals } from "../../util/assert.ts";

Deno.test("sizeClass rounds up to powers of two split in 4 steps, at most 25% over, never under", () => {
  assertEquals([1, 256, 257, 320, 321, 1000, 1024, 1025].map(sizeClass), [256, 256, 320, 320, 384, 1024, 1024, 1280]);
  for (let b = 1; b < 1 << 22; b = Math.ceil(b * 1.37)) {
    const c = sizeClass(b);
    assert(c >= b && (b <= 256 || c <= b * 1.25), `sizeClass(${b}) = ${c}`);
    assertEquals(sizeClass(c), c, `class of ${c} is stable`);
  }
});
