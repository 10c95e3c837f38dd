import { defineConfig } from "@playwright/test";
import main from "../playwright.config.ts";

/**
 * The Chromium benches (bench/bench.spec.ts: the engine; bench/ddp.spec.ts: the trainer), kept out of `npm test`: its own config, its own
 * Vite dev server (bench/vite.config.ts, port 5190), the Chromium binary and WebGPU flags of
 * the repository's playwright.config.ts (SwiftShader without a GPU).
 *
 *   npx playwright test -c bench/playwright.config.ts [bench.spec.ts | ddp.spec.ts]
 *   (BENCH_TAG=run1, BENCH_SIZES=256,512, BENCH_DDP_SUBSET=3200, BENCH_DDP_RANKS=2,4)
 */
export default defineConfig({
  testDir: ".",
  testMatch: /(bench|ddp|cold_start)\.spec\.ts$/,
  timeout: 3_600_000,
  workers: 1,
  reporter: "list",
  use: {
    baseURL: "http://127.0.0.1:5190",
    browserName: "chromium",
    launchOptions: main.use?.launchOptions,
  },
  webServer: {
    command: "npx vite --config bench/vite.config.ts",
    cwd: "..",
    url: "http://127.0.0.1:5190/bench/engine.html",
    reuseExistingServer: false,
    timeout: 180_000,
  },
});
