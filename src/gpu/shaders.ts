/**
 * The one place that knows how `shaders/*.wgsl` arrive (STYLE.md practice 2).
 *
 * - Under Vite (dev server, production build, workers) `import.meta.glob` inlines
 *   every file as a string at build time: no fetch, nothing to serve.
 * - Under Deno the files are read from disk next to this module (needs `--allow-read`).
 *
 * Either way the text is available synchronously, so a pipeline can be compiled at
 * the moment an op first records it.
 */

type Glob = (pattern: string, options: { query: string; import: string; eager: true }) => Record<string, string>;

let sources: Map<string, string> | undefined;

function fromVite(): Map<string, string> | undefined {
  let files: Record<string, string>;
  try {
    // Vite rewrites this call into an object of inlined strings; elsewhere it throws.
    files = (import.meta as unknown as { glob: Glob }).glob("../../shaders/*.wgsl", {
      query: "?raw",
      import: "default",
      eager: true,
    });
  } catch {
    return undefined;
  }
  const out = new Map<string, string>();
  for (const [path, text] of Object.entries(files)) out.set(path.replace(/^.*\/|\.wgsl$/g, ""), text);
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
  const dir = new URL(/* @vite-ignore */ "../../shaders/", import.meta.url);
  const out = new Map<string, string>();
  for (const entry of deno.readDirSync(dir)) {
    if (entry.isFile && entry.name.endsWith(".wgsl")) {
      out.set(entry.name.slice(0, -5), deno.readTextFileSync(new URL(entry.name, dir)));
    }
  }
  return out;
}

/** Every shader family by file stem (`unary` for `shaders/unary.wgsl`). */
export function shaderSources(): ReadonlyMap<string, string> {
  sources ??= fromVite() ?? fromDisk();
  return sources;
}

/** The WGSL text of one family; throws naming the file when it does not exist. */
export function shaderSource(name: string): string {
  const text = shaderSources().get(name);
  if (text === undefined) {
    const known = [...shaderSources().keys()].sort().join(", ");
    throw new Error(`No shader "shaders/${name}.wgsl" (known: ${known})`);
  }
  return text;
}
