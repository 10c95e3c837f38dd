/**
 * The optimizer base: parameter groups, their learning rates, state save/load and the step
 * that every optimizer shares, per tensor or over a packed group (`foreach`).
 *
 * Over ~400 lines on purpose: the per-tensor and the packed step share one group model
 * (which tensors a group holds, when a packed group falls back to per-tensor, the state's
 * layout in both), and the fallback rules read only next to both paths.
 */
import { Parameter } from "../autograd/mod.ts";
import { fmt, sameShape, Tensor, zeros } from "../tensor/mod.ts";
import { checkBoolean, checkNonNegative } from "./check.ts";
import type { Segments } from "./kernel.ts";
import { PackedGroup } from "./pack.ts";

/** Options every optimizer has. */
export interface BaseOptions {
  /** Learning rate, a finite number >= 0. */
  lr: number;
  /**
   * Multi-tensor step (PyTorch's `foreach`): the group's parameters, gradients and state are
   * packed into one flat buffer each at construction (each `p.data` becomes a view of it), so
   * `step()` is one dispatch for the group and `zeroGrad(false)` one clear; the per-element
   * math is the per-tensor update's, bit for bit. Default false.
   * NOTE: code that copies `p.data.buffer` from offset 0 must use `p.data.byteOffset`.
   */
  foreach?: boolean;
}

/** One parameter group: its parameters and its own options (PyTorch's `param_groups`). */
export type ParamGroup<O extends BaseOptions> = O & { readonly params: readonly Parameter[] };

/** A group as given to a constructor: options left out take the optimizer's. */
export type ParamGroupInput<O extends BaseOptions> = Partial<O> & { params: readonly Parameter[] };

/** What an optimizer takes: parameters, or parameter groups with per-group options. */
export type ParamsInput<O extends BaseOptions> = readonly Parameter[] | readonly ParamGroupInput<O>[];

/**
 * An optimizer's state, ready to be saved (as safetensors plus metadata):
 * tensors `"<i>.<state>"` (PyTorch's names: `exp_avg`, `exp_avg_sq`, `momentum_buffer`,
 * `square_avg`, `grad_avg`), scalars `"<i>.step"` and `"param_groups.<g>.lr"`, where `i`
 * counts parameters across groups in order and `g` counts groups.
 */
export interface OptimizerStateDict {
  /** State tensors by key `"<i>.<state>"` (e.g. `"0.exp_avg"`). */
  tensors: Record<string, Tensor>;
  /** Step counts (`"<i>.step"`) and group learning rates (`"param_groups.<g>.lr"`). */
  scalars: Record<string, number>;
}

/** Per-parameter state: the host step count and the kept state tensors. */
export interface ParamState {
  /** Updates applied to this parameter (PyTorch's `step`), counted on the host. */
  step: number;
  /** The kept state tensors by name (`exp_avg`, `momentum_buffer`, ...), each of the parameter's shape. */
  tensors: Record<string, Tensor>;
}

/** What a subclass records for one parameter's update. */
export interface UpdateArgs<O extends BaseOptions> {
  /** The parameter's data, updated in place. */
  param: Tensor;
  /** Its gradient, of the same shape. */
  grad: Tensor;
  /** The state tensors the group's options need (by name), zero-filled when new. */
  state: Readonly<Record<string, Tensor>>;
  /** This update's step number (1 on the first update since creation or reset). */
  step: number;
  /** True when the state tensors were created for this update (SGD's buffer starts as d_p). */
  fresh: boolean;
  /** The parameter's group, with its current options (`lr` included). */
  group: ParamGroup<O>;
  /**
   * Set for a multi-tensor update: `param`, `grad` and `state` are the group's flat buffers
   * and this is their segment table (pass it to `launchUpdate`).
   */
  segments?: Segments;
}

const STEP_KEY = /^(\d+)\.step$/;
const TENSOR_KEY = /^(\d+)\.([a-z_]+)$/;
const LR_KEY = /^param_groups\.(\d+)\.lr$/;

/**
 * Base of the optimizers: parameter groups, learning rate control, per-parameter state and
 * its state dict. `step()` records one fused kernel per parameter with a gradient into the
 * device's command encoder; nothing is submitted or awaited.
 */
export abstract class Optimizer<O extends BaseOptions = BaseOptions> {
  /** Groups with their options; `lr` may be changed directly, as in PyTorch. */
  readonly paramGroups: readonly ParamGroup<O>[];
  /** Optimizer name, used in messages. */
  readonly name: string;
  #params: Parameter[] = [];
  #state: (ParamState | undefined)[] = [];
  /** Per group: its packing when `foreach`, else undefined. */
  #packs: (PackedGroup | undefined)[] = [];
  /** Per parameter: [group, position in the group]. */
  #where: [number, number][] = [];

  /**
   * Check the options and build the groups; with `foreach`, pack each group's tensors.
   * @param name Used in messages ("Adam").
   * @param params Parameters, or groups `{ params, ...options }` overriding `defaults`.
   * @param defaults Every option, already merged with the library defaults.
   */
  protected constructor(name: string, params: ParamsInput<O>, defaults: O) {
    this.name = name;
    if (!Array.isArray(params)) throw new TypeError(`${name}: params must be an array of Parameters or param groups`);
    if (params.length === 0) throw new RangeError(`${name}: got an empty parameter list`);
    this.checkOptions(defaults, name);
    const inputs: readonly ParamGroupInput<O>[] = params.every((p) => p instanceof Parameter)
      ? [{ params: params as readonly Parameter[] } as ParamGroupInput<O>]
      : (params as readonly ParamGroupInput<O>[]);
    const seen = new Set<Parameter>();
    this.paramGroups = inputs.map((input, g) => {
      const where = `${name} (param group ${g})`;
      if (typeof input !== "object" || input === null || !Array.isArray(input.params)) {
        throw new TypeError(
          `${where}: expected a Parameter or { params: Parameter[], ...options }, got ${String(input)}`,
        );
      }
      for (const p of input.params) {
        if (!(p instanceof Parameter)) throw new TypeError(`${where}: params must be Parameters, got ${String(p)}`);
        if (p.data.dtype !== "f32") {
          throw new TypeError(`${where}: parameter "${p.name ?? ""}" is ${p.data.dtype}, not f32`);
        }
        if (seen.has(p)) throw new RangeError(`${where}: parameter "${p.name ?? ""}" appears in more than one group`);
        seen.add(p);
        this.#params.push(p);
      }
      const group = { ...defaults, ...input, params: Object.freeze([...input.params]) } as ParamGroup<O>;
      this.checkOptions(group, where);
      if (group.foreach !== undefined) checkBoolean(where, "foreach", group.foreach);
      return group;
    });
    this.#packs = this.paramGroups.map((g, j) =>
      g.foreach && g.params.length > 0 ? new PackedGroup(g.params, `${name} (param group ${j})`) : undefined
    );
    this.#state = new Array(this.#params.length).fill(undefined);
    this.#where = this.paramGroups.flatMap((grp, g) => grp.params.map((_, k) => [g, k] as [number, number]));
  }

  /** Validate a group's options; throw naming `where`, the option and the value. */
  protected abstract checkOptions(options: O, where: string): void;

  /** Names of the state tensors a parameter of this group needs (e.g. `["exp_avg", "exp_avg_sq"]`). */
  protected abstract stateNames(group: O): readonly string[];

  /** Record the fused update of one parameter (one dispatch). */
  protected abstract update(args: UpdateArgs<O>): void;

  /** Learning rate of group 0. */
  get lr(): number {
    return this.paramGroups[0].lr;
  }

  /**
   * Set the learning rate of every group.
   * @throws {RangeError} When `lr` is negative or not finite.
   */
  setLr(lr: number): void {
    checkNonNegative(`${this.name}.setLr`, "lr", lr);
    for (const g of this.paramGroups) g.lr = lr;
  }

  /**
   * Set the learning rate of group `i`.
   * @throws {RangeError} When `i` is not a group index or `lr` is negative or not finite.
   */
  setGroupLr(i: number, lr: number): void {
    this.#group(i, "setGroupLr");
    checkNonNegative(`${this.name}.setGroupLr`, "lr", lr);
    this.paramGroups[i].lr = lr;
  }

  /**
   * Multiply every group's learning rate by `factor` (flodl's `scale_lr`).
   * @throws {RangeError} When `factor` is negative or not finite.
   */
  scaleLr(factor: number): void {
    checkNonNegative(`${this.name}.scaleLr`, "factor", factor);
    for (const g of this.paramGroups) g.lr *= factor;
  }

  /**
   * Update every parameter that has a gradient, in place on the GPU: one fused kernel per
   * parameter, recorded into the device's command encoder. Parameters without a gradient
   * are skipped and keep their step count. Never submits, never waits.
   * @throws {RangeError} When a gradient's shape differs from its parameter's, or a group's
   *   options were set out of range.
   */
  step(): void {
    let i = 0;
    for (const [g, group] of this.paramGroups.entries()) {
      this.checkOptions(group, `${this.name} (param group ${g})`);
      const names = this.stateNames(group);
      const pack = this.#packs[g];
      if (pack && this.#stepPacked(pack, group, names, i)) {
        i += group.params.length;
        continue;
      }
      for (const p of group.params) {
        const index = i++;
        const grad = p.grad;
        if (!grad) continue;
        const param = p.data;
        if (!sameShape(grad.shape, param.shape)) {
          throw new RangeError(
            `${this.name}.step: gradient of ${this.#describe(index)} is ${fmt(grad.shape)}, parameter is ${
              fmt(param.shape)
            }`,
          );
        }
        if (grad.dtype !== "f32") {
          throw new TypeError(`${this.name}.step: gradient of ${this.#describe(index)} is ${grad.dtype}, not f32`);
        }
        param.sameDevice(grad, `${this.name}.step`);
        const st = this.#state[index] ??= { step: 0, tensors: {} };
        let fresh = false;
        const state: Record<string, Tensor> = {};
        for (const name of names) {
          let t = st.tensors[name];
          if (!t) {
            t = st.tensors[name] = this.#newState(index, name, true);
            fresh = true;
          }
          state[name] = t;
        }
        st.step++;
        this.update({ param, grad, state, step: st.step, fresh, group });
      }
    }
  }

  /**
   * The multi-tensor step of a packed group: one dispatch, when every parameter has its
   * gradient in the group's flat buffer and all share one step count and state age (else
   * false, and the caller updates the views one by one with the same math).
   */
  #stepPacked(pack: PackedGroup, group: ParamGroup<O>, names: readonly string[], first: number): boolean {
    if (!pack.segments) return false;
    const states = group.params.map((_, k) => this.#state[first + k]);
    const step0 = states[0]?.step ?? 0;
    const ok = group.params.every((p, k) =>
      pack.isSlot(pack.values, k, p.data) && pack.isSlot(pack.grads, k, p.grad) &&
      (states[k]?.step ?? 0) === step0 &&
      names.every((name) => {
        const t = states[k]?.tensors[name];
        return step0 === 0 ? !t : pack.isSlot(pack.state(name), k, t);
      })
    );
    if (!ok) return false;
    const state: Record<string, Tensor> = {};
    for (const name of names) state[name] = pack.state(name);
    group.params.forEach((_, k) => {
      const st = this.#state[first + k] ??= { step: 0, tensors: {} };
      for (const name of names) st.tensors[name] ??= pack.stateView(k, name, false);
      st.step++;
    });
    if (step0 === 0) for (const t of Object.values(state)) t.device.clear(t.buffer, 0, t.byteLength);
    this.update({
      param: pack.values,
      grad: pack.grads,
      state,
      step: step0 + 1,
      fresh: step0 === 0,
      group,
      segments: pack.segments,
    });
    return true;
  }

  /** A new kept state tensor for parameter i: a slot of its packed group's buffer, or its own. */
  #newState(i: number, name: string, zero: boolean): Tensor {
    const [g, k] = this.#where[i];
    const pack = this.#packs[g];
    if (pack) return pack.stateView(k, name, zero);
    const param = this.#params[i].data;
    return zero
      ? zeros(param.shape, { device: param.device }).keep()
      : Tensor.empty(param.shape, { device: param.device }, `${this.name}.${name}`).keep();
  }

  /**
   * Drop every gradient (`setToNone`, the default, as PyTorch) or zero it in place on the GPU
   * (a packed group whose gradients all live in its flat buffer: one clear).
   */
  zeroGrad(setToNone = true): void {
    if (setToNone) {
      for (const p of this.#params) p.zeroGrad();
      return;
    }
    this.paramGroups.forEach((group, g) => {
      const pack = this.#packs[g];
      if (pack && group.params.every((p, k) => !p.grad || pack.isSlot(pack.grads, k, p.grad))) {
        pack.grads.device.clear(pack.grads.buffer, 0, pack.grads.byteLength);
        return;
      }
      for (const p of group.params) {
        if (p.grad && p.grad.numel > 0) p.grad.device.clear(p.grad.buffer, p.grad.byteOffset, p.grad.numel * 4);
      }
    });
  }

  /** Forget every moment, momentum buffer and step count (DiLoCo restarts its inner optimizer so). */
  resetState(): void {
    for (const st of this.#state) for (const t of Object.values(st?.tensors ?? {})) t.dispose();
    this.#state.fill(undefined);
  }

  /**
   * The state to save: the optimizer's own kept tensors (not copies: do not dispose them;
   * read or copy them before the next `step()` to snapshot) and scalars. Names are stable:
   * see {@link OptimizerStateDict}.
   */
  stateDict(): OptimizerStateDict {
    const tensors: Record<string, Tensor> = {};
    const scalars: Record<string, number> = {};
    this.#state.forEach((st, i) => {
      if (!st) return;
      scalars[`${i}.step`] = st.step;
      for (const name of this.stateNames(this.#groupOf(i))) {
        if (st.tensors[name]) tensors[`${i}.${name}`] = st.tensors[name];
      }
    });
    this.paramGroups.forEach((g, j) => (scalars[`param_groups.${j}.lr`] = g.lr));
    return { tensors, scalars };
  }

  /**
   * Replace the state with `sd` (from {@link stateDict}, possibly of another optimizer of the
   * same kind over parameters of the same shapes). Tensors are copied on the GPU, so `sd` may
   * be disposed afterwards. Everything is validated before anything changes.
   * @throws {Error} Naming a missing or unexpected entry.
   * @throws {RangeError} Naming an entry whose shape differs from its parameter's (both
   *   shapes), or a step or lr out of range.
   * @throws {TypeError} Naming an entry that is not f32.
   */
  loadStateDict(sd: OptimizerStateDict): void {
    const where = `${this.name}.loadStateDict`;
    const steps = new Map<number, number>();
    for (const [key, v] of Object.entries(sd.scalars)) {
      const s = STEP_KEY.exec(key), l = LR_KEY.exec(key);
      if (s && Number(s[1]) < this.#params.length) {
        if (!Number.isInteger(v) || v < 1) throw new RangeError(`${where}: "${key}" must be an integer >= 1, got ${v}`);
        steps.set(Number(s[1]), v);
      } else if (l && Number(l[1]) < this.paramGroups.length) {
        checkNonNegative(where, `"${key}"`, v);
      } else {
        throw new Error(
          `${where}: unexpected scalar "${key}" (expected "<i>.step" for i < ${this.#params.length} and "param_groups.<g>.lr" for g < ${this.paramGroups.length})`,
        );
      }
    }
    for (let g = 0; g < this.paramGroups.length; g++) {
      if (!(`param_groups.${g}.lr` in sd.scalars)) throw new Error(`${where}: missing scalar "param_groups.${g}.lr"`);
    }
    for (const [key, t] of Object.entries(sd.tensors)) {
      const m = TENSOR_KEY.exec(key);
      const i = m ? Number(m[1]) : -1;
      const names = i >= 0 && i < this.#params.length ? this.stateNames(this.#groupOf(i)) : [];
      if (!m || !names.includes(m[2])) {
        const want = i >= 0 && i < this.#params.length
          ? `${this.#describe(i)} has state ${JSON.stringify(names)}`
          : `${this.#params.length} parameters`;
        throw new Error(`${where}: unexpected tensor "${key}" (${want})`);
      }
      if (!steps.has(i)) throw new Error(`${where}: missing scalar "${i}.step" (tensor "${key}" is given)`);
      if (!(t instanceof Tensor)) throw new TypeError(`${where}: "${key}" must be a Tensor, got ${String(t)}`);
      if (t.dtype !== "f32") throw new TypeError(`${where}: "${key}" is ${t.dtype}, expected f32`);
      const param = this.#params[i].data;
      if (!sameShape(t.shape, param.shape)) {
        throw new RangeError(`${where}: "${key}" is ${fmt(t.shape)}, ${this.#describe(i)} is ${fmt(param.shape)}`);
      }
      param.sameDevice(t, where);
      void t.buffer; // throws now, naming the tensor, if it was released
    }
    for (const i of steps.keys()) {
      for (const name of this.stateNames(this.#groupOf(i))) {
        if (!(`${i}.${name}` in sd.tensors)) throw new Error(`${where}: missing tensor "${i}.${name}"`);
      }
    }
    // Valid: apply.
    this.paramGroups.forEach((g, j) => (g.lr = sd.scalars[`param_groups.${j}.lr`]));
    this.#params.forEach((p, i) => {
      const step = steps.get(i);
      const old = this.#state[i];
      if (step === undefined) {
        for (const t of Object.values(old?.tensors ?? {})) t.dispose();
        this.#state[i] = undefined;
        return;
      }
      const st: ParamState = { step, tensors: {} };
      const param = p.data;
      for (const name of this.stateNames(this.#groupOf(i))) {
        const src = sd.tensors[`${i}.${name}`];
        const dst = old?.tensors[name] ?? this.#newState(i, name, false);
        if (src.buffer !== dst.buffer || src.byteOffset !== dst.byteOffset) {
          param.device.copy(src.buffer, src.byteOffset, dst.buffer, dst.byteOffset, param.numel * 4);
        }
        st.tensors[name] = dst;
      }
      for (const [name, t] of Object.entries(old?.tensors ?? {})) if (!(name in st.tensors)) t.dispose();
      this.#state[i] = st;
    });
  }

  #groupOf(i: number): ParamGroup<O> {
    let k = i;
    for (const g of this.paramGroups) {
      if (k < g.params.length) return g;
      k -= g.params.length;
    }
    throw new RangeError(`${this.name}: parameter index ${i} out of range`);
  }

  #group(i: number, op: string): ParamGroup<O> {
    if (!Number.isInteger(i) || i < 0 || i >= this.paramGroups.length) {
      throw new RangeError(
        `${this.name}.${op}: group index must be an integer in [0, ${this.paramGroups.length - 1}], got ${i}`,
      );
    }
    return this.paramGroups[i];
  }

  #describe(i: number): string {
    const name = this.#params[i].name;
    return `parameter ${i}${name ? ` ("${name}")` : ""}`;
  }
}
