import { defineConfig } from "vite";
import main, { ISOLATION_HEADERS } from "../vite.config.ts";

/**
 * Dev server of the bench pages only (bench/engine.html, bench/ddp.html), on its own port so it never
 * collides with the test runner's server (5173). Root is the repository, so the page
 * imports src/ and node_modules as the tests do; the project's plugins serve MNIST at
 * /mnist/ (bench/ddp.html) and its worker format starts the ranks.
 *
 * NOTE: no file watching and no HMR: an edit anywhere in the tree during a run (other
 * work in progress) would otherwise reload the page and lose the sitting.
 */
const root = new URL("..", import.meta.url).pathname;

export default defineConfig({
  root,
  server: { port: 5190, strictPort: true, host: "127.0.0.1", fs: { allow: [root] }, hmr: false, watch: null, headers: ISOLATION_HEADERS },
  optimizeDeps: {
    entries: ["bench/engine.html", "bench/ddp.html", "bench/cold_start.html"],
    include: ["comlink", "@tensorflow/tfjs", "@tensorflow/tfjs-backend-webgpu", "@jax-js/jax"],
  },
  worker: main.worker,
  plugins: main.plugins,
  logLevel: "warn",
});
