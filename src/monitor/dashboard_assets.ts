/**
 * The one place that knows how the dashboard's inlined assets arrive, in the manner of
 * src/gpu/shaders.ts: the view script (the `.js` modules of this folder, the only copy of
 * the chart code, joined into one script by dashboard_script.ts) and uPlot's IIFE build and
 * stylesheet (npm `uplot`), as text, synchronously.
 *
 * - Under Vite (dev server, production build) `import.meta.glob(..., { query: "?raw" })`
 *   inlines the files as strings at build time: nothing is fetched.
 * - Under Deno they are read from disk (needs `--allow-read`): the view modules next to
 *   this module, uPlot where `import.meta.resolve("uplot/...")` points (Deno resolves npm
 *   packages from node_modules), else `../../node_modules/uplot/dist/` relative to this
 *   module.
 *
 * The live page does not need this: `dashboard_live.ts` imports the same view script as a
 * module and npm's uPlot. The saved HTML (`renderDashboardHtml`) inlines these texts.
 */

import { VIEW_ENTRY, viewScript } from "./dashboard_script.ts";

/** The texts inlined into a saved dashboard. */
export interface DashboardAssets {
  /** The view's modules joined into one ES module source with no imports (dashboard_script.ts). */
  viewJs: string;
  /** uplot/dist/uPlot.iife.min.js: defines the global `uPlot`. */
  uplotJs: string;
  /** uplot/dist/uPlot.min.css. */
  uplotCss: string;
}

type Glob = (
  pattern: string[],
  options: { query: string; import: string; eager: true; exhaustive?: boolean },
) => Record<string, string>;

let assets: DashboardAssets | undefined;

function fromVite(): DashboardAssets | undefined {
  let files: Record<string, string>;
  try {
    // Vite rewrites these calls (written out literally, or it would not see them) into
    // objects of inlined strings; elsewhere they throw. Every `.js` file here is a view
    // module. `exhaustive` lets the second glob look into node_modules, which Vite skips
    // by default.
    files = {
      ...(import.meta as unknown as { glob: Glob }).glob(["./*.js"], {
        query: "?raw",
        import: "default",
        eager: true,
      }),
      ...(import.meta as unknown as { glob: Glob }).glob([
        "/node_modules/uplot/dist/uPlot.iife.min.js",
        "/node_modules/uplot/dist/uPlot.min.css",
      ], { query: "?raw", import: "default", eager: true, exhaustive: true }),
    };
  } catch {
    return undefined;
  }
  const pick = (suffix: string) => Object.entries(files).find(([p]) => p.endsWith(suffix))?.[1];
  const uplotJs = pick("/uPlot.iife.min.js"), uplotCss = pick("/uPlot.min.css");
  if (pick(`/${VIEW_ENTRY}`) === undefined || uplotJs === undefined || uplotCss === undefined) {
    throw new Error(
      `Cannot inline the dashboard assets under Vite: got ${Object.keys(files).join(", ") || "no files"}`,
    );
  }
  return { viewJs: viewScript((file) => files[`./${file}`]), uplotJs, uplotCss };
}

/** The Deno call the loader needs (typed here so browser type-checks need no Deno types). */
interface DenoFs {
  readTextFileSync(path: URL): string;
}

// NOTE: the module URL goes through a variable so Vite's `new URL(…, import.meta.url)`
// asset detection does not copy these files into a production build.
const here = import.meta.url;

function uplotFile(name: string): URL {
  try {
    return new URL(import.meta.resolve(`uplot/dist/${name}`));
  } catch {
    return new URL(`../../node_modules/uplot/dist/${name}`, here);
  }
}

function fromDisk(): DashboardAssets {
  const deno = (globalThis as { Deno?: DenoFs }).Deno;
  if (!deno) {
    throw new Error(
      "Cannot load the dashboard assets: neither Vite's import.meta.glob nor Deno's file system is available",
    );
  }
  const read = (url: URL, what: string) => {
    try {
      return deno.readTextFileSync(url);
    } catch (e) {
      throw new Error(`Cannot read ${what} at ${url.href} (is npm "uplot" installed? run npm ci)`, { cause: e });
    }
  };
  return {
    viewJs: viewScript((file) => read(new URL(`./${file}`, here), `the dashboard view module ${file}`)),
    uplotJs: read(uplotFile("uPlot.iife.min.js"), "uPlot's IIFE build"),
    uplotCss: read(uplotFile("uPlot.min.css"), "uPlot's stylesheet"),
  };
}

/**
 * The dashboard's inlined assets (cached after the first call).
 * @throws {Error} When neither Vite nor Deno's file system can supply them, naming the file.
 */
export function dashboardAssets(): DashboardAssets {
  assets ??= fromVite() ?? fromDisk();
  return assets;
}
