/**
 * GEMM dispatch, shared by every product (matmul.ts, linear_backward.ts, linear_fused.ts): the
 * tiling a product runs with (validated once per device) and {@link gemm}, the one launch of
 * shaders/matmul.wgsl with its epilogue. No op and no gradient lives here, and nothing here is
 * public: the ops decide what to multiply, matmul_plan.ts how memory is walked, this file how
 * the launch is tiled.
 */
import { type Device, launch, tuning } from "../../gpu/mod.ts";
import { numel, type Shape } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { type Activation, ACTIVATIONS, MATMUL, matmulClass, matmulPlan } from "./matmul_plan.ts";

/** Floats of each workgroup tile of the shared kernel (`TILE` in shaders/matmul.wgsl). */
const SHARED_TILE = 2048;
const checked = new WeakSet<Device>();

/**
 * The tiling of a product with C [m, ·]: its class's, else the device's; all validated once per
 * device. A caller asks it whether a product runs on the register kernel (`bk` 0), which alone
 * has the mask and row-sum epilogues.
 * @throws {RangeError} When a tiling of the device is out of range (the knob and value named).
 */
export function tilingOf(device: Device, m: number, transA: boolean, transB: boolean): tuning.MatmulTiling {
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

/**
 * How {@link gemm} runs C = op(A)·op(B): the transposes, the bias, a label, and the epilogue,
 * what the store does besides writing C. Every field is off when left out.
 */
export interface GemmOptions {
  /** Read A's last two dims transposed, in place. */
  transA?: boolean;
  /** Read B's last two dims transposed, in place. */
  transB?: boolean;
  /** Added along C's last dim (the linear entries). */
  bias?: Tensor;
  /** Names the output tensors and the errors; default "matmul". */
  label?: string;
  /** Apply this activation in the store (linear entries); one that saves its input also stores C before it. */
  act?: Activation;
  /**
   * C = act_backward(kind, s, C) with s [C's shape] what that activation saved: when C is the
   * gradient of an activation's output, that activation's backward, folded into the store
   * (linear_backward.ts's dx product).
   */
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

/**
 * C = op(A)·op(B) (+ bias along the last dim) in one dispatch, for contiguous f32 A and B, with
 * the epilogue of `opts` applied in the store. The output has the broadcast batch shape.
 * @throws {Error} For a mask or row sums on the shared kernel or with a bias, or both at once.
 */
export function gemm(a: Tensor, b: Tensor, opts: GemmOptions = {}): Tensor {
  return gemmPre(a, b, opts).c;
}

/**
 * {@link gemm} that also returns `pre`, C before the activation, when the activation's backward
 * reads its input (gelu, silu): a view into the same buffer as C, after it (one allocation,
 * one binding).
 */
export function gemmPre(a: Tensor, b: Tensor, opts: GemmOptions = {}): { c: Tensor; pre?: Tensor } {
  const { transA = false, transB = false, bias, label = "matmul" } = opts;
  const device = a.device;
  const plan = matmulPlan(a.shape, b.shape, transA, transB);
  const total = numel(plan.out);
  const savePre = !!opts.act && ACTIVATIONS[opts.act].saves === "input";
  let c: Tensor, pre: Tensor | undefined, target: Tensor, zo = 0;
  if (savePre && total > 0) {
    const q = device.limits.minStorageBufferOffsetAlignment / 4;
    zo = Math.ceil(total / q) * q;
    target = Tensor.empty([zo + total], { device }, label);
    c = Tensor.view(target, 0, plan.out, label);
    pre = Tensor.view(target, zo, plan.out, `${label}.pre`);
  } else {
    c = opts.out && opts.out.numel === total ? opts.out : Tensor.empty(plan.out, { device }, label);
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
  if ((opts.mask || opts.rowSums) && (shared || bias)) {
    throw new Error(`${label}: a masked or row-summing product needs the register kernel and no bias`);
  }
  if (opts.mask && opts.rowSums) throw new Error(`${label}: a product either masks or sums rows, not both`);
  const kind = opts.mask ? "matmul_forward_mask" : opts.rowSums ? "matmul_forward_rowsum" : `${bias ? "linear" : "matmul"}_forward`;
  const entry = `${kind}${shared ? "_shared" : vec4 ? "_vec4" : ""}`;
  const overrides: Record<string, number> = { TA: +transA, TB: +transB, TM: tm, TN: tn, WGX: t.wgx, WGY: t.wgy };
  if (opts.act) overrides.ACT = ACTIVATIONS[opts.act].kind;
  if (savePre) overrides.PRE = 1;
  if (opts.mask) overrides.DACT = ACTIVATIONS[opts.mask.act].kind;
  if (opts.rowSums) overrides.ROWSUM = 1;
  if (opts.drop) overrides.DROP = 1;
  if (opts.res) overrides.RES = 1;
  const drop = opts.drop ? { seed: opts.drop.seed, drop: opts.drop.p, drop_scale: 1 / (1 - opts.drop.p) } : {};
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
      mask: opts.rowSums ? undefined : opts.mask?.s ?? opts.res ?? a,
      rowsum: opts.rowSums,
    },
    groups: [Math.ceil(n / (tn * t.wgx)), Math.ceil(m / (tm * t.wgy)), plan.batch],
  });
  if (pre) target.dispose(); // the two views keep the memory
  return { c, pre };
}

/**
 * Check that the operands of a product share a device and are f32.
 * @throws {TypeError} Naming `op` and the dtypes received.
 */
export function checkOperands(op: string, ...ts: Tensor[]): void {
  for (const t of ts) {
    t.sameDevice(ts[0], op);
    if (t.dtype !== "f32") {
      throw new TypeError(`${op}: expects f32 tensors, got ${ts.map((x) => x.dtype).join(" and ")}`);
    }
  }
}

/** A shape [..., c] viewed as the 2-D matrix [rows, c]. */
export const rows = (s: Shape): number[] => [numel(s.slice(0, -1)), s[s.length - 1]];
