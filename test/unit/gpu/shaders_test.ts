/**
 * The shader loader's includes (src/gpu/shaders.ts): a family's `// #include "lib/x.wgsl"`
 * lines pull each helper in once, after the family's own text, and a compiler message about
 * an included line names the helper's file and line.
 */
import { expandIncludes, explainWgslLines, shaderLine, shaderSource, shaderSources } from "../../../src/gpu/mod.ts";
import { assert, assertEquals } from "../../util/assert.ts";

const SOURCES = new Map([
  ["fam", 'override WG: u32 = 64;\n// #include "lib/b.wgsl"\n// #include "lib/a.wgsl"\nfn main() {}'],
  ["lib/a", 'fn a() {}\n// #include "lib/b.wgsl"'],
  ["lib/b", "fn b() {}"],
]);

Deno.test("expandIncludes appends each included file once, after the family's own lines", () => {
  const e = expandIncludes("fam", SOURCES);
  const lines = e.text.split("\n");
  assertEquals(lines.slice(0, 4), SOURCES.get("fam")!.split("\n"), "own lines keep their numbers");
  assertEquals(lines.filter((l) => l === "fn b() {}").length, 1, "lib/b included once though named twice");
  assertEquals(e.segments, [
    { file: "fam.wgsl", start: 1, lines: 4 },
    { file: "lib/b.wgsl", start: 6, lines: 1 },
    { file: "lib/a.wgsl", start: 8, lines: 2 },
  ]);
  assertEquals(lines[5], "fn b() {}");
  assertEquals(lines[7], "fn a() {}");
});

Deno.test("expandIncludes names the including file and line when an include is missing", () => {
  const bad = new Map([["fam", 'fn x() {}\n// #include "lib/nope.wgsl"']]);
  let msg = "";
  try {
    expandIncludes("fam", bad);
  } catch (e) {
    msg = (e as Error).message;
  }
  assertEquals(msg, 'shaders/fam.wgsl:2 includes "lib/nope.wgsl", which is not in shaders/');
});

Deno.test("the loaded families include shaders/lib/ and list no lib file as a family", () => {
  assert(![...shaderSources().keys()].some((k) => k.includes("/")), "a lib file listed as a family");
  const softmax = shaderSource("softmax");
  assert(softmax.includes("fn wg_max("), "softmax.wgsl lacks wg_max from lib/reduce.wgsl");
  assertEquals(softmax.split("fn group_index(").length, 2, "group_index defined exactly once");
});

Deno.test("shaderLine and explainWgslLines map an included line back to its file", () => {
  const text = shaderSource("softmax");
  const at = text.split("\n").findIndex((l) => l.startsWith("fn wg_sum(")) + 1;
  const lib = Deno.readTextFileSync(new URL("../../../shaders/lib/reduce.wgsl", import.meta.url)).split("\n");
  const want = lib.findIndex((l) => l.startsWith("fn wg_sum(")) + 1;
  assertEquals(shaderLine("softmax", at), { file: "lib/reduce.wgsl", line: want });
  assertEquals(shaderLine("softmax", 3), { file: "softmax.wgsl", line: 3 });
  const mapped = `lib/reduce.wgsl:${want}:3 (included by softmax.wgsl, line ${at})`;
  // naga, validation: the module label and the line
  assertEquals(explainWgslLines(`┌─ softmax.wgsl:${at}:3`), `┌─ ${mapped}`);
  // naga, parsing: the label in the first line, a bare `wgsl:` reference
  assertEquals(
    explainWgslLines(`Shader 'softmax.wgsl' parsing error\n ┌─ wgsl:${at}:3`),
    `Shader 'softmax.wgsl' parsing error\n ┌─ ${mapped}`,
  );
  // Tint: a bare `:line:col` and the label in quotes
  assertEquals(
    explainWgslLines(`:${at}:3 error: x\n - [ShaderModule "softmax.wgsl"]`),
    `${mapped} error: x\n - [ShaderModule "softmax.wgsl"]`,
  );
  // the family's own lines are left alone
  assertEquals(explainWgslLines("softmax.wgsl:3:1"), "softmax.wgsl:3:1");
});
