/**
 * LSTMCell and GRUCell (PyTorch's semantics, names and init): one step is the layer's
 * recurrence of length 1 (./rnn.ts), so stepping a cell in a loop backpropagates through
 * the tape.
 */
import type { Variable } from "../autograd/mod.ts";
import type * as T from "../tensor/mod.ts";
import { fmt } from "../tensor/mod.ts";
import type { LayerOptions } from "./layer_options.ts";
import { Module } from "./module.ts";
import { checkPositiveInt } from "./layer_options.ts";
import { type LstmState, makeWeights, runLayer, type Weights, zerosLike } from "./rnn.ts";

/** Options of {@link LSTMCell} and {@link GRUCell}. */
export interface RnnCellOptions extends LayerOptions {
  /** Use b_ih and b_hh. Default true. */
  bias?: boolean;
}

/** Shared body of the cells: one step is a recurrence of length 1. */
export abstract class CellBase extends Module {
  /** Whether the cell has b_ih and b_hh (`options.bias`, default true). */
  readonly bias: boolean;
  readonly #w: Weights;
  /**
   * Register `weight_ih`, `weight_hh` (and the biases), init U(−1/√H, 1/√H), seeded by `options.seed`.
   * @throws {RangeError} When inputSize or hiddenSize is not an integer >= 1.
   */
  constructor(
    /** "lstm" (4 gates) or "gru" (3 gates). */
    readonly mode: T.RnnMode,
    /** Features of x, its last dim. */
    readonly inputSize: number,
    /** Features H of h (and c). */
    readonly hiddenSize: number,
    options: RnnCellOptions,
  ) {
    super();
    const name = mode === "lstm" ? "LSTMCell" : "GRUCell";
    checkPositiveInt(name, "inputSize", inputSize);
    checkPositiveInt(name, "hiddenSize", hiddenSize);
    this.bias = options.bias ?? true;
    this.#w = makeWeights(this, "", mode === "lstm" ? 4 : 3, inputSize, hiddenSize, this.bias, options, 0);
  }

  /**
   * One step of x [batch, inputSize] from h (and c) [batch, hiddenSize], zeros when absent: the
   * recurrence's raw output, [1, batch, H] (GRU: h) or [2, batch, H] (LSTM: h then c).
   * @throws {RangeError} When x or a state has the wrong shape (both shapes shown).
   */
  protected step(x: Variable, h?: Variable, c?: Variable): Variable {
    const name = this.constructor.name, H = this.hiddenSize;
    if (x.ndim !== 2 || x.shape[1] !== this.inputSize) {
      throw new RangeError(
        `${name}(${this.inputSize}, ${H}): input must be [batch, ${this.inputSize}] or unbatched [${this.inputSize}], got ${
          fmt(x.shape)
        }`,
      );
    }
    const batch = x.shape[0];
    for (const [label, s] of [["h", h], ["c", c]] as const) {
      if (s && (s.ndim !== 2 || s.shape[0] !== batch || s.shape[1] !== H)) {
        throw new RangeError(
          `${name}: state ${label} must be [batch, hiddenSize] = [${batch}, ${H}], got ${fmt(s.shape)}`,
        );
      }
    }
    const device = this.#w.wih.data.device;
    const zero = !h || (this.mode === "lstm" && !c) ? zerosLike([batch, H], device) : undefined;
    return runLayer(
      this.mode,
      x.reshape([1, batch, this.inputSize]),
      this.#w,
      h ?? zero!,
      this.mode === "lstm" ? c ?? zero : undefined,
    );
  }

  /** `inputSize, hiddenSize`, and `bias=false` when so, for the module tree's printout. */
  override extraRepr(): string {
    return `${this.inputSize}, ${this.hiddenSize}${this.bias ? "" : ", bias=false"}`;
  }
}

/**
 * One LSTM step (torch.nn.LSTMCell): parameters `weight_ih` [4H, in], `weight_hh` [4H, H],
 * `bias_ih`, `bias_hh` [4H], initialised U(−1/√H, 1/√H). Backward through time runs through
 * the tape across steps. 5 dispatches a step (input projection, recurrent matmul, fused gates,
 * and two copies splitting h from c).
 * @example
 * ```ts
 * import { Device, LSTMCell, Variable } from "../index.ts";
 * import { ops } from "../engine.ts";
 * await Device.request();
 * const cell = new LSTMCell(7, 9);
 * let state = cell.forwardStep(new Variable(ops.randn([3, 7])));
 * state = cell.forwardStep(new Variable(ops.randn([3, 7])), state);
 * console.log(state.h.shape, state.c.shape); // [3, 9] [3, 9]
 * ```
 */
export class LSTMCell extends CellBase {
  /**
   * An LSTM cell from `inputSize` features to `hiddenSize`, with biases unless `bias: false`.
   * @throws {RangeError} When inputSize or hiddenSize is not an integer >= 1.
   */
  constructor(inputSize: number, hiddenSize: number, options: RnnCellOptions = {}) {
    super("lstm", inputSize, hiddenSize, options);
  }

  /**
   * One step (PyTorch's `cell(x, (h, c))`).
   * @param x [batch, inputSize], or unbatched [inputSize] (state and results then [hiddenSize]).
   * @param state h and c, each [batch, hiddenSize]; zeros when absent.
   * @returns The next h and c.
   * @throws {RangeError} When x or the state has the wrong shape (both shapes shown).
   */
  forwardStep(x: Variable, state?: LstmState): LstmState {
    if (x.ndim === 1) {
      // Unbatched, as PyTorch: x [inputSize], h and c [hiddenSize].
      const r = this.forwardStep(x.unsqueeze(0), state && { h: state.h.unsqueeze(0), c: state.c.unsqueeze(0) });
      return { h: r.h.squeeze(0), c: r.c.squeeze(0) };
    }
    const out = this.step(x, state?.h, state?.c); // [2, B, H]: h then c
    const shape = [x.shape[0], this.hiddenSize];
    return { h: out.narrow(0, 0, 1).reshape(shape), c: out.narrow(0, 1, 1).reshape(shape) };
  }

  /** The next h only (the Module contract). */
  forward(x: Variable, state?: LstmState): Variable {
    return this.forwardStep(x, state).h;
  }
}

/**
 * One GRU step (torch.nn.GRUCell): parameters `weight_ih` [3H, in], `weight_hh` [3H, H],
 * `bias_ih`, `bias_hh` [3H], initialised U(−1/√H, 1/√H). 3 dispatches a step.
 * @example
 * ```ts
 * import { Device, GRUCell, Variable } from "../index.ts";
 * import { ops } from "../engine.ts";
 * await Device.request();
 * const cell = new GRUCell(7, 9);
 * const h = cell.forward(new Variable(ops.randn([3, 7])));
 * console.log(h.shape); // [3, 9]
 * ```
 */
export class GRUCell extends CellBase {
  /**
   * A GRU cell from `inputSize` features to `hiddenSize`, with biases unless `bias: false`.
   * @throws {RangeError} When inputSize or hiddenSize is not an integer >= 1.
   */
  constructor(inputSize: number, hiddenSize: number, options: RnnCellOptions = {}) {
    super("gru", inputSize, hiddenSize, options);
  }

  /**
   * One step (PyTorch's `cell(x, h)`).
   * @param x [batch, inputSize], or unbatched [inputSize] (h and the result then [hiddenSize]).
   * @param h [batch, hiddenSize]; zeros when absent.
   * @returns The next h [batch, hiddenSize].
   * @throws {RangeError} When x or h has the wrong shape (both shapes shown).
   */
  forwardStep(x: Variable, h?: Variable): Variable {
    if (x.ndim === 1) return this.forwardStep(x.unsqueeze(0), h?.unsqueeze(0)).squeeze(0); // unbatched, as PyTorch
    return this.step(x, h).reshape([x.shape[0], this.hiddenSize]);
  }

  /** Same as {@link forwardStep} (the Module contract). */
  forward(x: Variable, h?: Variable): Variable {
    return this.forwardStep(x, h);
  }
}
