/**
 * A `foreach` parameter group packed into flat buffers (PyTorch's multi-tensor optimizers):
 * the parameters, their gradients and each state tensor live at the same element offsets of
 * one buffer each, so one dispatch updates the whole group, one clear zeroes its gradients.
 *
 * Each parameter is a view (`Tensor.view`) at an offset aligned to the device's
 * `minStorageBufferOffsetAlignment`, so every op (and the per-tensor update, the fallback)
 * binds it as its own range; the padding between views is zero and no kernel writes it.
 */
import type { Parameter } from "../autograd/mod.ts";
import { fromArray, Tensor } from "../tensor/mod.ts";
import { MULTI_WG, segmentRows, type Segments } from "./kernel.ts";

export class PackedGroup {
  readonly offsets: number[] = [];
  /** Flat parameter values; `params[k].data` is a view of it. */
  readonly values: Tensor;
  /** Flat gradients; `params[k].gradHome` is a view of it. */
  readonly grads: Tensor;
  /** The segment table of the multi-tensor entries; null when every parameter is empty. */
  readonly segments: Segments | null;
  readonly #state = new Map<string, Tensor>();
  readonly #total: number;

  constructor(readonly params: readonly Parameter[], where: string) {
    const device = params[0].data.device;
    const align = device.limits.minStorageBufferOffsetAlignment / 4;
    let total = 0;
    for (const p of params) {
      p.data.sameDevice(params[0].data, where);
      this.offsets.push(total);
      total += Math.max(1, Math.ceil(p.data.numel / align)) * align;
    }
    this.#total = total;
    this.values = this.#arena(`${where}.params`);
    this.grads = this.#arena(`${where}.grads`);
    params.forEach((p, k) => {
      const old = p.data;
      const view = Tensor.view(this.values, this.offsets[k], old.shape, old.origin).keep();
      device.copy(old.buffer, old.byteOffset, view.buffer, view.byteOffset, old.byteLength);
      p.data = view;
      old.dispose(); // a freed buffer is reused only after the next submit: the copy is safe
      p.gradHome?.dispose();
      p.gradHome = Tensor.view(this.grads, this.offsets[k], old.shape, "grad").keep();
      if (p.grad) {
        const g = p.grad;
        device.copy(g.buffer, g.byteOffset, p.gradHome.buffer, p.gradHome.byteOffset, g.byteLength);
        g.dispose();
        p.grad = p.gradHome.reshape(g.shape).keep();
      }
    });
    const rows = segmentRows(this.offsets, params.map((p) => p.data.numel), MULTI_WG);
    this.segments = rows.length === 0 ? null : {
      table: fromArray(rows, [rows.length], { device, dtype: "u32" }).keep(),
      workgroups: rows.length / 2,
    };
  }

  /** A zero-filled flat buffer of the group's layout. */
  #arena(origin: string): Tensor {
    const t = Tensor.empty([this.#total], { device: this.params[0].data.device }, origin).keep();
    t.device.clear(t.buffer, 0, this.#total * 4);
    return t;
  }

  /** The flat buffer of state `name` (made zero-filled on first use). */
  state(name: string): Tensor {
    let t = this.#state.get(name);
    if (!t) this.#state.set(name, t = this.#arena(`${name}`));
    return t;
  }

  /** A new kept view of parameter k's slot of state `name`, zero-filled when `zero`. */
  stateView(k: number, name: string, zero: boolean): Tensor {
    const t = Tensor.view(this.state(name), this.offsets[k], this.params[k].data.shape, name).keep();
    if (zero && t.numel > 0) t.device.clear(t.buffer, t.byteOffset, t.byteLength);
    return t;
  }

  /** True when `t` is parameter k's slot of `arena`. */
  isSlot(arena: Tensor, k: number, t: Tensor | null | undefined): boolean {
    return !!t && !t.released && t.buffer === arena.buffer && t.byteOffset === arena.byteOffset + this.offsets[k] * 4;
  }
}
