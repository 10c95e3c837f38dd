/**
 * A major garbage collection on demand, for Deno only (bench/README.md "Memory").
 *
 * Deno's WebGPU objects (command encoders, passes, command buffers, bind groups) keep
 * their wgpu memory until V8 collects the JS wrapper, and V8 does not count that memory:
 * it sees a few MiB of JS heap and rarely runs a major collection, while the process
 * grows by about 1 KiB per object. A training step must create an encoder, a pass and a
 * command buffer (WebGPU has no way to reuse or destroy them), so the device asks for a
 * collection after every `NATIVE_OBJECTS_PER_COLLECT` of them (tuning.ts).
 *
 * Deno exposes `gc` only behind `--v8-flags=--expose-gc`; Node's documented way around
 * that works in Deno too: set the flag at run time, then take `gc` from a fresh context.
 * Browsers have neither; there the function stays a no-op.
 */

type Collect = () => void;

/** `undefined`: not looked up yet; `null`: this runtime has none. Per isolate (each worker its own). */
let collector: Collect | null | undefined;

/** The `Deno` global, typed here so browser type-checks need no Deno types. */
const deno = (globalThis as { Deno?: { version?: { deno?: string } } }).Deno;

/**
 * Find this isolate's `gc` (once). Called by `Device.request`, which is async anyway.
 * @returns Whether collections are available here.
 */
export async function loadCollector(): Promise<boolean> {
  if (collector !== undefined) return collector !== null;
  collector = null;
  const exposed = (globalThis as { gc?: Collect }).gc;
  if (typeof exposed === "function") {
    collector = exposed;
  } else if (typeof deno?.version?.deno === "string") {
    try {
      // Specifiers in variables: bundlers leave them alone, browsers never reach this line.
      const v8Module = "node:v8", vmModule = "node:vm";
      const v8 = await import(/* @vite-ignore */ v8Module), vm = await import(/* @vite-ignore */ vmModule);
      v8.setFlagsFromString("--expose-gc");
      const gc = vm.runInNewContext("gc");
      if (typeof gc === "function") collector = gc;
    } catch {
      // No node compatibility (--no-npm style sandboxes): memory then grows until V8 collects on its own.
    }
  }
  return collector !== null;
}

/**
 * Run a full, synchronous major collection when the runtime allows it.
 * @returns Whether one ran.
 */
export function collectGarbage(): boolean {
  if (!collector) return false;
  collector();
  return true;
}
