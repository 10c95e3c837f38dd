import { tmpdir } from "node:os";
import { defineConfig, mergeConfig } from "vite";
import bench from "./vite.config.ts";

/**
 * Dev server of the sequence-model bench page (bench/seq.html): bench/vite.config.ts (no
 * watching, no HMR, the project's plugins) on SEQ_BENCH_PORT (default 6701), with the
 * page's dependencies pre-bundled up front so the page never reloads mid-sitting, into a
 * cache of its own: node_modules may be shared by several checkouts, and another server
 * re-optimizing node_modules/.vite mid-sitting made jax-js's lazily imported WebGPU chunk
 * fail with 504 "Outdated Optimize Dep".
 */
const port = Number(process.env.SEQ_BENCH_PORT ?? 6701);

export default mergeConfig(bench, defineConfig({
  cacheDir: `${tmpdir()}/flodl-seq-bench-vite-${port}`,
  server: { port, strictPort: true },
  optimizeDeps: { entries: ["bench/seq.html"] },
}));
