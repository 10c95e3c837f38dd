/**
 * What a product is, before any launch: the layout of shaders/matmul.wgsl, the shape rules of
 * matmul and linear, the batch walk (`matmulPlan`), the tiling class and the activations a
 * product's store can apply. Pure apart from the kernel declaration; gemm.ts launches the plan.
 */
import { type Kernel, kernel, type Layout, layout, tuning } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { broadcastShapes, fmt, numel, type Shape, stridesOf } from "../shape.ts";
import { geluOp, geluTanhOp, reluOp, sigmoidOp, siluOp, tanhOp, type UnaryAttrs } from "./unary.ts";

/** Mirrors `struct Params` in shaders/matmul.wgsl. */
export const MATMUL_PARAMS: Layout<{
  m: "u32"; n: "u32"; k: "u32"; d1: "u32"; d2: "u32"; sa0: "u32"; sa1: "u32"; sa2: "u32"; sb0: "u32";
  sb1: "u32"; sb2: "u32"; zo: "u32"; seed: "u32"; drop: "f32"; drop_scale: "f32";
}> = layout("matmul", "Params", {
  m: "u32",
  n: "u32",
  k: "u32",
  d1: "u32",
  d2: "u32",
  sa0: "u32",
  sa1: "u32",
  sa2: "u32",
  sb0: "u32",
  sb1: "u32",
  sb2: "u32",
  zo: "u32",
  seed: "u32",
  drop: "f32",
  drop_scale: "f32",
});
/** Storage bindings of shaders/matmul.wgsl (c4: C as vec4 rows, for the vec4 entries). */
export const MATMUL: Kernel<typeof MATMUL_PARAMS, {
  a: [number, "read"]; b: [number, "read"]; c: [number, "read_write"]; c4: [number, "read_write"];
  bias: [number, "read"]; mask: [number, "read"]; rowsum: [number, "read_write"];
}> = kernel(MATMUL_PARAMS, {
  a: [1, "read"],
  b: [2, "read"],
  c: [3, "read_write"],
  c4: [4, "read_write"],
  bias: [5, "read"],
  mask: [6, "read"],
  rowsum: [7, "read_write"],
}, { zo: 0, seed: 0, drop: 0, drop_scale: 1 });


const describe = (a: Shape, b: Shape, transA: boolean, transB: boolean) =>
  `a=${fmt(a)}${transA ? "ᵀ" : ""} b=${fmt(b)}${transB ? "ᵀ" : ""}`;

/**
 * Output shape of op(A)·op(B): [..., m, k]·[..., k, n] (the last two dims swapped when
 * transposed) with the batch dims broadcast as NumPy does.
 * @throws {TypeError} When an operand has fewer than 2 dims.
 * @throws {RangeError} When the inner dims differ or the batch dims do not broadcast (both shapes shown).
 * @example
 * ```ts
 * import { matmulShape } from "./matmul_plan.ts";
 * matmulShape([4, 1, 7, 5], [3, 5, 9]); // [4, 3, 7, 9]
 * matmulShape([64, 784], [64, 256], true); // [784, 256]
 * ```
 */
export function matmulShape(a: Shape, b: Shape, transA = false, transB = false): number[] {
  if (a.length < 2 || b.length < 2) {
    throw new TypeError(`matmul: operands need at least 2 dims, got ${describe(a, b, transA, transB)}`);
  }
  const [m, ka] = transA ? [a[a.length - 1], a[a.length - 2]] : [a[a.length - 2], a[a.length - 1]];
  const [kb, n] = transB ? [b[b.length - 1], b[b.length - 2]] : [b[b.length - 2], b[b.length - 1]];
  if (ka !== kb) {
    throw new RangeError(
      `matmul: inner dims differ (${ka} vs ${kb}), need [..,m,k]·[..,k,n], got ${describe(a, b, transA, transB)}`,
    );
  }
  let batch: number[];
  try {
    batch = broadcastShapes(a.slice(0, -2), b.slice(0, -2), "matmul");
  } catch {
    throw new RangeError(`matmul: batch dims do not broadcast, got ${describe(a, b, transA, transB)}`);
  }
  return [...batch, m, n];
}

/**
 * Output shape of `linear(x, w, b)`: x [..., in], w [out, in], b [out] → [..., out].
 * @throws {TypeError} When x has no dims, w is not 2-D or b is not 1-D.
 * @throws {RangeError} When the sizes disagree (all shapes shown).
 */
export function linearShape(x: Shape, w: Shape, b?: Shape): number[] {
  const got = `x=${fmt(x)} w=${fmt(w)}${b ? ` b=${fmt(b)}` : ""}`;
  if (x.length < 1 || w.length !== 2 || (b && b.length !== 1)) {
    throw new TypeError(`linear: need x [..,in], w [out,in], b [out], got ${got}`);
  }
  if (x[x.length - 1] !== w[1] || (b && b[0] !== w[0])) {
    throw new RangeError(`linear: need x [..,in], w [out,in], b [out] with matching in and out, got ${got}`);
  }
  return [...x.slice(0, -1), w[0]];
}

/** How one batched product walks memory (pure; unit-tested). */
export interface MatmulPlan {
  /** Rows of C and of op(A) (A's batch rows folded in when B has no batch). */
  m: number;
  /** Columns of C and of op(B). */
  n: number;
  /** Inner dim: columns of op(A), rows of op(B). */
  k: number;
  /** Output shape, batch dims included. */
  out: number[];
  /** Output matrices (the grid's z). */
  batch: number;
  /**
   * Params of the batch walk, z = (i0·d1 + i1)·d2 + i2 over the three merged batch dims:
   * d1 is the middle one's size (1 when absent).
   */
  d1: number;
  /** Size of the innermost merged batch dim (1 when absent). */
  d2: number;
  /** Element strides of A along the three merged batch dims (0 where A broadcasts). */
  sa: [number, number, number];
  /** Element strides of B along the three merged batch dims (0 where B broadcasts). */
  sb: [number, number, number];
}

/**
 * Plan op(A)·op(B) for contiguous A and B: broadcast batch dims (stride 0 in the operand
 * that broadcasts) merged into at most 3 groups. When B has no batch and A's batch is
 * the output's, A's rows are folded into m (one matrix, better tiles).
 * @throws {RangeError} As {@link matmulShape}, or when the batch dims need more than 3 groups.
 */
export function matmulPlan(a: Shape, b: Shape, transA = false, transB = false): MatmulPlan {
  const out = matmulShape(a, b, transA, transB);
  const m = out[out.length - 2], n = out[out.length - 1];
  const k = transA ? a[a.length - 2] : a[a.length - 1];
  const bo = out.slice(0, -2);
  const stridesIn = (s: Shape) => {
    const st = stridesOf(s).slice(0, -2), bs = s.slice(0, -2);
    return bo.map((_, i) => {
      const j = i - (bo.length - bs.length);
      return j >= 0 && bs[j] !== 1 ? st[j] : 0;
    });
  };
  const sa = stridesIn(a), sb = stridesIn(b);
  // Drop size-1 dims, then merge neighbours that step through both operands as one dim.
  const dims: { size: number; sa: number; sb: number }[] = [];
  bo.forEach((size, i) => {
    if (size === 1) return;
    const last = dims[dims.length - 1];
    if (last && last.sa === sa[i] * size && last.sb === sb[i] * size) {
      last.size *= size;
      last.sa = sa[i];
      last.sb = sb[i];
    } else dims.push({ size, sa: sa[i], sb: sb[i] });
  });
  const batch = numel(bo);
  if (dims.length === 1 && dims[0].sb === 0 && dims[0].sa === m * k && !transA) {
    return { m: m * batch, n, k, out, batch: 1, d1: 1, d2: 1, sa: [0, 0, 0], sb: [0, 0, 0] };
  }
  if (dims.length > 3) {
    throw new RangeError(
      `matmul: batch dims of ${
        describe(a, b, transA, transB)
      } need ${dims.length} separate strides, at most 3 are supported`,
    );
  }
  while (dims.length < 3) dims.unshift({ size: 1, sa: 0, sb: 0 });
  return {
    m,
    n,
    k,
    out,
    batch,
    d1: dims[1].size,
    d2: dims[2].size,
    sa: [dims[0].sa, dims[1].sa, dims[2].sa],
    sb: [dims[0].sb, dims[1].sb, dims[2].sb],
  };
}

/**
 * The tiling class of C = op(A)·op(B) with C [m, n] (tuning.ts `MatmulClass`): Aᵀ·B is the
 * weight gradient's product (`wgrad`), else m ≤ MATMUL_SKINNY_M is `skinny`, else none.
 * @example
 * ```ts
 * import { matmulClass } from "./matmul_plan.ts";
 * if (matmulClass(256, true, false) !== "wgrad" || matmulClass(64, false, true) !== "skinny") throw new Error("rule");
 * if (matmulClass(1024, false, false) !== undefined || matmulClass(10, true, true) !== "skinny") throw new Error("rule");
 * ```
 */
export function matmulClass(m: number, transA: boolean, transB: boolean): tuning.MatmulClass | undefined {
  if (transA && !transB) return "wgrad";
  if (m <= tuning.MATMUL_SKINNY_M) return "skinny";
  return undefined;
}

/** An activation a Linear's store can apply: relu, gelu (exact), geluTanh, tanh, sigmoid or silu. */
export type Activation = "relu" | "gelu" | "geluTanh" | "tanh" | "sigmoid" | "silu";

/**
 * The activations a product's store can apply, by name: their kind in shaders/lib/act.wgsl
 * (`act_forward` / `act_backward`, which the unary op of the same name runs too), what their
 * backward reads (the output y or the input x) and that unary op.
 */
export const ACTIVATIONS = {
  relu: { kind: 1, saves: "output", op: reluOp },
  gelu: { kind: 2, saves: "input", op: geluOp },
  geluTanh: { kind: 3, saves: "input", op: geluTanhOp },
  tanh: { kind: 4, saves: "output", op: tanhOp },
  sigmoid: { kind: 5, saves: "output", op: sigmoidOp },
  silu: { kind: 6, saves: "input", op: siluOp },
} as const satisfies Record<Activation, { kind: number; saves: "input" | "output"; op: OpDef<UnaryAttrs> }>;
