/**
 * Build a walk-in's JavaScript (src/distributed/serve/): the loader, the join page's loader
 * (walk_in_page.ts, for tabs), and the bundle of
 * walk_in_entry.ts with the run's program module in place of walk_in_program.ts: the rank
 * runtime, the program and every import in one ES module, WGSL shaders inlined (the same
 * Vite library build as the npm package, vite.package.config.ts). In memory, nothing written.
 * One bundle serves Deno and tabs alike: Vite's library build resolves browser conditions,
 * and nothing in the rank runtime or the program touches Deno at top level (its `Deno.`
 * uses sit behind checks for Deno or in functions a walk-in never calls; the tab spec runs
 * it), so the token's one sha256 covers both.
 * Coordinator side only (Deno with the repository's node_modules).
 */
import { build, type Rollup } from "vite";

const root = decodeURIComponent(new URL("..", import.meta.url).pathname).replace(/\/$/, "");
const SERVE = `${root}/src/distributed/serve`;

/** One Vite library build of `entry` into one module; `program` replaces walk_in_program.ts. */
async function one(entry: string, program?: string): Promise<Uint8Array> {
  const out = await build({
    root,
    configFile: false,
    publicDir: false,
    logLevel: "warn",
    plugins: [{
      name: "flodl-walk-in-program",
      enforce: "pre",
      resolveId: (id: string, importer?: string) =>
        program && id === "./walk_in_program.ts" && importer?.endsWith("walk_in_entry.ts") ? program : undefined,
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
  if (!chunk) throw new Error(`walk-in bundle: the build of ${entry} gave no entry chunk`);
  return new TextEncoder().encode(chunk.code);
}

/** The loader alone (walk_in_loader.ts built): what a test serves beside files of its own. */
export function buildWalkInLoader(): Promise<Uint8Array> {
  return one(`${SERVE}/walk_in_loader.ts`);
}

/** The join page's loader (walk_in_page.ts built). */
export function buildWalkInPage(): Promise<Uint8Array> {
  return one(`${SERVE}/walk_in_page.ts`);
}

/**
 * The loaders (Deno's, the page's) and the bundle of `program` (a module whose top level creates the run's builder).
 * @throws {Error} When the build fails (Vite's message).
 */
export async function buildWalkIn(program: string | URL): Promise<{ loader: Uint8Array; page: Uint8Array; bundle: Uint8Array; ms: number }> {
  const t0 = performance.now();
  const path = program instanceof URL || String(program).startsWith("file:") ? decodeURIComponent(new URL(program).pathname) : String(program);
  const [loader, page, bundle] = [await buildWalkInLoader(), await buildWalkInPage(), await one(`${SERVE}/walk_in_entry.ts`, path)];
  return { loader, page, bundle, ms: performance.now() - t0 };
}
