/**
 * The public entries' surface: explicit export lists (no `export *`, so what an entry offers
 * is written where it is declared), no exported name that shadows a global of Deno or of a
 * browser page (a user's `import { Worker } from "flodl-webgpu"` must not hide the real
 * one), and the low-level kernel surface kept out of the user entry.
 */
import * as user from "../../../src/index.ts";
import * as engine from "../../../src/engine.ts";
import { assert, assertEquals } from "../../util/assert.ts";

const root = new URL("../../../", import.meta.url);
const ENTRIES = ["src/index.ts", "src/engine.ts", "src/zoo/mod.ts"];
/** Browser globals Deno lacks (a page's DOM), which a name must not shadow either. */
const PAGE_GLOBALS = [
  "Node",
  "Element",
  "Document",
  "Window",
  "Image",
  "Option",
  "Audio",
  "History",
  "Location",
  "Range",
  "Selection",
  "Text",
];

/** Every name an entry's export lists give (values and types), from its source. */
function exportedNames(path: string): string[] {
  const text = Deno.readTextFileSync(new URL(path, root));
  return [...text.matchAll(/^export (?:type )?\{([^}]*)\}/gm)].flatMap((m) =>
    m[1].split(",").map((s) => s.trim().replace(/^type /, "").split(/\s+as\s+/).at(-1)!).filter(Boolean)
  ).concat([...text.matchAll(/^export \* as (\w+)/gm)].map((m) => m[1]));
}

Deno.test("the public entries list what they export", () => {
  for (const path of ENTRIES) {
    const text = Deno.readTextFileSync(new URL(path, root));
    assertEquals([...text.matchAll(/^export \* from .*$/gm)].map((m) => m[0]), [], `${path}: export *`);
  }
});

Deno.test("no exported name shadows a global", () => {
  const globals = new Set([...Object.getOwnPropertyNames(globalThis), ...PAGE_GLOBALS]);
  const shadows = ENTRIES.flatMap((p) => exportedNames(p).filter((n) => globals.has(n)).map((n) => `${p}: ${n}`));
  assertEquals(shadows, []);
});

Deno.test("the kernel surface is the engine entry's, not the user entry's", () => {
  for (
    const name of [
      "ops",
      "kernel",
      "launch",
      "registeredKernels",
      "writeParams",
      "sizeClass",
      "expandIncludes",
      "OPTIM_PARAMS",
    ]
  ) {
    assert(!(name in user), `flodl-webgpu exports ${name}`);
    assert(name in engine, `flodl-webgpu/engine lacks ${name}`);
  }
  const ops = Object.keys(engine.ops);
  assert(!Object.keys(user).some((n) => n.endsWith("Op") && ops.includes(n)), "an *Op class in the user entry");
});
