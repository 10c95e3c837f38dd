/**
 * Build what a walk-in rank runs (src/distributed/serve/): the Deno loader, the join page's
 * loader, and the bundle of a run's program: the rank runtime, the program and every import
 * in one ES module, WGSL shaders inlined. Part of `flodl-webgpu/vite` (it needs Vite, which a
 * project that builds walk-ins installs beside the package); coordinator side, in Deno.
 * In memory: nothing is written.
 *
 * The bundle's entry is made here, not a file: a first module that calls `startWalkIn` of
 * the engine (so the rank role is entered before the program's top level creates its
 * builder), then the program module. The engine is the one the program imports: the package
 * (`flodl-webgpu`) for a project that installed it, this repository's `src/index.ts` for its
 * own programs; it must be the very module the program imports, or the bundle would hold two
 * engines and the rank would not find the program's builder.
 *
 * The loaders import nothing and are the same for every run: built from their sources in a
 * checkout, read from `lib/walk-in/` (built with the package) when installed.
 * @module
 */
import type { Rollup } from "vite";

/** What {@link buildWalkIn} gives: the files `serveWalkIn` serves. */
export interface WalkInBuild {
  /** The Deno loader (the module a walk-in's printed command runs). */
  loader: Uint8Array;
  /** The join page's loader (tabs). */
  page: Uint8Array;
  /** The run's program bundled with the rank runtime: what both loaders check and run. */
  bundle: Uint8Array;
  /** How long the build took, ms. */
  ms: number;
}

/** Options of {@link buildWalkIn}. */
export interface WalkInBuildOptions {
  /**
   * The module the program imports the engine by: a package name (default `flodl-webgpu`,
   * resolved from the program's folder) or a file path (this repository's `src/index.ts`,
   * the default in a checkout).
   */
  engine?: string;
}

/** The loaders' sources beside this module (a checkout), or undefined (the installed package). */
const SOURCES = new URL(/* @vite-ignore */ "./distributed/serve/", import.meta.url);
/** The prebuilt loaders beside the package's built module (a path built at run time: Vite must not take it for an asset). */
const PREBUILT = new URL(["walk-in", ""].join("/"), import.meta.url);

const pathOf = (u: URL) => decodeURIComponent(u.pathname);

async function readFile(u: URL): Promise<Uint8Array | undefined> {
  const deno = (globalThis as { Deno?: { readFile(p: string): Promise<Uint8Array> } }).Deno;
  try {
    if (deno) return await deno.readFile(pathOf(u));
    const fs = await import(["node", "fs/promises"].join(":")) as { readFile(p: string): Promise<Uint8Array> };
    return await fs.readFile(pathOf(u));
  } catch {
    return undefined;
  }
}

async function exists(u: URL): Promise<boolean> {
  return (await readFile(u)) !== undefined;
}

/** One Vite library build into one module. `virtual`: module ids this build makes up, with their code. */
async function one(entry: string, root: string, virtual: Record<string, string> = {}): Promise<Uint8Array> {
  const { build } = await import("vite");
  const out = await build({
    root,
    configFile: false,
    publicDir: false,
    logLevel: "warn",
    plugins: [{
      name: "flodl-walk-in",
      enforce: "pre",
      // Vite hands a library entry over as a path under the root: match the name at its end.
      resolveId: (id: string) => {
        const name = Object.keys(virtual).find((k) => id === k || id.endsWith(`/${k}`));
        return name === undefined ? undefined : `\0${name}`;
      },
      load: (id: string) => (id.startsWith("\0") && id.slice(1) in virtual ? virtual[id.slice(1)] : undefined),
    }],
    build: {
      write: false,
      target: "es2022",
      minify: false,
      reportCompressedSize: false,
      lib: { entry, formats: ["es"], fileName: "walk_in" },
      rolldownOptions: { output: { codeSplitting: false } },
    },
  });
  const result = (Array.isArray(out) ? out[0] : out) as Rollup.RollupOutput;
  const chunk = result.output.find((o) => o.type === "chunk" && o.isEntry) as Rollup.OutputChunk | undefined;
  if (!chunk) throw new Error(`buildWalkIn: the build of ${entry} gave no entry chunk`);
  return new TextEncoder().encode(chunk.code);
}

/**
 * The two loaders, which are the same for every run: built from their sources in a
 * checkout, read from the package's `lib/walk-in/` when installed.
 * @throws {Error} When neither is there (a package built without them).
 */
export async function buildWalkInLoaders(): Promise<{ loader: Uint8Array; page: Uint8Array }> {
  if (await exists(new URL("walk_in_loader.ts", SOURCES))) {
    const root = pathOf(new URL("../", import.meta.url)).replace(/\/$/, "");
    return {
      loader: await one(pathOf(new URL("walk_in_loader.ts", SOURCES)), root),
      page: await one(pathOf(new URL("walk_in_page.ts", SOURCES)), root),
    };
  }
  const [loader, page] = await Promise.all([readFile(new URL("loader.js", PREBUILT)), readFile(new URL("page.js", PREBUILT))]);
  if (!loader || !page) throw new Error(`buildWalkIn: no walk-in loaders in ${pathOf(PREBUILT)} (the package was built without them)`);
  return { loader, page };
}

/**
 * The loaders and the bundle of `program`, a module whose top level creates the run's
 * builder (and takes its data from `walkInData()` when it returns some: a walk-in may not
 * read files).
 * @throws {Error} When the program is not a file, or the build fails (Vite's message).
 * @example
 * ```ts ignore
 * import { buildWalkIn } from "flodl-webgpu/vite";
 * const files = await buildWalkIn(new URL("./program.ts", import.meta.url));
 * ```
 */
export async function buildWalkIn(program: string | URL, opts: WalkInBuildOptions = {}): Promise<WalkInBuild> {
  const t0 = performance.now();
  const url = program instanceof URL ? program : new URL(program, `file://${pathOfCwd()}/`);
  if (url.protocol !== "file:" || !(await exists(url))) {
    throw new Error(`buildWalkIn: the program ${String(program)} is not a file (expected the path of the module that creates the builder)`);
  }
  const checkout = await exists(new URL("walk_in_loader.ts", SOURCES));
  const engine = opts.engine ?? (checkout ? pathOf(new URL("./index.ts", import.meta.url)) : "flodl-webgpu");
  const path = pathOf(url);
  const { loader, page } = await buildWalkInLoaders();
  const bundle = await one("flodl-walk-in-entry", path.slice(0, path.lastIndexOf("/")) || "/", {
    "flodl-walk-in-entry": `import "flodl-walk-in-start";\nimport ${JSON.stringify(path)};\n`,
    "flodl-walk-in-start": `import { startWalkIn } from ${JSON.stringify(engine)};\nstartWalkIn(import.meta.url);\n`,
  });
  return { loader, page, bundle, ms: performance.now() - t0 };
}

function pathOfCwd(): string {
  const g = globalThis as { Deno?: { cwd(): string }; process?: { cwd(): string } };
  return g.Deno?.cwd() ?? g.process?.cwd() ?? "/";
}
