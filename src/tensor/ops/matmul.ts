/**
 * Matrix products: `matmul` with batching and broadcasting, its backward, the fused
 * Linear (x·Wᵀ + b, with an optional activation epilogue) and the tiling plan the kernels use.
 *
 * Over ~400 lines on purpose: the forward, the two backward products and the fused entries
 * all dispatch through one tiling plan (register blocks, batch strides, the epilogue) that
 * must agree with shaders/matmul.wgsl; split apart, each would re-derive it.
 */
import { type Device, type Kernel, kernel, launch, type Layout, layout, tuning } from "../../gpu/mod.ts";
import type { OpContext, OpDef } from "../op.ts";
import { broadcastShapes, fmt, numel, type Shape, stridesOf } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { checkDropout, type DropoutAttrs, dropoutOp } from "./dropout.ts";
import { sumOp, sumTo } from "./reduce.ts";
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

/** Attributes of {@link matmulOp}: transpose the last two dims of A and/or B (read in place, no copy). */
export interface MatmulAttrs {
  /** Use A's last two dims transposed (PyTorch's `a.mT`); default false. */
  transA?: boolean;
  /** Use B's last two dims transposed (PyTorch's `b.mT`); default false. */
  transB?: boolean;
}

const describe = (a: Shape, b: Shape, transA: boolean, transB: boolean) =>
  `a=${fmt(a)}${transA ? "ᵀ" : ""} b=${fmt(b)}${transB ? "ᵀ" : ""}`;

/**
 * Output shape of op(A)·op(B): [..., m, k]·[..., k, n] (the last two dims swapped when
 * transposed) with the batch dims broadcast as NumPy does.
 * @throws {TypeError} When an operand has fewer than 2 dims.
 * @throws {RangeError} When the inner dims differ or the batch dims do not broadcast (both shapes shown).
 * @example
 * ```ts
 * import { matmulShape } from "./matmul.ts";
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

/** Floats of each workgroup tile of the shared kernel (`TILE` in shaders/matmul.wgsl). */
const SHARED_TILE = 2048;
const checked = new WeakSet<Device>();

/**
 * The tiling class of C = op(A)·op(B) with C [m, n] (tuning.ts `MatmulClass`): Aᵀ·B is the
 * weight gradient's product (`wgrad`), else m ≤ MATMUL_SKINNY_M is `skinny`, else none.
 * @example
 * ```ts
 * import { matmulClass } from "./matmul.ts";
 * if (matmulClass(256, true, false) !== "wgrad" || matmulClass(64, false, true) !== "skinny") throw new Error("rule");
 * if (matmulClass(1024, false, false) !== undefined || matmulClass(10, true, true) !== "skinny") throw new Error("rule");
 * ```
 */
export function matmulClass(m: number, transA: boolean, transB: boolean): tuning.MatmulClass | undefined {
  if (transA && !transB) return "wgrad";
  if (m <= tuning.MATMUL_SKINNY_M) return "skinny";
  return undefined;
}

/** The tiling of a product with C [m, ·]: its class's, else the device's; all validated once per device. */
function tilingOf(device: Device, m: number, transA: boolean, transB: boolean): tuning.MatmulTiling {
  if (!checked.has(device)) {
    checkTiling(device, device.matmul, "matmul tiling");
    for (const [cls, t] of Object.entries(device.matmulClasses)) if (t) checkTiling(device, t, `matmulClasses.${cls} tiling`);
    checked.add(device);
  }
  const cls = matmulClass(m, transA, transB);
  return (cls && device.matmulClasses[cls]) || device.matmul;
}

function checkTiling(device: Device, t: tuning.MatmulTiling, knob: string): void {
  const shared = t.bk > 0;
  const maxBlock = shared ? 8 : 32;
  const fail = (what: string) => {
    throw new RangeError(`Device "${device.label}" ${knob}: ${what}, got ${JSON.stringify(t)}`);
  };
  for (const key of ["tm", "tn"] as const) {
    if (!(Number.isInteger(t[key]) && t[key] % 4 === 0 && t[key] >= 4 && t[key] <= maxBlock)) {
      fail(`${key} must be a multiple of 4 in [4, ${maxBlock}]${shared ? " with bk > 0" : ""}`);
    }
  }
  const l = device.limits;
  if (!(Number.isInteger(t.wgx) && t.wgx >= 1 && t.wgx <= l.maxComputeWorkgroupSizeX)) {
    fail(`wgx must be an integer in [1, ${l.maxComputeWorkgroupSizeX}]`);
  }
  if (!(Number.isInteger(t.wgy) && t.wgy >= 1 && t.wgy <= l.maxComputeWorkgroupSizeY)) {
    fail(`wgy must be an integer in [1, ${l.maxComputeWorkgroupSizeY}]`);
  }
  if (t.wgx * t.wgy > l.maxComputeInvocationsPerWorkgroup) {
    fail(`wgx·wgy must be at most ${l.maxComputeInvocationsPerWorkgroup}`);
  }
  if (!(Number.isInteger(t.bk) && t.bk >= 0)) fail("bk must be a non-negative integer");
  if (shared && (t.bk * t.wgy * t.tm > SHARED_TILE || t.bk * t.wgx * t.tn > SHARED_TILE)) {
    fail(`bk·wgy·tm and bk·wgx·tn must be at most ${SHARED_TILE}`);
  }
}

/**
 * A block edge no larger than the matrix needs (idle lanes cost as much as busy ones), a power
 * of two so that few pipeline variants get compiled.
 */
function fit(block: number, size: number, threads: number): number {
  const need = Math.max(4, 2 ** Math.ceil(Math.log2(Math.max(1, size / threads))));
  return Math.min(block, need);
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

/** What a product's store does besides writing C (+ bias): the epilogue descriptor. */
interface Epilogue {
  /** Apply this activation in the store (linear entries); one that saves its input also stores C before it. */
  act?: Activation;
  /** C = act_backward(kind, s, C) with s [C's shape] what that activation saved: its backward folded in. */
  mask?: { s: Tensor; act: Activation };
  /** Write C here when it has C's size (a leaf's gradient home), else into a new tensor. */
  out?: Tensor | null;
  /** Also write Σ_k op(A)[row, k], [batch, m], here (register kernel, no bias): a Linear's db beside dW. */
  rowSums?: Tensor;
  /** Dropout's mask (shaders/dropout.wgsl's for the seed) applied after the activation. */
  drop?: { p: number; seed: number };
  /** Added last, C's shape: C = res + dropout(act(A·B + bias)). */
  res?: Tensor;
}

/** C = op(A)·op(B) (+ bias) with the epilogue `epi` (see {@link gemmPre}). */
function gemm(
  a: Tensor,
  b: Tensor,
  transA: boolean,
  transB: boolean,
  bias?: Tensor,
  origin = "matmul",
  epi: Epilogue = {},
): Tensor {
  return gemmPre(a, b, transA, transB, bias, origin, epi).c;
}

/**
 * C = op(A)·op(B) (+ bias along the last dim) in one dispatch, for contiguous f32 A and B,
 * with the epilogue `epi` applied in the store. The output has the broadcast batch shape.
 * When the activation's backward reads its input, `pre` is C before the activation: a view
 * into the same buffer as C, after it (one allocation, one binding).
 */
function gemmPre(
  a: Tensor,
  b: Tensor,
  transA: boolean,
  transB: boolean,
  bias?: Tensor,
  origin = "matmul",
  epi: Epilogue = {},
): { c: Tensor; pre?: Tensor } {
  const device = a.device;
  const plan = matmulPlan(a.shape, b.shape, transA, transB);
  const total = numel(plan.out);
  const savePre = !!epi.act && ACTIVATIONS[epi.act].saves === "input";
  let c: Tensor, pre: Tensor | undefined, target: Tensor, zo = 0;
  if (savePre && total > 0) {
    const q = device.limits.minStorageBufferOffsetAlignment / 4;
    zo = Math.ceil(total / q) * q;
    target = Tensor.empty([zo + total], { device }, origin);
    c = Tensor.view(target, 0, plan.out, origin);
    pre = Tensor.view(target, zo, plan.out, `${origin}.pre`);
  } else {
    c = epi.out && epi.out.numel === total ? epi.out : Tensor.empty(plan.out, { device }, origin);
    target = c;
  }
  const { m, n, k } = plan;
  if (c.numel === 0) return { c };
  const t = tilingOf(device, m, transA, transB);
  const shared = t.bk > 0;
  const vec4 = !shared && n % 4 === 0;
  // vec4 loads need the operand's contiguous dim to be a multiple of 4 (batch strides follow).
  const va = (transA ? m : k) % 4 === 0, vb = (transB ? k : n) % 4 === 0;
  const [bm, bn] = shared || (vec4 && va && vb)
    ? [t.tm, t.tn]
    : [Math.min(t.tm, tuning.MATMUL_UNALIGNED.tm), Math.min(t.tn, tuning.MATMUL_UNALIGNED.tn)];
  // Rows: at least two row groups. On lavapipe a product whose rows fit one thread block
  // (m <= TM) ran 12-38x slower than with half the block (m = 32: 38 ms at TM 32, 1 ms at
  // TM 16; bench/README.md "Skinny products"), which is what an LSTM step at batch <= 32 does.
  const tm = fit(bm, m / 2, t.wgy), tn = fit(bn, n, t.wgx);
  if ((epi.mask || epi.rowSums) && (shared || bias)) {
    throw new Error(`${origin}: a masked or row-summing product needs the register kernel and no bias`);
  }
  if (epi.mask && epi.rowSums) throw new Error(`${origin}: a product either masks or sums rows, not both`);
  const kind = epi.mask ? "matmul_forward_mask" : epi.rowSums ? "matmul_forward_rowsum" : `${bias ? "linear" : "matmul"}_forward`;
  const entry = `${kind}${shared ? "_shared" : vec4 ? "_vec4" : ""}`;
  const overrides: Record<string, number> = { TA: +transA, TB: +transB, TM: tm, TN: tn, WGX: t.wgx, WGY: t.wgy };
  if (epi.act) overrides.ACT = ACTIVATIONS[epi.act].kind;
  if (savePre) overrides.PRE = 1;
  if (epi.mask) overrides.DACT = ACTIVATIONS[epi.mask.act].kind;
  if (epi.rowSums) overrides.ROWSUM = 1;
  if (epi.drop) overrides.DROP = 1;
  if (epi.res) overrides.RES = 1;
  const drop = epi.drop ? { seed: epi.drop.seed, drop: epi.drop.p, drop_scale: 1 / (1 - epi.drop.p) } : {};
  if (shared) overrides.BK = t.bk;
  else {
    overrides.VA = +va;
    overrides.VB = +vb;
  }
  const [sa0, sa1, sa2] = plan.sa, [sb0, sb1, sb2] = plan.sb;
  launch(device, MATMUL, {
    entry,
    overrides,
    params: { m, n, k, d1: plan.d1, d2: plan.d2, sa0, sa1, sa2, sb0, sb1, sb2, zo, ...drop },
    io: {
      a,
      b,
      ...(vec4 ? { c4: target } : { c: target }),
      bias,
      // Every entry with an epilogue binds the side input (its late pass and the shared store
      // read it under RES): A when unused. The row-sum entries have none, so no binding.
      mask: epi.rowSums ? undefined : epi.mask?.s ?? epi.res ?? a,
      rowsum: epi.rowSums,
    },
    groups: [Math.ceil(n / (tn * t.wgx)), Math.ceil(m / (tm * t.wgy)), plan.batch],
  });
  if (pre) target.dispose(); // the two views keep the memory
  return { c, pre };
}

function checkOperands(op: string, ...ts: Tensor[]): void {
  for (const t of ts) {
    t.sameDevice(ts[0], op);
    if (t.dtype !== "f32") {
      throw new TypeError(`${op}: expects f32 tensors, got ${ts.map((x) => x.dtype).join(" and ")}`);
    }
  }
}

const batchSize = (s: Shape) => numel(s.slice(0, -2));
/** A shape [..., c] viewed as the 2-D matrix [rows, c]. */
const rows = (s: Shape) => [numel(s.slice(0, -1)), s[s.length - 1]];

/**
 * Batched matrix product C = op(A)·op(B), op an optional transpose of the last two dims that
 * the kernel reads in place. Batch dims broadcast. Gradients (the same kernel, transposed):
 * dA = dC·op(B)ᵀ and dB = op(A)ᵀ·dC (transposed back when A or B was), summed over the
 * batch dims an operand was broadcast along.
 */
export const matmulOp: OpDef<MatmulAttrs> = {
  name: "matmul",
  forward([a, b], attrs) {
    checkOperands("matmul", a, b);
    return { output: gemm(a, b, !!attrs.transA, !!attrs.transB), saved: [a, b] };
  },
  backward(dc, ctx) {
    const [a, b] = ctx.saved;
    const ta = !!ctx.attrs.transA, tb = !!ctx.attrs.transB;
    let da: Tensor | null = null, db: Tensor | null = null;
    if (ctx.needs[0]) {
      const g = ta
        ? gemm(b, dc, tb, true, undefined, "matmul.backward")
        : gemm(dc, b, false, !tb, undefined, "matmul.backward");
      da = sumTo(g, a.shape);
    }
    if (ctx.needs[1]) {
      if (batchSize(b.shape) === 1 && batchSize(a.shape) === batchSize(dc.shape) && batchSize(a.shape) > 1 && !ta) {
        // B was shared by every matrix of A: Σ_i A_iᵀ·dC_i is one product over the stacked rows.
        const a2 = a.reshape(rows(a.shape)), dc2 = dc.reshape(rows(dc.shape));
        const g = tb
          ? gemm(dc2, a2, true, false, undefined, "matmul.backward")
          : gemm(a2, dc2, true, false, undefined, "matmul.backward");
        db = g.reshape(b.shape);
      } else {
        const g = tb
          ? gemm(dc, a, true, ta, undefined, "matmul.backward")
          : gemm(a, dc, !ta, false, undefined, "matmul.backward");
        db = sumTo(g, b.shape);
      }
    }
    return [da, db];
  },
};

/**
 * Matrix product of the last two dims with broadcast batch dims, as `torch.matmul` on
 * operands of at least 2 dims; `transA` / `transB` transpose an operand in place.
 * @throws {TypeError} For operands under 2 dims or not f32.
 * @throws {RangeError} When the shapes do not fit (both shapes shown).
 * @example
 * ```ts
 * import { Device, fromArray } from "../../index.ts";
 * import { ops } from "../../engine.ts";
 * await Device.request();
 * const c = ops.matmul(fromArray([1, 2, 3, 4], [2, 2]), fromArray([1, 0, 0, 1], [2, 2]));
 * console.log(await c.toArray()); // [1, 2, 3, 4]
 * ```
 */
export function matmul(a: Tensor, b: Tensor, opts: MatmulAttrs = {}): Tensor {
  return matmulOp.forward([a, b], opts).output;
}

/** Outputs of a fused Linear + activation: a product consuming one may fold the activation's gradient in. */
const actOutputs = new WeakMap<Tensor, { act: Activation; s: Tensor }>();
/** Gradients already taken through an activation whose output is the key's value: its backward skips it. */
const maskedBy = new WeakMap<Tensor, Tensor>();

/**
 * The backward of y = x·wᵀ (+ b) from dy: dx = dy·w, dw = dyᵀ·x, db = Σ dy. When x is the
 * output of a fused Linear + activation, dx's product also applies that activation's
 * gradient (one launch fewer) and says so in `maskedBy`.
 */
function linearBackward(
  dy: Tensor,
  x: Tensor,
  w: Tensor,
  ctx: OpContext<undefined>,
): (Tensor | null)[] {
  const { needs } = ctx, into = ctx.into ?? [];
  const dy2 = dy.reshape(rows(dy.shape));
  const from = actOutputs.get(x);
  let dx: Tensor | null = null;
  if (needs[0]) {
    // Folding is safe when no other gradient of x joins dx before the activation's backward
    // (this op is x's only consumer), or when applying the activation's gradient twice is the
    // same as once (relu's mask).
    const foldable = from && (from.act === "relu" || ctx.sole?.[0] === true);
    const mask = foldable && tilingOf(x.device, dy2.shape[0], false, false).bk === 0
      ? { s: from.s.reshape(rows(x.shape)), act: from.act }
      : undefined;
    dx = gemm(dy2, w, false, false, undefined, "linear.backward", { mask }).reshape(x.shape);
    if (mask) maskedBy.set(dx, x);
  }
  // db = Σ dy rides along dW's product (its row sums) when both are wanted on the register kernel.
  const hasBias = ctx.shapes.length > 2;
  const sumsInProduct = hasBias && needs[1] && needs[2] && tilingOf(dy.device, w.shape[0], true, false).bk === 0;
  let db: Tensor | null = null;
  if (sumsInProduct) {
    db = into[2] && into[2].numel === w.shape[0] ? into[2] : Tensor.empty([w.shape[0]], { device: dy.device }, "linear.backward");
  }
  const dw = needs[1]
    ? gemm(dy2, x.reshape(rows(x.shape)), true, false, undefined, "linear.backward", { out: into[1], rowSums: db ?? undefined })
    : null;
  const grads = [dx, dw];
  if (hasBias) grads.push(needs[2] ? db ?? sumOp.forward([dy2], { dims: 0, out: into[2] ?? undefined }).output : null);
  return grads;
}

/**
 * Fully connected layer y = x·wᵀ + b with PyTorch's `nn.Linear` layout: x [..., in],
 * w [out, in], b [out] (optional). One dispatch forward (the bias is added by the matmul
 * kernel). Gradients: dx = dy·w, dw = dyᵀ·x over all leading dims, db = Σ dy.
 */
export const linearOp: OpDef<undefined> = {
  name: "linear",
  forward(inputs) {
    const [x, w, b] = inputs;
    checkOperands("linear", ...inputs);
    const out = linearShape(x.shape, w.shape, b?.shape);
    const x2 = x.reshape(rows(x.shape));
    const y = gemm(x2, w, false, true, b, "linear");
    return { output: y.reshape(out), saved: [x, w] };
  },
  backward(dy, ctx) {
    const [x, w] = ctx.saved;
    return linearBackward(dy, x, w, ctx);
  },
};

/**
 * act(x·wᵀ + b) in one dispatch, `act` applied in the matmul's store with the unary op's own
 * rule (shaders/lib/act.wgsl); one that saves its input (gelu, silu) stores the product
 * before it too, in the same launch. Backward applies the activation's gradient (skipped when
 * the product that made dy already did: the next Linear's dx) and then Linear's. The same
 * f32 operations as the two ops apart.
 */
function defineLinearAct(act: Activation): OpDef<undefined> {
  const spec = ACTIVATIONS[act];
  return {
    name: `linear${act[0].toUpperCase()}${act.slice(1)}`,
    forward(inputs) {
      const [x, w, b] = inputs;
      checkOperands("linear", ...inputs);
      const out = linearShape(x.shape, w.shape, b?.shape);
      const r = gemmPre(x.reshape(rows(x.shape)), w, false, true, b, "linear", { act });
      const y = r.c.reshape(out), s = r.pre ? r.pre.reshape(out) : y;
      actOutputs.set(y, { act, s });
      return { output: y, saved: [x, w, s] };
    },
    backward(dy, ctx) {
      const [x, w, s] = ctx.saved;
      const dz = maskedBy.get(dy) === ctx.output
        ? dy
        : spec.op.backward!(dy, { shapes: [s.shape], needs: [true], saved: [s], output: ctx.output, attrs: {} })[0]!;
      return linearBackward(dz, x, w, ctx);
    },
  };
}

/** The fused Linear + activation op of each {@link Activation} (`linearActOps.gelu` is gelu(x·wᵀ + b)). */
export const linearActOps: Readonly<Record<Activation, OpDef<undefined>>> = Object.fromEntries(
  (Object.keys(ACTIVATIONS) as Activation[]).map((a) => [a, defineLinearAct(a)]),
) as Record<Activation, OpDef<undefined>>;

/** relu(x·wᵀ + b) in one dispatch: `nn.Sequential` runs a `Linear` followed by a `ReLU` so. */
export const linearReluOp: OpDef<undefined> = linearActOps.relu;

/** Attributes of {@link linearResidualOp}: whether a bias is given, and the dropout (null: none). */
export interface LinearResidualAttrs {
  /** Whether the inputs hold a bias: `[x, w, b, res]` when true, `[x, w, res]` when false. */
  bias: boolean;
  /** Dropout of x·wᵀ + b before res is added; null (or not training, or p = 0) for none. */
  dropout: DropoutAttrs | null;
}

/**
 * res + dropout(x·wᵀ + b) in one dispatch (inputs `[x, w, b, res]`, or `[x, w, res]` without a
 * bias): a transformer block's `x + drop(ff_down(h))`. The mask is dropout's for the seed
 * (regenerated in backward, nothing saved) and the residual is added in the store, the same
 * f32 operations as linear, dropout and add apart. Backward: res gets dy itself, the product
 * gets dropout's backward of dy, then Linear's.
 */
export const linearResidualOp: OpDef<LinearResidualAttrs> = {
  name: "linearResidual",
  forward(inputs, attrs) {
    const [x, w] = inputs, b = attrs.bias ? inputs[2] : undefined, res = inputs[inputs.length - 1];
    checkOperands("linear", ...inputs);
    const out = linearShape(x.shape, w.shape, b?.shape);
    if (res.shape.length !== out.length || res.shape.some((d, i) => d !== out[i])) {
      throw new RangeError(`linearResidual: the residual must have the output's shape ${fmt(out)}, got ${fmt(res.shape)}`);
    }
    if (attrs.dropout) checkDropout(attrs.dropout);
    const drop = attrs.dropout && attrs.dropout.training && attrs.dropout.p > 0 ? attrs.dropout : undefined;
    const y = gemm(x.reshape(rows(x.shape)), w, false, true, b, "linear", { res, drop }).reshape(out);
    return { output: y, saved: [x, w] };
  },
  backward(dy, ctx) {
    const [x, w] = ctx.saved, n = ctx.shapes.length;
    const d = ctx.attrs.dropout;
    const sub = { ...ctx, shapes: ctx.shapes.slice(0, n - 1), needs: ctx.needs.slice(0, n - 1), into: ctx.into?.slice(0, n - 1), attrs: undefined };
    const needLinear = sub.needs.some(Boolean);
    const dz = needLinear && d ? dropoutOp.backward!(dy, { shapes: [dy.shape], needs: [true], saved: [], output: dy, attrs: d })[0]! : dy;
    const grads = needLinear ? linearBackward(dz, x, w, sub) : sub.needs.map(() => null);
    return [...grads, ctx.needs[n - 1] ? dy : null];
  },
};

/**
 * `nn.Linear`'s forward: y = x·wᵀ + b for x [..., in], w [out, in], b [out].
 * @throws {TypeError} For wrong ranks or dtypes.
 * @throws {RangeError} When in or out disagree (all shapes shown).
 * @example
 * ```ts
 * import { Device, fromArray } from "../../index.ts";
 * import { ops } from "../../engine.ts";
 * await Device.request();
 * const y = ops.linear(fromArray([1, 2], [1, 2]), fromArray([1, 1, 0, 1], [2, 2]), fromArray([10, 20]));
 * console.log(await y.toArray()); // [13, 22]
 * ```
 */
export function linear(x: Tensor, w: Tensor, b?: Tensor): Tensor {
  return linearOp.forward(b ? [x, w, b] : [x, w], undefined).output;
}

/** relu(linear(x, w, b)) in one dispatch (see {@link linearReluOp}). */
export function linearRelu(x: Tensor, w: Tensor, b?: Tensor): Tensor {
  return linearReluOp.forward(b ? [x, w, b] : [x, w], undefined).output;
}

/**
 * act(linear(x, w, b)) in one dispatch (see {@link linearActOps}).
 * @example
 * ```ts
 * import { Device, fromArray } from "../../index.ts";
 * import { ops } from "../../engine.ts";
 * await Device.request();
 * const y = ops.linearAct(fromArray([1, -2], [1, 2]), fromArray([1, 0, 0, 1], [2, 2]), fromArray([0, 0]), "tanh");
 * console.log(await y.toArray()); // [tanh(1), tanh(-2)]
 * ```
 */
export function linearAct(x: Tensor, w: Tensor, b: Tensor | undefined, act: Activation): Tensor {
  return linearActOps[act].forward(b ? [x, w, b] : [x, w], undefined).output;
}
