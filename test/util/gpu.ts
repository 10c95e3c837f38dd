/**
 * One GPU test source, two runtimes: under Deno `gpuTest` registers a
 * `Deno.test`; in Chromium the Playwright runner page (test/browser/runner.ts) imports the
 * same modules and runs what they registered. Tests never skip: without an adapter they fail
 * with Device.request's message on how to get one.
 */
import { Device } from "../../src/gpu/mod.ts";

export type GpuTestFn = (device: Device) => Promise<void> | void;
export interface RegisteredTest {
  name: string;
  fn: GpuTestFn;
}

const REGISTRY = Symbol.for("flodl-webgpu.gpuTests");
interface DenoTest {
  test(t: { name: string; sanitizeOps: boolean; sanitizeResources: boolean; fn: () => Promise<void> }): void;
}
const g = globalThis as { [k: symbol]: RegisteredTest[] | undefined; Deno?: DenoTest };

let shared: Promise<Device> | undefined;

/** The device all GPU tests of this runtime share. */
export function testDevice(): Promise<Device> {
  shared ??= Device.request({ label: "test" }).then((d) => {
    Device.setDefault(d);
    return d;
  });
  return shared;
}

async function runOne(fn: GpuTestFn): Promise<void> {
  const device = await testDevice();
  try {
    await fn(device);
  } finally {
    device.endStep();
  }
}

/** Register a GPU test for the current runtime. */
export function gpuTest(name: string, fn: GpuTestFn): void {
  if (g.Deno?.test) {
    g.Deno.test({ name, sanitizeOps: false, sanitizeResources: false, fn: () => runOne(fn) });
  } else {
    (g[REGISTRY] ??= []).push({ name, fn: () => runOne(fn) });
  }
}

/** Tests registered in the browser so far (the runner drains them per module). */
export function takeRegistered(): RegisteredTest[] {
  const list = g[REGISTRY] ?? [];
  g[REGISTRY] = [];
  return list;
}
