/**
 * The minimal reproduction behind bench/README.md "Memory": plain WebGPU in Deno, no
 * engine. One primitive is repeated N times; RSS is printed every N/5 calls and the growth
 * per call after the first fifth. With GC=1 (and --v8-flags=--expose-gc) a major
 * collection runs every 1,000 calls: every primitive then stays flat, so Deno frees these
 * objects only when V8 collects their wrappers. `write` alone grows because nothing submits.
 *
 *   deno run -A --no-check bench/memory_raw.ts <primitive> [N]
 *   GC=1 deno run -A --no-check --v8-flags=--expose-gc bench/memory_raw.ts <primitive> [N]
 *
 * Primitives: layout, bindgroup, encoder, encoder-nosubmit, dispatch-fixed, dispatch-new,
 * write, write-submit, write-enc, map, done.
 */
const mode = Deno.args[0];
const N = Number(Deno.args[1] ?? 20000);
const MODES = [
  "layout",
  "bindgroup",
  "encoder",
  "encoder-nosubmit",
  "dispatch-fixed",
  "dispatch-new",
  "write",
  "write-submit",
  "write-enc",
  "map",
  "done",
];
if (!MODES.includes(mode)) {
  throw new RangeError(
    `bench/memory_raw.ts: primitive must be one of ${MODES.join(", ")}, got ${JSON.stringify(mode)}`,
  );
}
if (!Number.isInteger(N) || N < 5000 || N % 5 !== 0) {
  throw new RangeError(`bench/memory_raw.ts: N must be a multiple of 5, >= 5000, got ${Deno.args[1]}`);
}
const gc = Deno.env.get("GC") ? (globalThis as { gc?: () => void }).gc : undefined;
if (Deno.env.get("GC") && !gc) throw new Error("bench/memory_raw.ts: GC=1 needs --v8-flags=--expose-gc");

const adapter = await navigator.gpu.requestAdapter();
if (!adapter) throw new Error("bench/memory_raw.ts: no WebGPU adapter (install mesa-vulkan-drivers for lavapipe)");
const dev = await adapter.requestDevice();
const code = `@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) { if (g.x < arrayLength(&a)) { a[g.x] += 1.0; } }`;
const pipe = dev.createComputePipeline({
  layout: "auto",
  compute: { module: dev.createShaderModule({ code }), entryPoint: "main" },
});
const buf = dev.createBuffer({
  size: 4096,
  usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
});
const stage = dev.createBuffer({ size: 4096, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
const bind = () =>
  dev.createBindGroup({ layout: pipe.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: buf } }] });
const fixed = bind();
const data = new Float32Array(1024);

function dispatch(group: GPUBindGroup): void {
  const enc = dev.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(pipe);
  pass.setBindGroup(0, group);
  pass.dispatchWorkgroups(16);
  pass.end();
  dev.queue.submit([enc.finish()]);
}

let rss0 = 0;
for (let i = 1; i <= N; i++) {
  switch (mode) {
    case "layout":
      pipe.getBindGroupLayout(0);
      break;
    case "bindgroup":
      bind();
      break;
    case "encoder":
      dev.queue.submit([dev.createCommandEncoder().finish()]);
      break;
    case "encoder-nosubmit":
      dev.createCommandEncoder().finish();
      break;
    case "dispatch-fixed":
      dispatch(fixed);
      break;
    case "dispatch-new":
      dispatch(bind());
      break;
    case "write":
      dev.queue.writeBuffer(buf, 0, data);
      break;
    case "write-submit":
      dev.queue.writeBuffer(buf, 0, data);
      dev.queue.submit([]);
      break;
    case "write-enc":
      dev.queue.writeBuffer(buf, 0, data);
      dev.queue.submit([dev.createCommandEncoder().finish()]);
      break;
    case "map": {
      const enc = dev.createCommandEncoder();
      enc.copyBufferToBuffer(buf, 0, stage, 0, 4096);
      dev.queue.submit([enc.finish()]);
      await stage.mapAsync(GPUMapMode.READ);
      stage.getMappedRange().slice(0);
      stage.unmap();
      break;
    }
    case "done":
      await dev.queue.onSubmittedWorkDone();
      break;
  }
  if (i % 200 === 0) await dev.queue.onSubmittedWorkDone();
  if (gc && i % 1000 === 0) gc();
  if (i === N / 5) rss0 = Deno.memoryUsage().rss;
  if (i % (N / 5) === 0) console.log(`${mode} ${i}  rss ${(Deno.memoryUsage().rss / 2 ** 20).toFixed(1)} MiB`);
}
console.log(
  `${mode}${gc ? " (gc every 1000)" : ""}: ${
    ((Deno.memoryUsage().rss - rss0) / (N * 4 / 5)).toFixed(0)
  } bytes/call after the first fifth`,
);
