import { defineConfig } from "@playwright/test";

/**
 * Chromium (Debian's /usr/bin/chromium, never downloaded) with WebGPU: a real GPU when
 * present, SwiftShader otherwise.
 */
export const WEBGPU_FLAGS = [
  "--enable-unsafe-webgpu",
  "--enable-features=Vulkan",
  "--use-vulkan=swiftshader",
  "--use-webgpu-adapter=swiftshader",
  "--enable-unsafe-swiftshader",
  // Without it, headless Chromium loses the device of the demo's 3-D view (a WebGPU canvas).
  "--use-angle=swiftshader",
];
export const QUIET_FLAGS = ["--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];
const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
/**
 * The shared dev server's port; the demo test takes the next two (its own dev server and
 * `vite preview`). PW_PORT moves all three, so two checkouts can run Playwright at once.
 */
export const PORT = Number(process.env.PW_PORT ?? 5173);

export default defineConfig({
  testDir: "test/browser",
  testMatch: /.*\.spec\.ts$/,
  timeout: 600_000,
  workers: 1,
  reporter: process.env.CI ? "list" : "line",
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    browserName: "chromium",
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: [...(isRoot ? ["--no-sandbox"] : []), ...QUIET_FLAGS, ...WEBGPU_FLAGS],
    },
  },
  webServer: {
    command: `npx vite --logLevel warn --port ${PORT} --strictPort`,
    url: `http://127.0.0.1:${PORT}/test/browser/runner.html`,
    reuseExistingServer: !process.env.CI,
    timeout: 120_000,
  },
});
