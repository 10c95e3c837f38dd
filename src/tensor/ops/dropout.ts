import { Device, type Kernel, kernel, launch, type Layout, layout } from "../../gpu/mod.ts";
import { nextSeed } from "../creation.ts";
import type { OpDef } from "../op.ts";
import { Tensor } from "../tensor.ts";

/** Mirrors `struct Params` in shaders/dropout.wgsl. */
export const DROPOUT_PARAMS: Layout<{
  n: "u32"; seed: "u32"; p: "f32"; scale: "f32";
}> = layout("dropout", "Params", { n: "u32", seed: "u32", p: "f32", scale: "f32" });
/** Storage bindings of shaders/dropout.wgsl. */
export const DROPOUT: Kernel<typeof DROPOUT_PARAMS, {
  x: [number, "read"]; y: [number, "read_write"]; dy: [number, "read"]; dx: [number, "read_write"];
}> = kernel(DROPOUT_PARAMS, {
  x: [1, "read"],
  y: [2, "read_write"],
  dy: [3, "read"],
  dx: [4, "read_write"],
});

/** Options of {@link dropout}. */
export interface DropoutOptions {
  /** Drop when true; identity when false (eval). */
  training: boolean;
  /** Mask seed (a u32); default the next seed of the global stream (`manualSeed`). */
  seed?: number;
}

/** Attributes of {@link dropoutOp}: the seed is fixed so the backward regenerates the same mask. */
export interface DropoutAttrs {
  /** Probability of zeroing each element, in [0, 1); kept ones are scaled by 1/(1-p) (PyTorch's `p`). */
  p: number;
  /** Drop when true; identity when false (eval), as a module's `training`. */
  training: boolean;
  /** Mask seed, a u32: one seed and shape give one mask (the backward regenerates it). */
  seed: number;
}

function checkP(p: number): void {
  if (typeof p !== "number") throw new TypeError(`dropout: p must be a number, got ${typeof p}`);
  if (!(p >= 0 && p < 1)) throw new RangeError(`dropout: p must be in [0, 1), got ${p}`);
}

function checkSeed(seed: number): void {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new RangeError(`dropout: seed must be an integer in [0, 2^32), got ${seed}`);
  }
}

/**
 * Check dropout's attributes as its forward does (a fused epilogue applying the mask calls it).
 * @throws {TypeError} When p is not a number.
 * @throws {RangeError} When p is outside [0, 1) or the seed is not a u32.
 */
export function checkDropout(attrs: DropoutAttrs): void {
  checkP(attrs.p);
  checkSeed(attrs.seed);
}

/** Params of the mask for `n` elements. */
const maskParams = (n: number, a: DropoutAttrs) => ({ n, seed: a.seed, p: a.p, scale: 1 / (1 - a.p) });

/** Identity (the input itself, no GPU work) in eval or when p = 0. */
const passes = (attrs: DropoutAttrs) => !attrs.training || attrs.p === 0;

/**
 * Inverted dropout with a seeded counter-based mask (element i kept when u(seed, i) >= p,
 * the same uniforms as `rand(shape, { seed })`), kept values scaled by 1/(1-p). The
 * backward applies the same mask, regenerated from `attrs.seed`; nothing is saved.
 */
export const dropoutOp: OpDef<DropoutAttrs> = {
  name: "dropout",
  forward([x], attrs) {
    checkP(attrs.p);
    checkSeed(attrs.seed);
    if (x.dtype !== "f32") throw new TypeError(`dropout: expects an f32 tensor, got ${x.dtype}`);
    if (passes(attrs)) return { output: x };
    const y = Tensor.empty(x.shape, { device: x.device }, "dropout");
    launch(x.device, DROPOUT, {
      entry: "dropout_forward",
      params: maskParams(x.numel, attrs),
      io: { x, y },
      groups: Device.grid(x.numel),
    });
    return { output: y };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null];
    if (passes(ctx.attrs)) return [dy];
    const dx = Tensor.empty(dy.shape, { device: dy.device }, "dropout.backward");
    launch(dy.device, DROPOUT, {
      entry: "dropout_backward",
      params: maskParams(dy.numel, ctx.attrs),
      io: { dy, dx },
      groups: Device.grid(dy.numel),
    });
    return [dx];
  },
};

/**
 * Dropout as `torch.nn.functional.dropout`: in training, zero each element with
 * probability `p` and scale the rest by 1/(1-p); in eval, return `x` itself.
 * The same seed gives the same mask on every device.
 * @param p Drop probability in [0, 1).
 * @throws {RangeError} When `p` is outside [0, 1) or the seed is not a u32.
 * @example
 * ```ts
 * import { Device } from "../../gpu/mod.ts";
 * import { ones } from "../creation.ts";
 * import { dropout } from "./dropout.ts";
 * await Device.request();
 * const y = dropout(ones([8]), 0.5, { training: true, seed: 42 }); // zeros and 2s
 * console.log(await y.toArray());
 * ```
 */
export function dropout(x: Tensor, p: number, options: DropoutOptions): Tensor {
  checkP(p);
  // Only a dropout that draws a mask advances the global stream (eval does not, as in PyTorch).
  const seed = options.seed ?? (options.training && p > 0 ? nextSeed() : 0);
  return dropoutOp.forward([x], { p, training: options.training, seed }).output;
}
