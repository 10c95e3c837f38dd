/**
 * The one place that knows how `shaders/*.wgsl` arrive, and how a
 * family pulls in the shared helpers of `shaders/lib/`.
 *
 * - Under Vite (dev server, production build, workers) `import.meta.glob` inlines
 *   every file, `shaders/lib/` included, as a string at build time: no fetch, nothing to serve.
 * - Under Deno the files are read from disk next to this module (needs `--allow-read`).
 *
 * Either way the text is available synchronously, so a pipeline can be compiled at
 * the moment an op first records it.
 *
 * Includes: a family file names a helper with a line `// #include "lib/reduce.wgsl"`. The
 * loader appends each included file once, after the family's own text (WGSL declarations
 * may come in any order), so the family's own lines keep their numbers; a line past them
 * belongs to an included file, and {@link explainWgslLines} rewrites a compiler message's
 * `unary.wgsl:412:5` into `lib/reduce.wgsl:12:5 (included by unary.wgsl, line 412)`.
 */

type Glob = (pattern: string, options: { query: string; import: string; eager: true }) => Record<string, string>;

/** A stretch of an expanded family: which file its lines come from. */
export interface Segment {
  /** Path under `shaders/` (`unary.wgsl`, `lib/reduce.wgsl`). */
  file: string;
  /** First line of the stretch in the expanded text (1-based). */
  start: number;
  /** Lines in the stretch. */
  lines: number;
}

/** A family after includes: its text and where each line came from. */
export interface Expanded {
  /** The WGSL text with every include in place. */
  text: string;
  /** Its stretches in order, each with the file its lines come from. */
  segments: Segment[];
}

let files: Map<string, string> | undefined;
let families: Map<string, Expanded> | undefined;

/** Every `.wgsl` under `shaders/` by its path there without `.wgsl` (`unary`, `lib/reduce`). */
function fromVite(): Map<string, string> | undefined {
  let found: Record<string, string>;
  try {
    // Vite rewrites this call into an object of inlined strings; elsewhere it throws.
    // NOTE: one glob per folder, both literal: Vite needs the patterns at build time.
    found = {
      ...(import.meta as unknown as { glob: Glob }).glob("../../shaders/*.wgsl", {
        query: "?raw",
        import: "default",
        eager: true,
      }),
      ...(import.meta as unknown as { glob: Glob }).glob("../../shaders/lib/*.wgsl", {
        query: "?raw",
        import: "default",
        eager: true,
      }),
    };
  } catch {
    return undefined;
  }
  const out = new Map<string, string>();
  for (const [path, text] of Object.entries(found)) out.set(path.replace(/^.*\/shaders\/|\.wgsl$/g, ""), text);
  return out;
}

/** The two Deno calls the loader needs (typed here so browser type-checks need no Deno types). */
interface DenoFs {
  readDirSync(dir: URL): Iterable<{ name: string; isFile: boolean }>;
  readTextFileSync(path: URL): string;
}

function fromDisk(): Map<string, string> {
  const deno = (globalThis as { Deno?: DenoFs }).Deno;
  if (!deno) {
    throw new Error("Cannot load WGSL shaders: neither Vite's import.meta.glob nor Deno's file system is available");
  }
  // @vite-ignore: Vite would try to bundle the folder as an asset (and warn that it does not
  // exist); this path only runs under Deno, where the files are read from disk.
  const root = new URL(/* @vite-ignore */ "../../shaders/", import.meta.url);
  const out = new Map<string, string>();
  for (const sub of ["", "lib/"]) {
    const dir = new URL(sub, root);
    for (const entry of deno.readDirSync(dir)) {
      if (entry.isFile && entry.name.endsWith(".wgsl")) {
        out.set(sub + entry.name.slice(0, -5), deno.readTextFileSync(new URL(entry.name, dir)));
      }
    }
  }
  return out;
}

const INCLUDE = /^\s*\/\/\s*#include\s+"([^"]+)\.wgsl"\s*$/;

/**
 * Expand the `// #include "lib/x.wgsl"` lines of `name` (pure; unit-tested): each included
 * file is appended once, after a marker line, includes of includes first seen first.
 * @throws {Error} Naming the including file and line when an include does not exist.
 */
export function expandIncludes(name: string, sources: ReadonlyMap<string, string>): Expanded {
  const own = sources.get(name)!;
  const segments: Segment[] = [{ file: `${name}.wgsl`, start: 1, lines: own.split("\n").length }];
  const parts = [own];
  const seen = new Set<string>([name]);
  const queue: string[] = [];
  const scan = (file: string, text: string) => {
    text.split("\n").forEach((line, i) => {
      const m = INCLUDE.exec(line);
      if (!m) return;
      if (!sources.has(m[1])) {
        throw new Error(`shaders/${file}:${i + 1} includes "${m[1]}.wgsl", which is not in shaders/`);
      }
      if (!seen.has(m[1])) {
        seen.add(m[1]);
        queue.push(m[1]);
      }
    });
  };
  scan(`${name}.wgsl`, own);
  let line = segments[0].lines;
  while (queue.length > 0) {
    const lib = queue.shift()!;
    const text = sources.get(lib)!;
    parts.push(`// ---- ${lib}.wgsl (#include) ----\n${text}`);
    line += 1; // the marker
    const lines = text.split("\n").length;
    segments.push({ file: `${lib}.wgsl`, start: line + 1, lines });
    line += lines;
    scan(`${lib}.wgsl`, text);
  }
  return { text: parts.join("\n"), segments };
}

function loaded(): Map<string, Expanded> {
  if (!families) {
    files ??= fromVite() ?? fromDisk();
    families = new Map();
    for (const name of files.keys()) {
      if (!name.includes("/")) families.set(name, expandIncludes(name, files));
    }
  }
  return families;
}

/** Every shader family by file stem (`unary` for `shaders/unary.wgsl`), includes expanded. */
export function shaderSources(): ReadonlyMap<string, string> {
  return new Map([...loaded()].map(([name, e]) => [name, e.text]));
}

/** The WGSL text of one family, includes expanded; throws naming the file when it does not exist. */
export function shaderSource(name: string): string {
  const e = loaded().get(name);
  if (e === undefined) {
    const known = [...loaded().keys()].sort().join(", ");
    throw new Error(`No shader "shaders/${name}.wgsl" (known: ${known})`);
  }
  return e.text;
}

/** Where line `line` of family `name`'s expanded text comes from: a file under `shaders/` and its line. */
export function shaderLine(name: string, line: number): { file: string; line: number } {
  const segs = loaded().get(name)?.segments ?? [];
  for (const s of segs) {
    if (line >= s.start && line < s.start + s.lines) return { file: s.file, line: line - s.start + 1 };
  }
  return { file: `${name}.wgsl`, line };
}

/**
 * Rewrite the line references of a WGSL compiler message so that a line of included code
 * names its own file. naga writes `loss.wgsl:330:7` (validation) or `wgsl:330:7` after
 * `Shader 'loss.wgsl'` (parsing); Tint a bare `:330:7` and the module's label,
 * `[ShaderModule "loss.wgsl"]`. Each becomes `lib/reduce.wgsl:12:7 (included by loss.wgsl,
 * line 330)`; lines of the family's own text are left alone.
 * @example
 * ```ts
 * import { explainWgslLines } from "./shaders.ts";
 * console.log(explainWgslLines("Shader 'unary.wgsl' parsing error: ... wgsl:1:1")); // own line: unchanged
 * ```
 */
export function explainWgslLines(message: string): string {
  const map = (name: string, line: string, col: string): string | undefined => {
    const at = shaderLine(name, Number(line));
    if (at.file === `${name}.wgsl`) return undefined;
    return `${at.file}:${at.line}:${col} (included by ${name}.wgsl, line ${line})`;
  };
  let out = message.replace(
    /\b([a-z0-9_]+)\.wgsl:(\d+):(\d+)/g,
    (whole, name, line, col) => (loaded().has(name) && map(name, line, col)) || whole,
  );
  const label = /["']([a-z0-9_]+)\.wgsl["']/.exec(message);
  if (label && loaded().has(label[1])) {
    out = out.replace(/(^|[^\w.])(?:wgsl)?:(\d+):(\d+)/gm, (whole, pre, line, col) => {
      const mapped = map(label[1], line, col);
      return mapped ? pre + mapped : whole;
    });
  }
  return out;
}
