/**
 * Runs the GPU test modules of test/gpu/ in the browser: the same sources `deno test` runs.
 * `?module=<path under test/gpu>[,<path>…]` picks modules, run in that order on one shared
 * device (as `deno test` runs them all in one process); without it every module runs.
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
const wanted = new URLSearchParams(location.search).get("module")?.split(",");
const log = document.getElementById("log")!;

async function main(): Promise<void> {
  const adapter = await navigator.gpu?.requestAdapter();
  state.adapter = adapter ? `${adapter.info.vendor} ${adapter.info.architecture} ${adapter.info.description}`.trim() : "none";
  // *_deno_test.ts modules use Deno's file system and run under deno test only.
  const all = Object.keys(modules).filter((p) => !p.endsWith("_deno_test.ts"));
  const paths = wanted ? wanted.map((w) => all.find((p) => p.endsWith(`/gpu/${w}`)) ?? w) : all;
  for (const p of paths.filter((p) => !all.includes(p))) state.results.push({ name: `no module matches ${p}`, ok: false, ms: 0 });
  for (const path of paths.filter((p) => all.includes(p))) {
    try {
      await modules[path]();
    } catch (e) {
      state.results.push({ name: `import ${path}`, ok: false, error: String((e as Error)?.stack ?? e), ms: 0 });
      continue;
    }
    const mod = path.slice(path.indexOf("/gpu/") + 5);
    for (const t of takeRegistered()) {
      const name = `${mod}: ${t.name}`;
      const t0 = performance.now();
      try {
        await t.fn(undefined as never);
        state.results.push({ name, ok: true, ms: performance.now() - t0 });
      } catch (e) {
        state.results.push({ name, ok: false, error: String((e as Error)?.stack ?? e), ms: performance.now() - t0 });
      }
      log.textContent = state.results.map((r) => `${r.ok ? "ok  " : "FAIL"} ${r.name}`).join("\n");
    }
  }
  state.done = true;
}
main();
