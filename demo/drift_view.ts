/**
 * The 3-D view of the ranks' drift, drawn with a WebGPU render pipeline on the page's own
 * GPUDevice (never a rank's): at every reduce each rank's parameters before averaging and
 * the consensus are projected to 3-D by a fixed random projection (projection.ts) and
 * animated by drift_scene.ts; shaders in drift.wgsl; orbit camera in drift_camera.ts.
 */
import SHADER from "./drift.wgsl?raw";
import { OrbitCamera } from "./drift_camera.ts";
import { type DriftFrame, DriftScene, type Rgba } from "./drift_scene.ts";
import { RandomProjection, type Vec3 } from "./projection.ts";

/** Background of the view (the dashboard's dark panel). */
const CLEAR = { r: 0.051, g: 0.067, b: 0.09, a: 1 };
const SAMPLES = 4;
/** Floats per line vertex (position, colour) and per point instance (centre, colour, size). */
const LINE_FLOATS = 7, POINT_FLOATS = 8;
/** Uniform: mat4x4f, vec2f viewport, f32 pixel ratio, f32 pad. */
const CAMERA_BYTES = 80;
/** Frames per second while nothing animates but the idle turn. */
const IDLE_FPS = 30;
const CUBE: Rgba = [0.6, 0.65, 0.7, 0.18];

/** What the view has drawn (the page exposes it to tests). */
export interface DriftStats {
  frames: number;
  reduces: number;
  /** Points in the last frame drawn. */
  points: number;
  round: number;
}

function cubeLines(): DriftFrame["lines"] {
  const out: DriftFrame["lines"] = [];
  const c = [-1, 1];
  for (const a of c) {
    for (const b of c) {
      out.push({ a: [-1, a, b], b: [1, a, b], ca: CUBE, cb: CUBE });
      out.push({ a: [a, -1, b], b: [a, 1, b], ca: CUBE, cb: CUBE });
      out.push({ a: [a, b, -1], b: [a, b, 1], ca: CUBE, cb: CUBE });
    }
  }
  return out;
}

export class DriftView {
  readonly device: GPUDevice;
  readonly canvas: HTMLCanvasElement;
  readonly camera: OrbitCamera;
  readonly stats: DriftStats = { frames: 0, reduces: 0, points: 0, round: 0 };
  #context: GPUCanvasContext;
  #format: GPUTextureFormat;
  #line: GPURenderPipeline;
  #point: GPURenderPipeline;
  #uniform: GPUBuffer;
  #lineBind: GPUBindGroup;
  #pointBind: GPUBindGroup;
  #lineBuf: GPUBuffer;
  #pointBuf: GPUBuffer;
  #msaa?: GPUTexture;
  #scene?: DriftScene;
  #projection?: RandomProjection;
  #dirty = true;
  #lastDraw = -Infinity;
  #raf = 0;
  #resize: ResizeObserver;
  #destroyed = false;
  /** Called when the device is lost other than by {@link destroy} (the view then stays blank). */
  onLost: (why: string) => void = (why) => console.warn(`drift view: device lost (${why})`);

  /**
   * A view on `canvas` with a device of its own.
   * @throws {Error} When the browser has no WebGPU or no adapter.
   */
  static async create(canvas: HTMLCanvasElement): Promise<DriftView> {
    const adapter = await navigator.gpu?.requestAdapter();
    if (!adapter) throw new Error("drift view: no WebGPU adapter");
    const device = await adapter.requestDevice({ label: "demo/drift-view" });
    return new DriftView(canvas, device);
  }

  private constructor(canvas: HTMLCanvasElement, device: GPUDevice) {
    this.device = device;
    this.canvas = canvas;
    this.#context = canvas.getContext("webgpu")!;
    this.#format = navigator.gpu.getPreferredCanvasFormat();
    this.#context.configure({ device, format: this.#format, alphaMode: "opaque" });
    const module = device.createShaderModule({ label: "demo/drift.wgsl", code: SHADER });
    const blend: GPUBlendState = {
      color: { srcFactor: "one", dstFactor: "one-minus-src-alpha" },
      alpha: { srcFactor: "one", dstFactor: "one-minus-src-alpha" },
    };
    const targets = [{ format: this.#format, blend }];
    this.#line = device.createRenderPipeline({
      label: "demo/drift/lines",
      layout: "auto",
      vertex: {
        module,
        entryPoint: "line_vs",
        buffers: [{
          arrayStride: LINE_FLOATS * 4,
          attributes: [{ shaderLocation: 0, offset: 0, format: "float32x3" }, {
            shaderLocation: 1,
            offset: 12,
            format: "float32x4",
          }],
        }],
      },
      fragment: { module, entryPoint: "line_fs", targets },
      primitive: { topology: "line-list" },
      multisample: { count: SAMPLES },
    });
    this.#point = device.createRenderPipeline({
      label: "demo/drift/points",
      layout: "auto",
      vertex: {
        module,
        entryPoint: "point_vs",
        buffers: [{
          arrayStride: POINT_FLOATS * 4,
          stepMode: "instance",
          attributes: [
            { shaderLocation: 0, offset: 0, format: "float32x3" },
            { shaderLocation: 1, offset: 12, format: "float32x4" },
            { shaderLocation: 2, offset: 28, format: "float32" },
          ],
        }],
      },
      fragment: { module, entryPoint: "point_fs", targets },
      primitive: { topology: "triangle-list" },
      multisample: { count: SAMPLES },
    });
    this.#uniform = device.createBuffer({
      label: "demo/drift/camera",
      size: CAMERA_BYTES,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    // Both pipelines read only binding 0, but each "auto" layout is its own object.
    this.#lineBind = this.#bindFor(this.#line);
    this.#pointBind = this.#bindFor(this.#point);
    this.#lineBuf = this.#vertexBuffer("lines", 4096 * LINE_FLOATS * 4);
    this.#pointBuf = this.#vertexBuffer("points", 512 * POINT_FLOATS * 4);
    this.camera = new OrbitCamera(canvas);
    this.camera.onChange = () => (this.#dirty = true);
    this.#resize = new ResizeObserver(() => this.#fitCanvas());
    this.#resize.observe(canvas);
    this.#fitCanvas();
    device.lost.then((info) => {
      if (!this.#destroyed) this.onLost(`${info.reason}: ${info.message}`);
    });
    const loop = (now: number) => {
      this.#raf = requestAnimationFrame(loop);
      this.#tick(now);
    };
    this.#raf = requestAnimationFrame(loop);
  }

  #bindFor(p: GPURenderPipeline): GPUBindGroup {
    return this.device.createBindGroup({
      label: "demo/drift/camera",
      layout: p.getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: this.#uniform } }],
    });
  }

  #vertexBuffer(what: string, bytes: number): GPUBuffer {
    return this.device.createBuffer({
      label: `demo/drift/${what}`,
      size: bytes,
      usage: GPUBufferUsage.VERTEX | GPUBufferUsage.COPY_DST,
    });
  }

  #fitCanvas(): void {
    const ratio = Math.min(globalThis.devicePixelRatio || 1, 2);
    const w = Math.max(1, Math.round(this.canvas.clientWidth * ratio));
    const h = Math.max(1, Math.round(this.canvas.clientHeight * ratio));
    if (w === this.canvas.width && h === this.canvas.height) return;
    this.canvas.width = w;
    this.canvas.height = h;
    this.#dirty = true;
  }

  /**
   * Start a new run's view.
   * @param world Ranks.
   * @param alpha How far ranks move to the consensus at adoption (1, or EASGD's α in cpu-async).
   */
  reset(world: number, alpha: number): void {
    this.#scene = new DriftScene(world, alpha);
    this.stats.reduces = 0;
    this.stats.round = 0;
    this.#dirty = true;
  }

  /** The run ended: zoom out to its whole trail. */
  finish(): void {
    if (this.#scene) this.#scene.overview = true;
    this.#dirty = true;
  }

  /** One reduce: each rank's flat parameters before averaging (null when absent) and the consensus. */
  addFrames(round: number, perRank: (Float32Array | null)[], consensus: Float32Array): void {
    if (!this.#scene) return;
    if (this.#projection?.n !== consensus.length) this.#projection = new RandomProjection(consensus.length);
    const p = this.#projection;
    const pre: (Vec3 | null)[] = perRank.map((v) => (v ? p.project(v) : null));
    this.#scene.push(round, pre, p.project(consensus));
    this.stats.reduces = this.#scene.reduces;
    this.#dirty = true;
  }

  #tick(now: number): void {
    const turned = this.camera.tick(now);
    const animating = this.#scene?.busy ?? false;
    if (!this.#dirty && !animating && !(turned && now - this.#lastDraw >= 1000 / IDLE_FPS)) return;
    this.#dirty = false;
    this.#lastDraw = now;
    const { width, height } = this.canvas;
    if (!this.#msaa || this.#msaa.width !== width || this.#msaa.height !== height) {
      this.#msaa?.destroy();
      this.#msaa = this.#msaaTexture(width, height);
    }
    this.#draw(now, this.#context.getCurrentTexture(), this.#msaa, true);
  }

  #msaaTexture(width: number, height: number): GPUTexture {
    return this.device.createTexture({
      label: "demo/drift/msaa",
      size: [width, height],
      format: this.#format,
      sampleCount: SAMPLES,
      usage: GPUTextureUsage.RENDER_ATTACHMENT,
    });
  }

  /** Record and submit one frame into `target` (through the multisampled `msaa`). */
  #draw(now: number, target: GPUTexture, msaa: GPUTexture, withCube: boolean): void {
    const frame = this.#scene?.frame(now) ?? { points: [], lines: [], round: 0 };
    const lines = withCube ? [...cubeLines(), ...frame.lines] : frame.lines;
    const lineData = new Float32Array(lines.length * 2 * LINE_FLOATS);
    lines.forEach((l, i) => {
      lineData.set([...l.a, ...l.ca], (2 * i) * LINE_FLOATS);
      lineData.set([...l.b, ...l.cb], (2 * i + 1) * LINE_FLOATS);
    });
    const pointData = new Float32Array(frame.points.length * POINT_FLOATS);
    frame.points.forEach((p, i) => pointData.set([...p.pos, ...p.color, p.size], i * POINT_FLOATS));
    if (lineData.byteLength > this.#lineBuf.size) {
      this.#lineBuf.destroy();
      this.#lineBuf = this.#vertexBuffer("lines", lineData.byteLength * 2);
    }
    if (pointData.byteLength > this.#pointBuf.size) {
      this.#pointBuf.destroy();
      this.#pointBuf = this.#vertexBuffer("points", pointData.byteLength * 2);
    }
    const q = this.device.queue;
    const cam = new Float32Array(CAMERA_BYTES / 4);
    cam.set(this.camera.viewProj(target.width / target.height), 0);
    cam.set([target.width, target.height, Math.min(globalThis.devicePixelRatio || 1, 2), 0], 16);
    q.writeBuffer(this.#uniform, 0, cam);
    if (lineData.length) q.writeBuffer(this.#lineBuf, 0, lineData);
    if (pointData.length) q.writeBuffer(this.#pointBuf, 0, pointData);
    const enc = this.device.createCommandEncoder({ label: "demo/drift/frame" });
    const pass = enc.beginRenderPass({
      label: "demo/drift/frame",
      colorAttachments: [{
        view: msaa.createView(),
        resolveTarget: target.createView(),
        clearValue: CLEAR,
        loadOp: "clear",
        storeOp: "discard",
      }],
    });
    if (lines.length) {
      pass.setPipeline(this.#line);
      pass.setBindGroup(0, this.#lineBind);
      pass.setVertexBuffer(0, this.#lineBuf);
      pass.draw(lines.length * 2);
    }
    if (frame.points.length) {
      pass.setPipeline(this.#point);
      pass.setBindGroup(0, this.#pointBind);
      pass.setVertexBuffer(0, this.#pointBuf);
      pass.draw(6, frame.points.length);
    }
    pass.end();
    q.submit([enc.finish()]);
    this.stats.frames++;
    this.stats.points = frame.points.length;
    this.stats.round = frame.round;
  }

  /**
   * Draw the current scene, without the reference cube, into an offscreen texture and
   * count the pixels that differ from the background: 0 before the first reduce, and a
   * proof for tests that the render pipeline drew the ranks after it.
   */
  async probe(size = 256): Promise<number> {
    const tex = this.device.createTexture({
      label: "demo/drift/probe",
      size: [size, size],
      format: this.#format,
      usage: GPUTextureUsage.RENDER_ATTACHMENT | GPUTextureUsage.COPY_SRC,
    });
    const msaa = this.#msaaTexture(size, size);
    this.#draw(performance.now(), tex, msaa, false);
    const buf = this.device.createBuffer({
      label: "demo/drift/probe-read",
      size: size * size * 4,
      usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ,
    });
    const enc = this.device.createCommandEncoder({ label: "demo/drift/probe" });
    enc.copyTextureToBuffer({ texture: tex }, { buffer: buf, bytesPerRow: size * 4 }, [size, size]);
    this.device.queue.submit([enc.finish()]);
    await buf.mapAsync(GPUMapMode.READ);
    const px = new Uint8Array(buf.getMappedRange());
    // The background is a near-grey, so channel order (bgra or rgba) barely matters; compare both.
    const bg = [CLEAR.r, CLEAR.g, CLEAR.b].map((v) => Math.round(v * 255));
    let inked = 0;
    for (let i = 0; i < px.length; i += 4) {
      const rgba = Math.abs(px[i] - bg[0]) + Math.abs(px[i + 1] - bg[1]) + Math.abs(px[i + 2] - bg[2]);
      const bgra = Math.abs(px[i] - bg[2]) + Math.abs(px[i + 1] - bg[1]) + Math.abs(px[i + 2] - bg[0]);
      if (Math.min(rgba, bgra) > 24) inked++;
    }
    buf.unmap();
    buf.destroy();
    msaa.destroy();
    tex.destroy();
    this.#dirty = true;
    return inked;
  }

  destroy(): void {
    this.#destroyed = true;
    cancelAnimationFrame(this.#raf);
    this.#resize.disconnect();
    this.device.destroy();
  }
}
