import { Device, type Kernel, kernel, launch, type Layout, layout } from "../../gpu/mod.ts";
import { fromArray } from "../creation.ts";
import type { OpDef } from "../op.ts";
import { fmt } from "../shape.ts";
import { Tensor } from "../tensor.ts";

/** Mirrors `struct Params` in shaders/rope.wgsl. */
export const ROPE_PARAMS: Layout<{
  pairs: "u32"; t: "u32"; d: "u32"; offset: "u32"; interleaved: "u32";
}> = layout("rope", "Params", {
  pairs: "u32",
  t: "u32",
  d: "u32",
  offset: "u32",
  interleaved: "u32",
});
/** Storage bindings of shaders/rope.wgsl. */
export const ROPE: Kernel<typeof ROPE_PARAMS, {
  x: [number, "read"]; tab: [number, "read"]; y: [number, "read_write"];
}> = kernel(ROPE_PARAMS, { x: [1, "read"], tab: [2, "read"], y: [3, "read_write"] });

/** Options of {@link rotaryEmbedding}. */
export interface RopeOptions {
  /** Frequency base: pair i turns by pos · base^(-2i/D). Default 10000. */
  base?: number;
  /** Position of the first row along T (a decoding step's cache length). Default 0. */
  offset?: number;
  /** Rotate pairs (2i, 2i+1) (GPT-J) instead of (i, i + D/2) (GPT-NeoX / LLaMA, the default). */
  interleaved?: boolean;
}

/** Attributes of {@link ropeOp}; inputs are [x, table] with the table from {@link ropeTable}. */
export interface RopeAttrs {
  /** Position of the first row along T (a decoding step's cache length); the table must cover offset + T. */
  offset: number;
  /** Rotate pairs (2i, 2i+1) (GPT-J) when true, (i, i + D/2) (GPT-NeoX / LLaMA) when false. */
  interleaved: boolean;
}

const tables = new WeakMap<Device, Map<string, Tensor>>();

/**
 * The kept cos/sin table [positions, D/2, 2] of `base` for at least `positions` positions,
 * computed in float64 on the host and cached per device, D and base. A call needing more
 * positions replaces it by one at least twice as long; the old one is not disposed, since a
 * recorded graph may still read it in its backward (a few small tables at most).
 */
export function ropeTable(device: Device, positions: number, d: number, base: number): Tensor {
  let m = tables.get(device);
  if (!m) tables.set(device, m = new Map());
  const key = `${d}/${base}`;
  const have = m.get(key);
  if (have && !have.released && have.shape[0] >= positions) return have;
  const half = d / 2, n = Math.max(positions, 2 * (have?.shape[0] ?? 0));
  const tab = new Float32Array(n * half * 2);
  for (let pos = 0; pos < n; pos++) {
    for (let i = 0; i < half; i++) {
      const theta = pos * Math.pow(base, -2 * i / d);
      tab[(pos * half + i) * 2] = Math.cos(theta);
      tab[(pos * half + i) * 2 + 1] = Math.sin(theta);
    }
  }
  const t = fromArray(tab, [n, half, 2], { device }).keep();
  m.set(key, t);
  return t;
}

function ropeDims(shape: readonly number[], op: string): { t: number; d: number } {
  if (shape.length < 2) throw new TypeError(`${op}: x must be [..., T, D], got ${fmt(shape)}`);
  const t = shape[shape.length - 2], d = shape[shape.length - 1];
  if (d % 2 !== 0) throw new RangeError(`${op}: the last dim D must be even, got ${fmt(shape)}`);
  return { t, d };
}

/** Rotate x (or dy) by the table into y (or dx): one thread per (even, odd) pair. */
function rotate(entry: string, x: Tensor, tab: Tensor, y: Tensor, attrs: RopeAttrs): void {
  const { t, d } = ropeDims(x.shape, "rotaryEmbedding");
  const pairs = x.numel / 2;
  const params = { pairs, t, d, offset: attrs.offset, interleaved: attrs.interleaved ? 1 : 0 };
  launch(x.device, ROPE, { entry, params, io: { x, tab, y }, groups: Device.grid(pairs) });
}

/** Rotary embedding of x [..., T, D] by a cos/sin table; backward rotates the gradient back. */
export const ropeOp: OpDef<RopeAttrs> = {
  name: "rotaryEmbedding",
  forward([x, tab], attrs) {
    const op = "rotaryEmbedding";
    if (x.dtype !== "f32") throw new TypeError(`${op}: expects an f32 tensor, got ${x.dtype}`);
    const { t, d } = ropeDims(x.shape, op);
    if (tab.ndim !== 3 || tab.shape[1] !== d / 2 || tab.shape[2] !== 2 || tab.shape[0] < attrs.offset + t) {
      throw new RangeError(
        `${op}: table ${fmt(tab.shape)} must be [>= ${attrs.offset + t}, ${d / 2}, 2] for x ${fmt(x.shape)}`,
      );
    }
    const y = Tensor.empty(x.shape, { device: x.device }, op);
    rotate("rope_forward", x, tab, y, attrs);
    return { output: y, saved: [tab] };
  },
  backward(dy, ctx) {
    if (!ctx.needs[0]) return [null, null];
    const dx = Tensor.empty(dy.shape, { device: dy.device }, "rotaryEmbedding.backward");
    rotate("rope_backward", dy, ctx.saved[0], dx, ctx.attrs);
    return [dx, null];
  },
};

/** Checked options with defaults (pure). */
export function ropeAttrs(options: RopeOptions): { base: number; offset: number; interleaved: boolean } {
  const base = options.base ?? 10000, offset = options.offset ?? 0;
  if (!(base > 1) || !Number.isFinite(base)) {
    throw new RangeError(`rotaryEmbedding: base must be a finite number > 1, got ${base}`);
  }
  if (!Number.isInteger(offset) || offset < 0) {
    throw new RangeError(`rotaryEmbedding: offset must be an integer >= 0, got ${offset}`);
  }
  return { base, offset, interleaved: options.interleaved ?? false };
}

/**
 * Rotary position embedding (RoPE, Su et al. 2021) of x [..., T, D]: the pair i of the row at
 * position p = offset + t turns by the angle p · base^(-2i/D). Apply it to q and k
 * ([B, H, T, D]) before attention. Pairs are (i, i + D/2) as GPT-NeoX and LLaMA, or (2i, 2i+1)
 * with `interleaved` (GPT-J).
 * @throws {TypeError} For a non-f32 x or one with fewer than 2 dims.
 * @throws {RangeError} For an odd D, base <= 1 or a negative or fractional offset.
 * @example
 * ```ts
 * import { Device } from "../../gpu/mod.ts";
 * import { randn } from "../creation.ts";
 * import { rotaryEmbedding } from "./rope.ts";
 * await Device.request();
 * const q = rotaryEmbedding(randn([1, 2, 5, 8]), { base: 10000 });
 * console.log(q.shape);
 * ```
 */
export function rotaryEmbedding(x: Tensor, options: RopeOptions = {}): Tensor {
  const { base, offset, interleaved } = ropeAttrs(options);
  const { t, d } = ropeDims(x.shape, "rotaryEmbedding");
  return ropeOp.forward([x, ropeTable(x.device, offset + t, d, base)], { offset, interleaved }).output;
}
