/**
 * Runs the GPU test modules of test/gpu/ in the browser: the same sources `deno test` runs.
 * `?module=<path under test/gpu>` picks one module (Playwright makes one test per module).
 * Results land in `window.__gpuTests` = { done, results: [{ name, ok, error, ms }] }.
 */
import { takeRegistered } from "../util/gpu.ts";

interface Result {
  name: string;
  ok: boolean;
  error?: string;
  ms: number;
}
const state: { done: boolean; results: Result[]; adapter?: string } = { done: false, results: [] };
(globalThis as unknown as { __gpuTests: typeof state }).__gpuTests = state;

const modules = import.meta.glob("../gpu/**/*_test.ts");
const wanted = new URLSearchParams(location.search).get("module");
const log = document.getElementById("log")!;

async function main(): Promise<void> {
  const adapter = await navigator.gpu?.requestAdapter();
  state.adapter = adapter ? `${adapter.info.vendor} ${adapter.info.architecture} ${adapter.info.description}`.trim() : "none";
  // *_deno_test.ts modules use Deno's file system and run under deno test only.
  const paths = Object.keys(modules).filter((p) => !p.endsWith("_deno_test.ts") && (!wanted || p.endsWith(`/gpu/${wanted}`)));
  if (paths.length === 0) state.results.push({ name: `no module matches ${wanted}`, ok: false, ms: 0 });
  for (const path of paths) {
    try {
      await modules[path]();
    } catch (e) {
      state.results.push({ name: `import ${path}`, ok: false, error: String((e as Error)?.stack ?? e), ms: 0 });
      continue;
    }
    for (const t of takeRegistered()) {
      const t0 = performance.now();
      try {
        await t.fn(undefined as never);
        state.results.push({ name: t.name, ok: true, ms: performance.now() - t0 });
      } catch (e) {
        state.results.push({ name: t.name, ok: false, error: String((e as Error)?.stack ?? e), ms: performance.now() - t0 });
      }
      log.textContent = state.results.map((r) => `${r.ok ? "ok  " : "FAIL"} ${r.name}`).join("\n");
    }
  }
  state.done = true;
}
main();
