/**
 * Why a readback costs ~11 ms in Deno: the runtime's wait, not the GPU. Raw WebGPU (nothing
 * from src/), one device, medians and spreads of N runs of:
 *
 * - `empty`: an empty submit + `queue.onSubmittedWorkDone()` (no GPU work at all);
 * - `read`: copy 4 bytes into a MAP_READ buffer, submit, `mapAsync` (what `loss.item()` does);
 * - `read-after-idle`: the same copy, submitted, then 30 ms of sleep before `mapAsync` is
 *   called (the GPU finished long before): the wait that remains is the runtime's;
 * - `sleep-1ms`: `setTimeout(1)` alone, the timer resolution of this runtime, for scale.
 *
 * Deno 2.x's `mapAsync` / `onSubmittedWorkDone` (ext/webgpu) poll the device and then sleep
 * 10 ms in a loop until the callback has fired, so a completion lands on that grid: every
 * wait costs at least one 10 ms sleep after the GPU is done. In Chromium the same waits are
 * driven by the GPU process's fences (compare in the browser console).
 *
 *   deno run -A bench/submit_floor.ts [--runs 30]
 */
const runs = Number(Deno.args[Deno.args.indexOf("--runs") + 1] ?? 30) || 30;
const adapter = await navigator.gpu.requestAdapter();
if (!adapter) throw new Error("bench/submit_floor: no WebGPU adapter (Deno needs Vulkan, e.g. Mesa lavapipe)");
const device = await adapter.requestDevice();
const src = device.createBuffer({ size: 256, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
const dst = device.createBuffer({ size: 256, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });

function copy(): void {
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, dst, 0, 4);
  device.queue.submit([enc.finish()]);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function time(label: string, setup: () => Promise<void> | void, measured: () => Promise<void>) {
  const xs: number[] = [];
  for (let i = 0; i < runs + 2; i++) {
    await setup();
    const t0 = performance.now();
    await measured();
    const ms = performance.now() - t0;
    if (i >= 2) xs.push(ms);
  }
  xs.sort((a, b) => a - b);
  const q = (p: number) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))].toFixed(2);
  console.log(`| ${label} | ${q(0.5)} | ${q(0)} | ${q(0.9)} | ${xs.length} |`);
}

console.log(`bench/submit_floor: deno ${Deno.version.deno}, adapter ${adapter.info.description || adapter.info.vendor}, load ${Deno.loadavg()[0].toFixed(2)}`);
console.log("\n| wait | median ms | min ms | p90 ms | runs |\n|---|---|---|---|---|");
await time("empty submit + onSubmittedWorkDone", () => {}, async () => {
  device.queue.submit([]);
  await device.queue.onSubmittedWorkDone();
});
await time("copy 4 B + submit + mapAsync", () => {}, async () => {
  copy();
  await dst.mapAsync(GPUMapMode.READ);
  dst.unmap();
});
await time("mapAsync 30 ms after the copy was submitted", async () => {
  copy();
  await sleep(30);
}, async () => {
  await dst.mapAsync(GPUMapMode.READ);
  dst.unmap();
});
await time("setTimeout(1) alone", () => {}, () => sleep(1));
device.destroy();
