/**
 * `Device`: one GPUDevice and everything that records onto it: the current encoder and
 * pass, submits, read-backs, step-scoped memory and the pending asynchronous error.
 *
 * Its parts with their own state live beside it: adapter.ts (getting the GPUDevice),
 * pipelines.ts (compile once per key), uniform_arena.ts (every dispatch's params, uploaded
 * once per submit), bind_groups.ts (bind-group reuse), pool.ts (storage buffers), and
 * dispatch.ts, params.ts, kernel.ts, shaders.ts, collect.ts, tuning.ts.
 */
import { classifyAdapter, type DeviceOptions, requestGpuDevice } from "./adapter.ts";
import { BindGroupCache } from "./bind_groups.ts";
import { collectGarbage, loadCollector } from "./collect.ts";
import type { Dispatch } from "./dispatch.ts";
import { DeviceLostError, GpuError } from "./errors.ts";
import { pipelineKey, PipelineCache } from "./pipelines.ts";
import { BufferPool, type PoolStats, sizeClass, STORAGE_USAGE } from "./pool.ts";
import { explainWgslLines } from "./shaders.ts";
import {
  type AdapterKind,
  ELEMENTWISE_WG,
  MATMUL_CLASS_TILINGS,
  MATMUL_CPU,
  MATMUL_GPU,
  MATMUL_SWIFTSHADER,
  type MatmulClassTilings,
  type MatmulTiling,
  MAX_DISPATCHES_PER_SUBMIT,
  MAX_GROUPS_PER_DIM,
  NATIVE_OBJECTS_PER_COLLECT,
} from "./tuning.ts";
import { UniformArena } from "./uniform_arena.ts";

/** Something that gives its GPU memory back at the end of a step (a step-scoped tensor). */
export interface StepScoped {
  /** Return the memory to the pool; must be idempotent. */
  release(): void;
}

/** Memory figures of a device. */
export interface MemoryStats extends PoolStats {
  /** Bytes held by persistent tensors and step tensors together (= liveBytes). */
  totalBytes: number;
  /** Bind groups ever created; flat after warm-up when the cache serves every dispatch. */
  bindGroupsCreated: number;
  /** Major collections this device asked for (Deno; src/gpu/collect.ts). */
  collections: number;
}

const deviceGlobal = globalThis as { [k: symbol]: Device | undefined };
const DEFAULT_KEY = Symbol.for("flodl-webgpu.defaultDevice");

/**
 * One `GPUDevice` with its limits, features, adapter info, pipeline cache, buffer pool
 * and the command encoder that every op records into.
 *
 * Work is recorded, not run: `flush()` submits it, `read()` submits and waits. A lost
 * device or an asynchronous validation error is thrown on the next use, naming the reason.
 */
export class Device {
  /** The underlying WebGPU device. */
  readonly gpu: GPUDevice;
  /** Adapter description (vendor, architecture, description). */
  readonly info: GPUAdapterInfo;
  /** Name used in labels and messages. */
  readonly label: string;
  /** Optional features that were offered and enabled. */
  readonly features: ReadonlySet<string>;
  /** Matmul tiling in use. */
  readonly matmul: MatmulTiling;
  /** Tilings of the product classes that do not use {@link matmul}. */
  readonly matmulClasses: Readonly<MatmulClassTilings>;
  /** Which row of the per-adapter tuning tables this adapter reads. */
  readonly adapterKind: AdapterKind;
  /** True when the adapter is a software fallback (lavapipe, SwiftShader). */
  readonly isFallback: boolean;

  #pool: BufferPool;
  #pipelines: PipelineCache;
  #encoder: GPUCommandEncoder | undefined;
  #pass: GPUComputePassEncoder | undefined;
  #dispatches = 0;
  #arena: UniformArena;
  #staging = new Map<number, GPUBuffer[]>();
  #bindGroups: BindGroupCache;
  /** GPU objects created since the last collection that only a GC frees (collect.ts). */
  #uncollected = 0;
  #collections = 0;
  #step = new Set<StepScoped>();
  #lost: GPUDeviceLostInfo | undefined;
  #error: GPUError | undefined;
  #submits = 0;
  #destroyed = false;

  private constructor(gpu: GPUDevice, adapter: GPUAdapter, label: string, matmul?: MatmulTiling, classes?: MatmulClassTilings) {
    this.gpu = gpu;
    this.info = adapter.info;
    this.label = label;
    this.features = new Set([...gpu.features] as string[]);
    const adapterClass = classifyAdapter(adapter.info);
    this.isFallback = adapterClass.isFallback;
    this.adapterKind = adapterClass.adapterKind;
    this.matmul = matmul ?? { lavapipe: MATMUL_CPU, swiftshader: MATMUL_SWIFTSHADER, gpu: MATMUL_GPU }[this.adapterKind];
    this.matmulClasses = { ...(classes ?? (matmul ? {} : MATMUL_CLASS_TILINGS[this.adapterKind])) };
    this.#pool = new BufferPool((bytes) => gpu.createBuffer({ label: `${label}/pool/${bytes}`, size: bytes, usage: STORAGE_USAGE }));
    this.#arena = new UniformArena(gpu, label);
    this.#pipelines = new PipelineCache(gpu, this.compiles, (key) => this.onCompile?.(key));
    // Each new bind group is two objects only a GC frees: the group and its layout's wrapper.
    this.#bindGroups = new BindGroupCache(gpu, this.#arena.buffer, () => (this.#uncollected += 2));
    gpu.lost.then((info) => (this.#lost = info));
    gpu.addEventListener("uncapturederror", (e) => {
      this.#error ??= (e as GPUUncapturedErrorEvent).error;
    });
  }

  /**
   * Ask for an adapter and a device with the adapter's own maximum buffer and binding
   * sizes; enable `shader-f16`, `timestamp-query` and `subgroups` when offered.
   * The first device requested becomes the default for tensors created without one.
   * @throws {Error} When the runtime has no WebGPU, or no adapter is found (says how to get one).
   * @example
   * ```ts
   * import { Device } from "../index.ts";
   * const device = await Device.request();
   * console.log(device.info.description);
   * ```
   */
  static async request(options: DeviceOptions = {}): Promise<Device> {
    const { adapter, gpu } = await requestGpuDevice(options);
    await loadCollector();
    const device = new Device(gpu, adapter, options.label ?? "gpu", options.matmul, options.matmulClasses);
    deviceGlobal[DEFAULT_KEY] ??= device;
    return device;
  }

  /** The device tensors use when none is given: the first requested, or the one set with {@link Device.setDefault}. */
  static get default(): Device {
    const d = deviceGlobal[DEFAULT_KEY];
    if (!d) throw new Error("No default device: call `await Device.request()` first, or pass { device }");
    return d;
  }

  /** Make `device` the default for tensors created without one. */
  static setDefault(device: Device): void {
    deviceGlobal[DEFAULT_KEY] = device;
  }

  /** True once the device was lost (or destroyed). */
  get lost(): boolean {
    return this.#lost !== undefined || this.#destroyed;
  }

  /**
   * Whether the device is lost, asked of its `lost` promise: a read-back or submit on a
   * device lost underneath the engine (driver reset, GPU process crash, `gpu.destroy()` on
   * the raw device) can fail before that promise settles, so wait up to `graceMs` for it.
   * @returns The loss as a {@link DeviceLostError}, or undefined while the device lives.
   */
  async lostWithin(graceMs: number): Promise<DeviceLostError | undefined> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const info = this.#lost ?? await Promise.race([
      this.gpu.lost,
      new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), graceMs))),
    ]);
    clearTimeout(timer);
    if (info) return new DeviceLostError(this.label, info.reason, info.message);
    if (this.#destroyed) return new DeviceLostError(this.label, "destroyed", "destroy() was called");
    return undefined;
  }

  /** Device limits (the adapter's maxima for buffer and binding sizes). */
  get limits(): GPUSupportedLimits {
    return this.gpu.limits;
  }

  /** Throw the pending asynchronous error (device lost, validation, out of memory), if any. */
  check(): void {
    if (this.#lost) throw new DeviceLostError(this.label, this.#lost.reason, this.#lost.message);
    if (this.#destroyed) throw new DeviceLostError(this.label, "destroyed", "destroy() was called");
    const e = this.#error;
    if (e) {
      this.#error = undefined;
      const kind = e.constructor?.name ?? "GPUError";
      // A WGSL error in an included helper (shaders/lib/) names that file and its line.
      throw new GpuError(`${kind} on device "${this.label}": ${explainWgslLines(e.message)}`);
    }
  }

  // ---- memory --------------------------------------------------------------

  /**
   * A storage buffer of at least `bytes` bytes from the pool.
   * @throws {RangeError} Naming the size and the device limit when it cannot be bound.
   */
  alloc(bytes: number, label?: string): GPUBuffer {
    this.check();
    const max = this.gpu.limits.maxStorageBufferBindingSize;
    if (bytes > max) {
      throw new RangeError(
        `${label ?? "buffer"}: ${bytes} bytes exceeds this device's maxStorageBufferBindingSize of ${max} bytes`,
      );
    }
    const buf = this.#pool.acquire(Math.max(bytes, 4), max);
    if (label) buf.label = `${this.label}/${label}`;
    return buf;
  }

  /** Return a buffer from {@link alloc}; reusable after the next submit. */
  free(buf: GPUBuffer): void {
    this.#pool.release(buf);
  }

  /** Track a step-scoped object; {@link endStep} releases it. */
  track(x: StepScoped): void {
    this.#step.add(x);
  }

  /** Stop tracking (the object was kept or released by hand). */
  untrack(x: StepScoped): void {
    this.#step.delete(x);
  }

  /**
   * End a training step: submit what was recorded and give every step-scoped tensor's
   * memory back to the pool. Parameters, gradients and optimizer state are persistent
   * and stay. Using a released tensor afterwards throws.
   */
  endStep(): void {
    this.flush();
    for (const x of this.#step) x.release();
    this.#step.clear();
    this.#pool.afterSubmit();
  }

  /** Pool and live byte counts. */
  memory(): MemoryStats {
    const s = this.#pool.stats();
    return {
      ...s,
      totalBytes: s.liveBytes + s.pooledBytes,
      bindGroupsCreated: this.#bindGroups.created,
      collections: this.#collections,
    };
  }

  /** Number of submits so far (tests check that a step records with one submit). */
  get submits(): number {
    return this.#submits;
  }

  // ---- recording -----------------------------------------------------------

  /**
   * Called before a pipeline compiles (a cache miss). A compile blocks the calling thread
   * for up to seconds on a software adapter; a rank announces it so that its silence is not
   * taken for a death.
   */
  onCompile?: (key: string) => void;

  /**
   * Every pipeline this device compiled, in order, with the ms `createComputePipeline` took
   * (Deno's blocks for the whole compile; a browser may finish it later, so there the ms is
   * a lower bound). Cold-start measurements read it (bench/cold_start.ts).
   */
  readonly compiles: { key: string; ms: number }[] = [];

  /** The compiled pipeline for `shader/entry/overrides`, compiled once per device. */
  pipeline(shader: string, entry: string, overrides?: Record<string, number>): GPUComputePipeline {
    return this.#pipelines.get(pipelineKey(shader, entry, overrides), shader, entry, overrides);
  }

  #encoderNow(): GPUCommandEncoder {
    if (!this.#encoder) {
      this.#encoder = this.gpu.createCommandEncoder({ label: `${this.label}/step` });
      this.#uncollected += 2; // the encoder and its command buffer
    }
    return this.#encoder;
  }

  #endPass(): void {
    this.#pass?.end();
    this.#pass = undefined;
  }

  /** Record one kernel launch into the current command encoder. */
  dispatch(d: Dispatch): void {
    this.check();
    if (this.#dispatches >= MAX_DISPATCHES_PER_SUBMIT || this.#arena.full) this.flush();
    const pkey = pipelineKey(d.shader, d.entry, d.overrides);
    const pipeline = this.#pipelines.get(pkey, d.shader, d.entry, d.overrides);
    const offset = d.params ? this.#arena.write(d.params.layout, d.params.values) : -1;
    const bindGroup = this.#bindGroups.get(pkey, pipeline, d, offset);
    const [x, y = 1, z = 1] = d.groups;
    if (x === 0 || y === 0 || z === 0) return;
    if (x > MAX_GROUPS_PER_DIM || y > MAX_GROUPS_PER_DIM || z > MAX_GROUPS_PER_DIM) {
      throw new RangeError(`${d.shader}/${d.entry}: grid [${x}, ${y}, ${z}] exceeds ${MAX_GROUPS_PER_DIM} workgroups per dimension`);
    }
    if (!this.#pass) {
      this.#pass = this.#encoderNow().beginComputePass({ label: `${this.label}/pass` });
      this.#uncollected++;
    }
    this.#pass.setPipeline(pipeline);
    this.#pass.setBindGroup(0, bindGroup);
    this.#pass.dispatchWorkgroups(x, y, z);
    this.#dispatches++;
  }

  /** Record a buffer-to-buffer copy. */
  copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, bytes: number): void {
    this.check();
    if (bytes === 0) return;
    this.#endPass();
    this.#encoderNow().copyBufferToBuffer(src, srcOffset, dst, dstOffset, bytes);
  }

  /** Record zero-filling `bytes` bytes of `buf` from `offset` (both multiples of 4). */
  clear(buf: GPUBuffer, offset = 0, bytes = buf.size - offset): void {
    this.check();
    this.#endPass();
    this.#encoderNow().clearBuffer(buf, offset, bytes);
  }

  /**
   * Write host data into a buffer. Work recorded before is submitted first, so the
   * write lands after it, as program order says.
   */
  write(buf: GPUBuffer, offset: number, data: ArrayBufferView<ArrayBuffer>): void {
    this.check();
    if (data.byteLength === 0) return; // NOTE: Deno 2.9 aborts on a 0-byte writeBuffer
    if (this.#encoder) this.flush();
    this.gpu.queue.writeBuffer(buf, offset, data.buffer, data.byteOffset, data.byteLength);
  }

  /**
   * Write host data into a buffer no recorded command uses yet (a fresh allocation):
   * no flush needed, since the queue runs the write before the pending submit.
   */
  upload(buf: GPUBuffer, offset: number, data: ArrayBufferView<ArrayBuffer>): void {
    this.check();
    if (data.byteLength === 0) return;
    this.gpu.queue.writeBuffer(buf, offset, data.buffer, data.byteOffset, data.byteLength);
  }

  /** Submit everything recorded so far (one command buffer). Never waits. */
  flush(): void {
    this.check();
    this.#endPass();
    this.#arena.upload(this.gpu.queue);
    if (this.#encoder) {
      this.gpu.queue.submit([this.#encoder.finish()]);
      this.#encoder = undefined;
      this.#submits++;
    }
    this.#dispatches = 0;
    this.#pool.afterSubmit();
    if (this.#uncollected >= NATIVE_OBJECTS_PER_COLLECT) {
      this.#uncollected = 0;
      if (collectGarbage()) this.#collections++;
    }
  }

  /** Submit and wait until the GPU finished everything submitted. */
  async sync(): Promise<void> {
    this.flush();
    await this.gpu.queue.onSubmittedWorkDone();
    this.check();
  }

  /** Copy `bytes` bytes of `buf` from `offset` to the host (submits, then waits for the GPU). */
  async read(buf: GPUBuffer, offset: number, bytes: number): Promise<ArrayBuffer> {
    if (bytes === 0) return new ArrayBuffer(0);
    const size = sizeClass(bytes);
    const staging = this.#staging.get(size)?.pop() ??
      this.gpu.createBuffer({ label: `${this.label}/readback/${size}`, size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    this.copy(buf, offset, staging, 0, bytes);
    this.#uncollected++; // the mapping's promise and its callback
    this.flush();
    try {
      await staging.mapAsync(GPUMapMode.READ, 0, bytes);
    } catch (e) {
      this.check();
      throw e;
    }
    const out = staging.getMappedRange(0, bytes).slice(0);
    staging.unmap();
    const list = this.#staging.get(size);
    if (list) list.push(staging);
    else this.#staging.set(size, [staging]);
    this.check();
    return out;
  }

  /** Workgroup grid for `n` threads in groups of `wg`, folded into y past the per-dimension limit. */
  static grid(n: number, wg = ELEMENTWISE_WG): [number, number] {
    const groups = Math.ceil(n / wg);
    if (groups <= MAX_GROUPS_PER_DIM) return [groups, 1];
    const y = Math.ceil(groups / MAX_GROUPS_PER_DIM);
    return [Math.ceil(groups / y), y];
  }

  /** Give every pooled buffer back to the driver (live tensors keep theirs). */
  trim(): void {
    this.#bindGroups.clear(); // they may bind the buffers destroyed below
    this.#pool.trim();
  }

  /** Destroy the device; later use throws {@link DeviceLostError}. */
  destroy(): void {
    this.#destroyed = true;
    this.#encoder = undefined;
    this.#pass = undefined;
    this.gpu.destroy();
    if (deviceGlobal[DEFAULT_KEY] === this) deviceGlobal[DEFAULT_KEY] = undefined;
  }
}
