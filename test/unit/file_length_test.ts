/**
 * Source files stay short enough to read in one sitting: at most `MAX_LONG` files of src/
 * and workers/ exceed `MAX_LINES` lines, and each of those says why in its header comment
 * (a line containing "over 450 lines"). Fails naming each file, its length and what is missing.
 */
import { assert } from "../util/assert.ts";

const MAX_LINES = 450;
const MAX_LONG = 3;

function* sources(dir: URL, rel: string): Generator<[string, string]> {
  for (const e of Deno.readDirSync(dir)) {
    if (e.isDirectory) yield* sources(new URL(`${e.name}/`, dir), `${rel}${e.name}/`);
    else if (/\.(ts|js)$/.test(e.name) && !e.name.endsWith(".d.ts")) yield [`${rel}${e.name}`, Deno.readTextFileSync(new URL(e.name, dir))];
  }
}

/** The leading block comment of a source file (its header), or "". */
export function header(text: string): string {
  const m = /^\s*(?:\/\/[^\n]*\n\s*)*\/\*\*?([\s\S]*?)\*\//.exec(text);
  return m ? m[1] : "";
}

Deno.test(`at most ${MAX_LONG} source files exceed ${MAX_LINES} lines, each saying why in its header`, () => {
  const long: string[] = [], unexplained: string[] = [];
  for (const root of ["src", "workers"]) {
    for (const [path, text] of sources(new URL(`../../${root}/`, import.meta.url), `${root}/`)) {
      const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
      if (lines <= MAX_LINES) continue;
      long.push(`${path} (${lines} lines)`);
      if (!/over 450 lines/i.test(header(text).replace(/\n\s*\*\s*/g, " "))) unexplained.push(`${path} (${lines} lines)`);
    }
  }
  assert(long.length <= MAX_LONG, `${long.length} files exceed ${MAX_LINES} lines (at most ${MAX_LONG}): ${long.join(", ")}`);
  assert(unexplained.length === 0, `over ${MAX_LINES} lines without a reason in the header ("over 450 lines ..."): ${unexplained.join(", ")}`);
});

Deno.test("header reads the leading doc comment, after a // @ts-check line too", () => {
  assert(header("/**\n * One of the files over 450 lines.\n */\nexport {}").includes("over 450 lines"), "block header");
  assert(header("// @ts-check\n/** Why. */\nconst x = 1;").includes("Why."), "after a line comment");
  assert(header("const x = 1; /** late */") === "", "a comment after code is no header");
});
