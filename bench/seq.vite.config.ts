import { defineConfig, mergeConfig } from "vite";
import bench from "./vite.config.ts";

/**
 * Dev server of the sequence-model bench page (bench/seq.html): bench/vite.config.ts (no
 * watching, no HMR, the project's plugins) on SEQ_BENCH_PORT (default 6701), with the
 * page's dependencies pre-bundled up front so the page never reloads mid-sitting.
 */
const port = Number(process.env.SEQ_BENCH_PORT ?? 6701);

export default mergeConfig(bench, defineConfig({
  server: { port, strictPort: true },
  optimizeDeps: { entries: ["bench/seq.html"] },
}));
