import { defineConfig } from "@playwright/test";
import main from "../playwright.config.ts";

/**
 * The sequence-model bench in Chromium (bench/seq.spec.ts: char-rnn and gpt-nano steps, ours
 * vs TF.js vs jax-js), kept out of `npm test`: its own Vite dev server (bench/seq.vite.config.ts)
 * on SEQ_BENCH_PORT (default 6701), the Chromium binary and WebGPU flags of the repository's
 * playwright.config.ts (SwiftShader without a GPU).
 *
 *   SEQ_MODEL=gpt-nano SEQ_BATCH=8 SEQ_SEQ=64 SEQ_STEPS=3 SEQ_ROUNDS=3 \
 *     npx playwright test -c bench/seq.playwright.config.ts
 */
const port = Number(process.env.SEQ_BENCH_PORT ?? 6701);

export default defineConfig({
  testDir: ".",
  testMatch: /seq\.spec\.ts$/,
  timeout: 3_600_000,
  workers: 1,
  reporter: "list",
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    browserName: "chromium",
    launchOptions: main.use?.launchOptions,
  },
  webServer: {
    command: `npx vite --config bench/seq.vite.config.ts`,
    cwd: "..",
    url: `http://127.0.0.1:${port}/bench/seq.html`,
    reuseExistingServer: false,
    timeout: 180_000,
  },
});
