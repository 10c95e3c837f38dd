/**
 * scripts/api_reference.ts: the page it writes from `deno doc --json` shows each form's
 * signature and doc (a fixture module with one of each), leaves private members out, and its
 * lint names the file and the kind of a public symbol without a doc comment (the check that
 * fails the suite).
 */
import { assert, assertEquals } from "../../util/assert.ts";
import { lint, page } from "../../../scripts/api_reference.ts";

Deno.test("the reference prints each form's signature and doc, private members left out", async () => {
  const md = await page({ "sample": "test/fixtures/api/sample.ts" });
  for (
    const line of [
      "## `sample`",
      "A module for test/unit/scripts/api_reference_test.ts: one of each form the reference",
      "class Thing",
      "- `new Thing(size?: number = 3)`",
      "Functions as a namespace.",
      "- `readonly size: number`",
      "- `static total(xs: readonly number[], scale?: number = 1.5, label?: string): number`",
      "  Throws `RangeError`: When `xs` is empty.",
      "- `get left(): number`",
      "interface ThingOptions",
      "- `readonly count?: number`",
      "- `each(i: number, name: string): void`",
      "Options of `Thing`.",
      "type Pick2 = [number, string] | Record<string, () => Promise<Thing | undefined>>",
      "- `Fn.add`: `function add(a: number, b?: number = 0): number`",
    ]
  ) assert(md.includes(line), `the page lacks: ${line}`);
  assert(!/secret|hidden/.test(md), "a private member is in the page");
  assertEquals(md, await page({ "sample": "test/fixtures/api/sample.ts" }), "the page is not the same twice");
});

Deno.test("the lint names the file and kind of a public symbol without a doc comment", async () => {
  assertEquals(await lint(["test/fixtures/api/sample.ts"]), []);
  const problems = await lint(["test/fixtures/api/undocumented.ts"]);
  assertEquals(problems.length, 1, problems.join("\n"));
  assert(/^test\/fixtures\/api\/undocumented\.ts:\d+:\d+: missing-jsdoc: /.test(problems[0]), problems[0]);
});

Deno.test("docs/API.md is what the package's doc comments give (run npm run docs:api after a doc edit)", async () => {
  const committed = await Deno.readTextFile(new URL("../../../docs/API.md", import.meta.url));
  const fresh = await page();
  const at = [...fresh].findIndex((ch, i) => ch !== committed[i]);
  assertEquals(fresh === committed ? "" : `first difference at line ${fresh.slice(0, at).split("\n").length}`, "");
});
