/**
 * The drawing pad: thick white strokes on black with mouse, pen or touch (Pointer Events),
 * a preview of the 28×28 input the model sees, and `onInput` after each stroke.
 */
import { mnistInput, SIDE } from "./mnist_input.ts";

/** Stroke width as a share of the pad's side (MNIST strokes are ~2.5 of 28 pixels). */
const STROKE = 0.085;

export class DigitPad {
  readonly canvas: HTMLCanvasElement;
  readonly preview: HTMLCanvasElement;
  #g: CanvasRenderingContext2D;
  #last?: { x: number; y: number };
  #pointer?: number;
  /** Called with the 28×28 input (or null when the pad is empty) after each stroke. */
  onInput: (x: Float32Array | null) => void = () => {};

  constructor(canvas: HTMLCanvasElement, preview: HTMLCanvasElement) {
    this.canvas = canvas;
    this.preview = preview;
    this.#g = canvas.getContext("2d", { willReadFrequently: true })!;
    this.clear();
    canvas.addEventListener("pointerdown", (e) => {
      e.preventDefault();
      this.#pointer = e.pointerId;
      canvas.setPointerCapture(e.pointerId);
      this.#last = this.#at(e);
      this.#segment(this.#last, this.#last);
    });
    canvas.addEventListener("pointermove", (e) => {
      if (this.#pointer !== e.pointerId || !this.#last) return;
      // Coalesced events keep fast strokes smooth.
      for (const ev of e.getCoalescedEvents?.() ?? [e]) {
        const p = this.#at(ev);
        this.#segment(this.#last, p);
        this.#last = p;
      }
    });
    const end = (e: PointerEvent) => {
      if (this.#pointer !== e.pointerId) return;
      this.#pointer = undefined;
      this.#last = undefined;
      this.#changed();
    };
    canvas.addEventListener("pointerup", end);
    canvas.addEventListener("pointercancel", end);
  }

  #at(e: PointerEvent): { x: number; y: number } {
    const r = this.canvas.getBoundingClientRect();
    return {
      x: ((e.clientX - r.left) / r.width) * this.canvas.width,
      y: ((e.clientY - r.top) / r.height) * this.canvas.height,
    };
  }

  #segment(a: { x: number; y: number }, b: { x: number; y: number }): void {
    const g = this.#g;
    g.strokeStyle = "#fff";
    g.lineCap = "round";
    g.lineJoin = "round";
    g.lineWidth = this.canvas.width * STROKE;
    g.beginPath();
    g.moveTo(a.x, a.y);
    g.lineTo(b.x + 0.01, b.y);
    g.stroke();
  }

  /** Blank the pad. */
  clear(): void {
    this.#g.fillStyle = "#000";
    this.#g.fillRect(0, 0, this.canvas.width, this.canvas.height);
    this.#show(null);
  }

  /** Draw a 28×28 image (values in [0, 1]) onto the pad, scaled up. */
  showImage(image: Float32Array): void {
    const small = new OffscreenCanvas(SIDE, SIDE);
    const sg = small.getContext("2d")!;
    const data = sg.createImageData(SIDE, SIDE);
    for (let i = 0; i < SIDE * SIDE; i++) {
      const v = Math.round(Math.min(1, Math.max(0, image[i])) * 255);
      data.data.set([v, v, v, 255], i * 4);
    }
    sg.putImageData(data, 0, 0);
    this.#g.imageSmoothingEnabled = true;
    this.#g.drawImage(small, 0, 0, this.canvas.width, this.canvas.height);
    this.#changed();
  }

  /** The 28×28 input of what is drawn, or null when the pad is empty. */
  input(): Float32Array | null {
    const { width, height } = this.canvas;
    const px = this.#g.getImageData(0, 0, width, height).data;
    const gray = new Float32Array(width * height);
    for (let i = 0; i < gray.length; i++) gray[i] = px[i * 4] / 255;
    return mnistInput(gray, width, height);
  }

  #changed(): void {
    const x = this.input();
    this.#show(x);
    this.onInput(x);
  }

  #show(x: Float32Array | null): void {
    const g = this.preview.getContext("2d")!;
    const data = g.createImageData(SIDE, SIDE);
    for (let i = 0; i < SIDE * SIDE; i++) {
      const v = Math.round((x?.[i] ?? 0) * 255);
      data.data.set([v, v, v, 255], i * 4);
    }
    g.putImageData(data, 0, 0);
  }
}
