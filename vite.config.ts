import { defineConfig } from "vite";
import { resolve } from "node:path";
import { trainerProgramChunks } from "./src/vite_plugin.ts";

const root = import.meta.dirname;

/** Pages of the dev server and the production build. */
const pages = {
  index: resolve(root, "index.html"),
  runner: resolve(root, "test/browser/runner.html"),
};

export default defineConfig({
  server: { port: 5173, strictPort: true, host: "127.0.0.1", fs: { allow: [root] } },
  preview: { port: 4173, strictPort: true, host: "127.0.0.1" },
  worker: { format: "es" },
  plugins: [trainerProgramChunks()],
  build: {
    target: "es2022",
    modulePreload: { polyfill: false },
    rolldownOptions: { input: pages },
  },
});
