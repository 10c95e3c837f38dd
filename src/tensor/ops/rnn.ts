import { Device, type Kernel, kernel, launch, type Layout, layout } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { fmt, sameShape, type Shape } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { add } from "./binary.ts";
import { linear, matmul } from "./matmul.ts";
import { sum } from "./reduce.ts";

/** Mirrors `struct Params` in shaders/rnn.wgsl. */
export const RNN_PARAMS: Layout<{
  n: "u32"; hidden: "u32"; t: "u32"; steps: "u32"; has_rec: "u32";
}> = layout("rnn", "Params", {
  n: "u32",
  hidden: "u32",
  t: "u32",
  steps: "u32",
  has_rec: "u32",
});
/** Storage bindings of shaders/rnn.wgsl. */
export const RNN: Kernel<typeof RNN_PARAMS, {
  gx: [number, "read"]; gh: [number, "read"]; cs: [number, "read_write"]; out: [number, "read_write"];
  hprev: [number, "read_write"]; hnext: [number, "read_write"]; act: [number, "read_write"];
  dout: [number, "read"]; dhrec: [number, "read"]; carry: [number, "read_write"];
  dgx: [number, "read_write"]; dgh: [number, "read_write"]; dstep: [number, "read_write"];
}> = kernel(RNN_PARAMS, {
  gx: [1, "read"],
  gh: [2, "read"],
  cs: [3, "read_write"],
  out: [4, "read_write"],
  hprev: [5, "read_write"],
  hnext: [6, "read_write"],
  act: [7, "read_write"],
  dout: [8, "read"],
  dhrec: [9, "read"],
  carry: [10, "read_write"],
  dgx: [11, "read_write"],
  dgh: [12, "read_write"],
  dstep: [13, "read_write"],
});

/** Which cell a recurrence runs: PyTorch's LSTM (gates i, f, g, o) or GRU (gates r, z, n). */
export type RnnMode = "lstm" | "gru";

/** Attributes of {@link lstmRecurrenceOp} and {@link gruRecurrenceOp}. */
export interface RecurrenceAttrs {
  /** Whether the inputs include the recurrent bias `b_hh` (PyTorch's `bias=True`). */
  bias: boolean;
}

/** Sizes of one recurrence (pure; unit-tested). */
export interface RecurrencePlan {
  /** Time steps T: gx's first dim. */
  steps: number;
  /** Batch rows B: gx's second dim. */
  batch: number;
  /** Hidden size H: w_hh's second dim. */
  hidden: number;
  /** Gate columns per batch row: 4·hidden (LSTM) or 3·hidden (GRU). */
  gates: number;
  /** Output shape: LSTM [steps + 1, batch, hidden] (h_1..h_T then c_T), GRU [steps, batch, hidden]. */
  out: number[];
}

const GATES: Record<RnnMode, number> = { lstm: 4, gru: 3 };

/**
 * Check the inputs of a recurrence and size it. Inputs, in order: gx [T, B, G] (the input
 * projections x·W_ihᵀ + b_ih of every step), w_hh [G, H], b_hh [G] when `bias`, h0 [B, H],
 * and for LSTM c0 [B, H]; G = 4H (LSTM) or 3H (GRU).
 * @throws {RangeError} When the count of inputs is wrong or a shape disagrees (every shape shown).
 * @example
 * ```ts
 * import { recurrencePlan } from "./rnn.ts";
 * recurrencePlan("gru", [[5, 3, 27], [27, 9], [27], [3, 9]], true).out; // [5, 3, 9]
 * ```
 */
export function recurrencePlan(mode: RnnMode, shapes: readonly Shape[], bias: boolean): RecurrencePlan {
  const names = ["gx", "w_hh", ...(bias ? ["b_hh"] : []), "h0", ...(mode === "lstm" ? ["c0"] : [])];
  const got = () => names.map((n, i) => `${n}=${shapes[i] ? fmt(shapes[i]) : "missing"}`).join(" ");
  if (shapes.length !== names.length) {
    throw new RangeError(
      `${mode}: expects ${names.length} inputs (${names.join(", ")}), got ${shapes.length}: ${got()}`,
    );
  }
  const [gx, w] = shapes;
  const h0 = shapes[bias ? 3 : 2];
  const fail = (why: string) => {
    throw new RangeError(`${mode}: ${why}, got ${got()}`);
  };
  if (w.length !== 2) fail("w_hh must be 2-D [G, H]");
  const hidden = w[1], gates = GATES[mode] * hidden;
  if (w[0] !== gates) fail(`w_hh must be [${GATES[mode]}·H, H]`);
  if (gx.length !== 3 || gx[2] !== gates) fail(`gx must be [T, B, ${gates}]`);
  const [steps, batch] = gx;
  if (steps < 1 || batch < 1 || hidden < 1) fail("steps, batch and hidden must be at least 1");
  if (bias && !sameShape(shapes[2], [gates])) fail(`b_hh must be ${fmt([gates])}`);
  if (!sameShape(h0, [batch, hidden])) fail(`h0 must be ${fmt([batch, hidden])}`);
  if (mode === "lstm" && !sameShape(shapes[names.length - 1], [batch, hidden])) {
    fail(`c0 must be ${fmt([batch, hidden])}`);
  }
  return { steps, batch, hidden, gates, out: [mode === "lstm" ? steps + 1 : steps, batch, hidden] };
}

/** Entry, params and grid of step t's gate kernel: one thread per (batch, hidden) pair. */
function step(entry: string, plan: RecurrencePlan, t: number) {
  const n = plan.batch * plan.hidden;
  const params = { n, hidden: plan.hidden, t, steps: plan.steps, has_rec: +(t + 1 < plan.steps) };
  return { entry, params, groups: Device.grid(n) };
}

/**
 * The recurrent half of one LSTM or GRU layer over a whole sequence. Per step: one matmul
 * (h_{t-1}·W_hhᵀ + b_hh) and one fused gate kernel (shaders/rnn.wgsl). The backward walks
 * the steps in reverse with the same two dispatches per step (the gate backward, then
 * dgh_t·W_hh), then W_hh's gradient is one matmul over all steps and b_hh's one sum.
 */
function defineRecurrence(mode: RnnMode): OpDef<RecurrenceAttrs> {
  const lstm = mode === "lstm";
  return {
    name: mode,
    forward(inputs, { bias }) {
      const plan = recurrencePlan(mode, inputs.map((t) => t.shape), bias);
      for (const t of inputs) {
        t.sameDevice(inputs[0], mode);
        if (t.dtype !== "f32") {
          throw new TypeError(`${mode}: expects f32 tensors, got ${inputs.map((x) => x.dtype).join(", ")}`);
        }
      }
      const [gx, w] = inputs;
      const b = bias ? inputs[2] : undefined;
      const h0 = inputs[bias ? 3 : 2], c0 = lstm ? inputs[inputs.length - 1] : undefined;
      const { steps, batch, hidden } = plan;
      const device = gx.device, opts = { device };
      const out = Tensor.empty(plan.out, opts, mode);
      const hprev = Tensor.empty([steps, batch, hidden], opts, `${mode}.hprev`);
      const act = Tensor.empty([steps, batch, 4 * hidden], opts, `${mode}.act`);
      const cs = c0 ? Tensor.empty([steps + 1, batch, hidden], opts, `${mode}.cells`) : undefined;
      // NOTE: one h_t buffer serves every step: dispatches run in order, so step t's matmul has
      // read h_{t-1} before step t's gate kernel overwrites it.
      const hnext = Tensor.empty([batch, hidden], opts, `${mode}.h`);
      const bytes = batch * hidden * 4;
      device.copy(h0.buffer, h0.byteOffset, hprev.buffer, 0, bytes);
      if (cs) device.copy(c0!.buffer, c0!.byteOffset, cs.buffer, 0, bytes);
      for (let t = 0; t < steps; t++) {
        const h = t === 0 ? h0 : hnext;
        const gh = b ? linear(h, w, b) : matmul(h, w, { transB: true });
        const io = { gx, gh, cs, out, hprev, hnext, act };
        launch(device, RNN, { ...step(`${mode}_step_forward`, plan, t), io });
      }
      return { output: out, saved: cs ? [w, act, hprev, cs] : [w, act, hprev] };
    },
    backward(dout, ctx) {
      const { bias } = ctx.attrs;
      const plan = recurrencePlan(mode, ctx.shapes, bias);
      const [w, act, hprev, cs] = ctx.saved;
      const { steps, batch, hidden, gates } = plan;
      const device = dout.device, opts = { device };
      const dgx = Tensor.empty([steps, batch, gates], opts, `${mode}.backward`);
      const dgh = lstm ? dgx : Tensor.empty([steps, batch, gates], opts, `${mode}.backward.dgh`);
      const carry = Tensor.empty([batch, hidden], opts, `${mode}.backward.carry`);
      // One buffer for every step's dgh_t, as hnext in the forward.
      const dstep = Tensor.empty([batch, gates], opts, `${mode}.backward.step`);
      const h0At = bias ? 3 : 2;
      let dhrec: Tensor | undefined;
      for (let t = steps - 1; t >= 0; t--) {
        const io = {
          act,
          dout,
          dhrec: dhrec ?? dout, // unread at the last step (has_rec = 0)
          carry,
          dgx,
          dstep,
          ...(lstm ? { cs } : { hprev, dgh }),
        };
        launch(device, RNN, { ...step(`${mode}_step_backward`, plan, t), io });
        dhrec = t > 0 || ctx.needs[h0At] ? matmul(dstep, w) : undefined;
      }
      const rows = steps * batch;
      const grads: (Tensor | null)[] = [ctx.needs[0] ? dgx : null];
      grads.push(
        ctx.needs[1] ? matmul(dgh.reshape([rows, gates]), hprev.reshape([rows, hidden]), { transA: true }) : null,
      );
      if (bias) grads.push(ctx.needs[2] ? sum(dgh.reshape([rows, gates]), 0) : null);
      // dh0 = the part through step 0's matmul, plus (GRU) the elementwise part dh_0·z_0.
      grads.push(ctx.needs[h0At] ? (lstm ? dhrec! : add(dhrec!, carry)) : null);
      if (lstm) grads.push(ctx.needs[h0At + 1] ? carry : null);
      return grads;
    },
  };
}

/**
 * LSTM recurrence over a sequence (inputs gx [T, B, 4H], w_hh [4H, H], b_hh [4H] when
 * `bias`, h0 [B, H], c0 [B, H]) with PyTorch's gate order i, f, g, o:
 * c_t = σ(f)·c_{t-1} + σ(i)·tanh(g), h_t = σ(o)·tanh(c_t), gates = gx_t + h_{t-1}·W_hhᵀ + b_hh.
 * Output [T + 1, B, H]: h_1..h_T, then c_T. Gradients of every input.
 */
export const lstmRecurrenceOp: OpDef<RecurrenceAttrs> = defineRecurrence("lstm");

/**
 * GRU recurrence over a sequence (inputs gx [T, B, 3H], w_hh [3H, H], b_hh [3H] when
 * `bias`, h0 [B, H]) with PyTorch's gate order r, z, n:
 * n_t = tanh(gx_n + r·(h_{t-1}·W_hnᵀ + b_hn)), h_t = (1 − z)·n_t + z·h_{t-1}.
 * Output [T, B, H]: h_1..h_T. Gradients of every input.
 */
export const gruRecurrenceOp: OpDef<RecurrenceAttrs> = defineRecurrence("gru");

/**
 * The recurrent half of an LSTM layer (no tape): see {@link lstmRecurrenceOp}.
 * @throws {RangeError} When the shapes disagree (every shape shown).
 * @example
 * ```ts
 * import { Device } from "../../index.ts";
 * import { ops } from "../../engine.ts";
 * await Device.request();
 * const out = ops.lstmRecurrence(ops.zeros([5, 3, 8]), ops.zeros([8, 2]), undefined, ops.zeros([3, 2]), ops.zeros([3, 2]));
 * console.log(out.shape); // [6, 3, 2]: h_1..h_5, then c_5
 * ```
 */
export function lstmRecurrence(gx: Tensor, wHh: Tensor, bHh: Tensor | undefined, h0: Tensor, c0: Tensor): Tensor {
  const inputs = bHh ? [gx, wHh, bHh, h0, c0] : [gx, wHh, h0, c0];
  return lstmRecurrenceOp.forward(inputs, { bias: !!bHh }).output;
}

/**
 * The recurrent half of a GRU layer (no tape): see {@link gruRecurrenceOp}.
 * @throws {RangeError} When the shapes disagree (every shape shown).
 * @example
 * ```ts
 * import { Device } from "../../index.ts";
 * import { ops } from "../../engine.ts";
 * await Device.request();
 * const out = ops.gruRecurrence(ops.zeros([5, 3, 6]), ops.zeros([6, 2]), undefined, ops.zeros([3, 2]));
 * console.log(out.shape); // [5, 3, 2]
 * ```
 */
export function gruRecurrence(gx: Tensor, wHh: Tensor, bHh: Tensor | undefined, h0: Tensor): Tensor {
  const inputs = bHh ? [gx, wHh, bHh, h0] : [gx, wHh, h0];
  return gruRecurrenceOp.forward(inputs, { bias: !!bHh }).output;
}
