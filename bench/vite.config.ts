import { defineConfig } from "vite";

/**
 * Dev server of the bench page only (bench/engine.html), on its own port so it never
 * collides with the test runner's server (5173). Root is the repository, so the page
 * imports src/ and node_modules as the tests do.
 *
 * NOTE: no file watching and no HMR: an edit anywhere in the tree during a run (other
 * work in progress) would otherwise reload the page and lose the sitting.
 */
const root = new URL("..", import.meta.url).pathname;

export default defineConfig({
  root,
  server: { port: 5190, strictPort: true, host: "127.0.0.1", fs: { allow: [root] }, hmr: false, watch: null },
  optimizeDeps: {
    entries: ["bench/engine.html"],
    include: ["comlink", "@tensorflow/tfjs", "@tensorflow/tfjs-backend-webgpu", "@jax-js/jax"],
  },
  logLevel: "warn",
});
