/**
 * The npm package's JavaScript (`npm run build:package`, run by `npm pack` through
 * `prepack`): one Vite library build, so the package runs the way the demo does, with no
 * file read or fetched at run time.
 *
 * - Every WGSL shader and the dashboard's uPlot files are inlined as strings (the
 *   `import.meta.glob` of src/gpu/shaders.ts and src/monitor/dashboard_assets.ts).
 * - The dependencies (comlink, NATS, uPlot, wgpu-matrix) are bundled in: the built modules
 *   import nothing by bare name, so Deno needs no import map, a Vite app no pre-bundling,
 *   and a browser can load them straight from any static server. Vite itself is the one
 *   exception: `buildWalkIn` (flodl-webgpu/vite) imports it when called, from the project
 *   that builds walk-ins and so has Vite installed.
 * - The rank worker is its own file, found next to the module that starts it
 *   (`new Worker(new URL("assets/rank-….js", import.meta.url))`), which is the form a
 *   consumer's Vite build bundles again as a worker.
 * - Entries share chunks, so a program that imports several subpaths gets one copy of
 *   the engine. Not minified: a consumer's bundler minifies, and stack traces stay readable.
 */
import { defineConfig } from "vite";
import { resolve } from "node:path";
import { builtName, PACKAGE_ENTRIES, type PackageSpecifier } from "./scripts/package_entries.ts";

const root = decodeURIComponent(new URL(".", import.meta.url).pathname).replace(/\/$/, "");

export default defineConfig({
  root,
  base: "./",
  configFile: false,
  publicDir: false,
  worker: { format: "es" },
  build: {
    outDir: resolve(root, "lib"),
    emptyOutDir: true,
    target: "es2022",
    minify: false,
    reportCompressedSize: false,
    lib: {
      entry: Object.fromEntries(
        Object.entries(PACKAGE_ENTRIES).map(([k, v]) => [builtName(k as PackageSpecifier), resolve(root, v)]),
      ),
      formats: ["es"],
    },
    // The chunk the entries share (the engine itself), named for what it is.
    rolldownOptions: { external: ["vite"], output: { chunkFileNames: "flodl-[hash].js" } },
  },
});
