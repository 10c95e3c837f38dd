/**
 * What the package may import: the library (src/, workers/) never reaches into examples/,
 * bench/ or test/ (none of them ship), and examples/ use the library only through its public
 * entries, the way a program that installed the package does (and the repository's scripts/,
 * which starts the nats-server of `npm start -- --serve`).
 */
import { assertEquals } from "../../util/assert.ts";
import { PACKAGE_ENTRIES } from "../../../scripts/package_entries.ts";

const root = new URL("../../../", import.meta.url);
/** The public entries, as paths under the repository: the package's `exports` map names their builds. */
const ENTRIES: readonly string[] = Object.values(PACKAGE_ENTRIES);

function* sources(dir: string): Generator<string> {
  for (const e of Deno.readDirSync(new URL(dir, root))) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) yield* sources(path);
    else if (/\.(ts|js)$/.test(e.name) && !e.name.endsWith(".d.ts")) yield path;
  }
}

/** Every relative module specifier of a file (static and dynamic imports, re-exports), resolved to a repository path. */
function relativeImports(path: string): string[] {
  const text = Deno.readTextFileSync(new URL(path, root));
  const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((m) => m[1]);
  return specs.map((s) => new URL(s, new URL(path, root)).href.slice(root.href.length));
}

Deno.test("the library imports nothing from examples/, bench/ or test/", () => {
  const outside = [...sources("src"), ...sources("workers")].flatMap((f) =>
    relativeImports(f).filter((to) => /^(examples|bench|test)\//.test(to)).map((to) => `${f} → ${to}`)
  );
  assertEquals(outside, []);
});

Deno.test("examples/ reach the library only through its public entries", () => {
  const internal = [...sources("examples")].flatMap((f) =>
    relativeImports(f).filter((to) => !/^(examples|scripts)\//.test(to) && !ENTRIES.includes(to)).map((to) =>
      `${f} → ${to}`
    )
  );
  assertEquals(internal, []);
});

/** Recorded outputs of past sittings: kept as they were printed, never edited. */
const RECORDED = /^bench\/results\//;
/** What a clone does not have: the workspace beside the repository and its documents. */
const OUTSIDE = /\.\.\/shared\b|\bDESIGN\.md\b|\bSTYLE\.md\b|\bTOOLCHAIN\.md\b|§\d/;

function* textFiles(dir: string): Generator<string> {
  for (const e of Deno.readDirSync(new URL(dir || ".", root))) {
    const path = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory) {
      if (!/^(node_modules|dist|\.git|test-results|playwright-report)$/.test(e.name)) yield* textFiles(path);
    } else if (/\.(ts|js|wgsl|md|html|json|sh|py|css)$/.test(e.name) && !RECORDED.test(path)) yield path;
  }
}

Deno.test("the repository stands alone: no pointer to files a clone does not have", () => {
  const outside = [...textFiles("")].filter((p) => !p.endsWith("package-lock.json")).flatMap((path) =>
    Deno.readTextFileSync(new URL(path, root)).split("\n").flatMap((line, i) =>
      OUTSIDE.test(line) ? [`${path}:${i + 1}: ${line.trim()}`] : []
    )
  );
  assertEquals(outside, []);
});
