/**
 * The orbit camera of the drift view: drag (mouse, pen or one finger) to orbit, wheel or
 * pinch-free +/- keys to zoom, arrow keys to orbit from the keyboard; a slow turn while
 * nobody touches it (off under `prefers-reduced-motion`).
 */
import { mat4 } from "wgpu-matrix";

/** Radians per second of the idle turn. */
const IDLE_TURN = 0.25;
/** Radians per arrow-key press. */
const KEY_STEP = 0.12;
/** Idle turn resumes this long after the last interaction, ms. */
const IDLE_AFTER_MS = 4000;

export class OrbitCamera {
  yaw = 0.6;
  pitch = 0.35;
  distance = 3.6;
  #lastInput = -Infinity;
  #lastTick?: number;
  #drag?: { id: number; x: number; y: number };
  #autoTurn: boolean;
  /** Called when the view changed by input. */
  onChange: () => void = () => {};

  constructor(readonly element: HTMLElement) {
    this.#autoTurn = !globalThis.matchMedia?.("(prefers-reduced-motion: reduce)").matches;
    element.addEventListener("pointerdown", (e) => {
      this.#drag = { id: e.pointerId, x: e.clientX, y: e.clientY };
      element.setPointerCapture(e.pointerId);
      this.#touched();
    });
    element.addEventListener("pointermove", (e) => {
      const d = this.#drag;
      if (!d || d.id !== e.pointerId) return;
      this.orbit((e.clientX - d.x) * 0.01, (e.clientY - d.y) * 0.01);
      d.x = e.clientX;
      d.y = e.clientY;
    });
    const end = (e: PointerEvent) => {
      if (this.#drag?.id === e.pointerId) this.#drag = undefined;
    };
    element.addEventListener("pointerup", end);
    element.addEventListener("pointercancel", end);
    element.addEventListener("wheel", (e) => {
      e.preventDefault();
      this.zoom(Math.exp(e.deltaY * 0.001));
    }, { passive: false });
    element.addEventListener("keydown", (e) => {
      const act: Record<string, () => void> = {
        ArrowLeft: () => this.orbit(-KEY_STEP, 0),
        ArrowRight: () => this.orbit(KEY_STEP, 0),
        ArrowUp: () => this.orbit(0, -KEY_STEP),
        ArrowDown: () => this.orbit(0, KEY_STEP),
        "+": () => this.zoom(0.9),
        "=": () => this.zoom(0.9),
        "-": () => this.zoom(1 / 0.9),
      };
      const f = act[e.key];
      if (!f) return;
      e.preventDefault();
      f();
    });
  }

  #touched(): void {
    this.#lastInput = performance.now();
  }

  /** Turn by `dyaw`, tilt by `dpitch` radians. */
  orbit(dyaw: number, dpitch: number): void {
    this.#touched();
    this.yaw += dyaw;
    this.pitch = Math.max(-1.45, Math.min(1.45, this.pitch + dpitch));
    this.onChange();
  }

  /** Multiply the distance by `factor` (clamped to a useful range). */
  zoom(factor: number): void {
    this.#touched();
    this.distance = Math.max(1.5, Math.min(12, this.distance * factor));
    this.onChange();
  }

  /** Advance the idle turn; true when the view moved. */
  tick(now: number): boolean {
    const dt = this.#lastTick === undefined ? 0 : (now - this.#lastTick) / 1000;
    this.#lastTick = now;
    if (!this.#autoTurn || this.#drag || now - this.#lastInput < IDLE_AFTER_MS) return false;
    this.yaw += IDLE_TURN * Math.min(dt, 0.1);
    return dt > 0;
  }

  /** Projection × view for a canvas of this aspect ratio. */
  viewProj(aspect: number): Float32Array {
    const eye = [
      this.distance * Math.cos(this.pitch) * Math.sin(this.yaw),
      this.distance * Math.sin(this.pitch),
      this.distance * Math.cos(this.pitch) * Math.cos(this.yaw),
    ];
    const proj = mat4.perspective(Math.PI / 4, aspect, 0.05, 100);
    const view = mat4.lookAt(eye, [0, 0, 0], [0, 1, 0]);
    return mat4.multiply(proj, view) as Float32Array;
  }
}
