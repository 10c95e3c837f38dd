/**
 * Recurrent layers with PyTorch's semantics, parameter names and default initialisation:
 * LSTM and GRU (multi-layer, `batchFirst`, dropout between layers, bidirectional); their
 * cells are ./rnn_cell.ts. A reverse direction runs the same ops on the sequence flipped in
 * time (an indexSelect), and its output is flipped back beside the forward one.
 *
 * A layer is one matmul for the input projections of all steps (x·W_ihᵀ + b_ih, on the tape
 * as a `linear`) and one recurrence op (src/tensor/ops/rnn.ts): per step a matmul
 * h·W_hhᵀ + b_hh and one fused gate kernel, backward through time in the op itself.
 */
import { apply, cat, Parameter, Variable } from "../autograd/mod.ts";
import { Device } from "../gpu/mod.ts";
import * as T from "../tensor/mod.ts";
import { fmt, nextSeed } from "../tensor/mod.ts";
import { uniform } from "./init.ts";
import { checkPositiveInt, type LayerOptions } from "./layer_options.ts";
import { Module } from "./module.ts";

/** Options of {@link LSTM} and {@link GRU} (PyTorch's keyword arguments). */
export interface RnnOptions extends LayerOptions {
  /** Stacked layers, each feeding its output sequence to the next. Default 1. */
  numLayers?: number;
  /** Use b_ih and b_hh. Default true. */
  bias?: boolean;
  /** Input and output are [batch, seq, feature] instead of [seq, batch, feature]. Default false. */
  batchFirst?: boolean;
  /** Dropout probability on each layer's output except the last, in training mode. In [0, 1); default 0. */
  dropout?: number;
  /**
   * Each layer also runs the sequence backwards with weights of its own (`*_l{k}_reverse`);
   * its output is both directions' h side by side ([…, 2·hiddenSize]) and the states are
   * [2·numLayers, batch, hiddenSize], forward then reverse per layer. Default false.
   */
  bidirectional?: boolean;
}

/** LSTM state: hidden and cell, [numLayers · directions, batch, hidden] for {@link LSTM}, [batch, hidden] for LSTMCell (./rnn_cell.ts). */
export interface LstmState {
  /** Hidden state h (PyTorch's h_n / h_0): the output side of the recurrence. */
  h: Variable;
  /** Cell state c (PyTorch's c_n / c_0), the same shape as h. */
  c: Variable;
}

/** One layer's parameters, PyTorch's shapes: weight_ih [G, in], weight_hh [G, H], biases [G]. */
export interface Weights {
  wih: Parameter;
  whh: Parameter;
  bih?: Parameter;
  bhh?: Parameter;
}

/**
 * Create and register one layer's parameters under `weight_ih<suffix>`, ... with PyTorch's
 * init U(−1/√H, 1/√H) for every one of them (`reset_parameters` of RNNBase and RNNCellBase).
 */
export function makeWeights(
  m: Module,
  suffix: string,
  gates: number,
  inSize: number,
  hidden: number,
  bias: boolean,
  options: LayerOptions,
  seedAt: number,
): Weights {
  const device = options.device ?? Device.default;
  const bound = 1 / Math.sqrt(hidden);
  const make = (name: string, shape: number[], i: number) => {
    const p = m.registerParameter(`${name}${suffix}`, new Parameter(T.zeros(shape, { device }), `${name}${suffix}`));
    uniform(p, -bound, bound, options.seed === undefined ? nextSeed() : (options.seed + seedAt + i) >>> 0);
    return p;
  };
  const w: Weights = {
    wih: make("weight_ih", [gates * hidden, inSize], 0),
    whh: make("weight_hh", [gates * hidden, hidden], 1),
  };
  if (bias) {
    w.bih = make("bias_ih", [gates * hidden], 2);
    w.bhh = make("bias_hh", [gates * hidden], 3);
  }
  return w;
}

/**
 * One layer over a sequence x [T, B, in]: the input projection of all steps (one linear),
 * then the recurrence. Returns the recurrence's output (LSTM [T + 1, B, H]: h_1..h_T then c_T;
 * GRU [T, B, H]).
 */
export function runLayer(mode: T.RnnMode, x: Variable, w: Weights, h0: Variable, c0?: Variable): Variable {
  const gx = apply(T.linearOp, w.bih ? [x, w.wih, w.bih] : [x, w.wih], undefined);
  const inputs = [gx, w.whh, ...(w.bhh ? [w.bhh] : []), h0, ...(c0 ? [c0] : [])];
  return apply(mode === "lstm" ? T.lstmRecurrenceOp : T.gruRecurrenceOp, inputs, { bias: !!w.bhh });
}

export const zerosLike = (shape: number[], device: Device) => new Variable(T.zeros(shape, { device }));

/** Shared body of {@link LSTM} and {@link GRU}. */
export abstract class RnnBase extends Module {
  /** Stacked layers (`options.numLayers`, default 1). */
  readonly numLayers: number;
  /** Whether the layers have b_ih and b_hh (`options.bias`, default true). */
  readonly bias: boolean;
  /** Input and output are [batch, seq, feature] rather than [seq, batch, feature] (default false). */
  readonly batchFirst: boolean;
  /** Dropout probability on each layer's output but the last's, in training (default 0). */
  readonly dropout: number;
  /** Whether each layer also runs the sequence backwards (default false); see {@link directions}. */
  readonly bidirectional: boolean;
  /** Per layer, its forward direction's weights then (bidirectional) its reverse's. */
  readonly #layers: Weights[][] = [];

  /**
   * Register every layer's parameters in PyTorch's order, init U(−1/√H, 1/√H), seeded by `options.seed`.
   * @throws {RangeError} For sizes that are not integers >= 1 or dropout outside [0, 1).
   */
  constructor(
    /** "lstm" (4 gates) or "gru" (3 gates). */
    readonly mode: T.RnnMode,
    /** Features of each input step, the last dim of x. */
    readonly inputSize: number,
    /** Features H of h (and c): the output's last dim, ·2 when bidirectional. */
    readonly hiddenSize: number,
    options: RnnOptions,
  ) {
    super();
    const name = mode === "lstm" ? "LSTM" : "GRU";
    checkPositiveInt(name, "inputSize", inputSize);
    checkPositiveInt(name, "hiddenSize", hiddenSize);
    this.numLayers = options.numLayers ?? 1;
    checkPositiveInt(name, "numLayers", this.numLayers);
    this.dropout = options.dropout ?? 0;
    if (!(this.dropout >= 0 && this.dropout < 1)) {
      throw new RangeError(`${name}: dropout must be in [0, 1), got ${options.dropout}`);
    }
    this.bias = options.bias ?? true;
    this.batchFirst = options.batchFirst ?? false;
    this.bidirectional = options.bidirectional ?? false;
    const gates = mode === "lstm" ? 4 : 3, dirs = this.directions;
    for (let k = 0; k < this.numLayers; k++) {
      const inSize = k === 0 ? inputSize : dirs * hiddenSize;
      // PyTorch's parameter order: weight_ih, weight_hh, bias_ih, bias_hh of l{k}, then of l{k}_reverse.
      this.#layers.push(
        Array.from({ length: dirs }, (_, d) =>
          makeWeights(this, `_l${k}${d ? "_reverse" : ""}`, gates, inSize, hiddenSize, this.bias, options, 4 * (k * dirs + d))),
      );
    }
  }

  /** 2 when bidirectional, else 1: the states hold numLayers · directions rows. */
  get directions(): number {
    return this.bidirectional ? 2 : 1;
  }

  /** Run every layer; `h0`/`c0` are [numLayers · directions, B, H] or absent (zeros). */
  protected run(x: Variable, h0?: Variable, c0?: Variable): { output: Variable; h: Variable; c?: Variable } {
    const name = this.constructor.name;
    if ((x.ndim !== 2 && x.ndim !== 3) || x.shape[x.ndim - 1] !== this.inputSize) {
      const layout = this.batchFirst ? `[batch, seq, ${this.inputSize}]` : `[seq, batch, ${this.inputSize}]`;
      throw new RangeError(
        `${name}(${this.inputSize}, ${this.hiddenSize}): input must be ${layout} or unbatched [seq, ${this.inputSize}], got ${
          fmt(x.shape)
        }`,
      );
    }
    if (x.ndim === 2) {
      // Unbatched, as PyTorch: x [seq, inputSize], states [numLayers, hiddenSize].
      const r = this.run(x.unsqueeze(this.batchFirst ? 0 : 1), h0?.unsqueeze(1), c0?.unsqueeze(1));
      return { output: r.output.squeeze(this.batchFirst ? 0 : 1), h: r.h.squeeze(1), c: r.c?.squeeze(1) };
    }
    const seq = this.batchFirst ? x.transpose(0, 1) : x;
    const [steps, batch] = seq.shape;
    const H = this.hiddenSize, L = this.numLayers, D = this.directions;
    for (const [label, s] of [["h0", h0], ["c0", c0]] as const) {
      if (s && (s.ndim !== 3 || s.shape[0] !== L * D || s.shape[1] !== batch || s.shape[2] !== H)) {
        const rows = D === 1 ? "numLayers" : "2·numLayers (bidirectional)";
        throw new RangeError(
          `${name}: ${label} must be [${rows}, batch, hiddenSize] = [${L * D}, ${batch}, ${H}], got ${fmt(s.shape)}`,
        );
      }
    }
    const device = this.parameters()[0].data.device;
    const zero = !h0 || (this.mode === "lstm" && !c0) ? zerosLike([batch, H], device) : undefined;
    const layerOf = (
      s: Variable | undefined,
      k: number,
    ) => (s ? (L * D === 1 ? s : s.narrow(0, k, 1)).reshape([batch, H]) : zero!);
    // The reverse direction runs the sequence flipped in time, and its output is flipped back.
    const reversed = D === 2 ? T.fromArray(Int32Array.from({ length: steps }, (_, t) => steps - 1 - t), [steps], { device, dtype: "i32" }) : undefined;
    const flip = (v: Variable) => (steps === 1 ? v : v.indexSelect(0, reversed!));
    const hs: Variable[] = [], cs: Variable[] = [];
    let inp = seq;
    for (let k = 0; k < L; k++) {
      const outs: Variable[] = [];
      for (let d = 0; d < D; d++) {
        const row = k * D + d;
        const out = runLayer(
          this.mode,
          d ? flip(inp) : inp,
          this.#layers[k][d],
          layerOf(h0, row),
          this.mode === "lstm" ? layerOf(c0, row) : undefined,
        );
        const hSeq = this.mode === "lstm" ? out.narrow(0, 0, steps) : out;
        outs.push(d ? flip(hSeq) : hSeq);
        hs.push(steps === 1 && this.mode === "gru" ? out : out.narrow(0, steps - 1, 1));
        if (this.mode === "lstm") cs.push(out.narrow(0, steps, 1));
      }
      inp = D === 1 ? outs[0] : cat(outs, 2);
      if (this.training && this.dropout > 0 && k < L - 1) {
        inp = apply(T.dropoutOp, [inp], { p: this.dropout, training: true, seed: nextSeed() });
      }
    }
    const stackOf = (vs: Variable[]) => (vs.length === 1 ? vs[0] : cat(vs, 0));
    return {
      output: this.batchFirst ? inp.transpose(0, 1) : inp,
      h: stackOf(hs),
      c: this.mode === "lstm" ? stackOf(cs) : undefined,
    };
  }

  /** `inputSize, hiddenSize` and the options that differ from PyTorch's defaults, for the module tree's printout. */
  override extraRepr(): string {
    const extra = [
      this.numLayers !== 1 ? `num_layers=${this.numLayers}` : "",
      this.bias ? "" : "bias=false",
      this.batchFirst ? "batch_first=true" : "",
      this.dropout ? `dropout=${this.dropout}` : "",
      this.bidirectional ? "bidirectional=true" : "",
    ].filter(Boolean);
    return [`${this.inputSize}, ${this.hiddenSize}`, ...extra].join(", ");
  }
}

/**
 * Multi-layer LSTM with PyTorch's semantics (torch.nn.LSTM, either direction or both, no projection):
 * gates i, f, g, o; parameters `weight_ih_l{k}` [4H, in], `weight_hh_l{k}` [4H, H],
 * `bias_ih_l{k}`, `bias_hh_l{k}` [4H] (and `*_l{k}_reverse` when bidirectional, whose layers
 * above the first take 2H inputs), all initialised U(−1/√H, 1/√H), so PyTorch state dicts
 * load by name. Dropout (training only) on every layer's output but the last.
 *
 * Dispatches per time step and layer: 2 forward (h·W_hhᵀ + b_hh, fused gates), 2 backward.
 * @throws {RangeError} For sizes that are not integers >= 1 or dropout outside [0, 1).
 * @example
 * ```ts
 * import { Device, LSTM, Variable } from "../index.ts";
 * import { ops } from "../engine.ts";
 * await Device.request();
 * const lstm = new LSTM(7, 9, { numLayers: 2 });
 * const { output, h, c } = lstm.forwardSeq(new Variable(ops.randn([5, 3, 7])));
 * console.log(output.shape, h.shape, c.shape); // [5, 3, 9] [2, 3, 9] [2, 3, 9]
 * ```
 */
export class LSTM extends RnnBase {
  /**
   * An LSTM from `inputSize` features to `hiddenSize`; options as PyTorch's (numLayers 1, bias,
   * batchFirst false, dropout 0, bidirectional false).
   * @throws {RangeError} For sizes that are not integers >= 1 or dropout outside [0, 1).
   */
  constructor(inputSize: number, hiddenSize: number, options: RnnOptions = {}) {
    super("lstm", inputSize, hiddenSize, options);
  }

  /**
   * Run the sequence (flodl's `forward_seq`; PyTorch's `lstm(x, (h0, c0))`).
   * @param x [seq, batch, inputSize], or [batch, seq, inputSize] with `batchFirst`; unbatched
   *   [seq, inputSize] as in PyTorch (states and results then lose the batch dim).
   * @param state Initial h and c, each [numLayers · directions, batch, hiddenSize]; zeros when absent.
   * @returns The last layer's h at every step (shaped as x, with hiddenSize features) and the
   *   final h and c of every layer and direction, [numLayers · directions, batch, hiddenSize].
   * @throws {RangeError} When x or the state has the wrong shape (both shapes shown).
   */
  forwardSeq(x: Variable, state?: LstmState): { output: Variable; h: Variable; c: Variable } {
    const r = this.run(x, state?.h, state?.c);
    return { output: r.output, h: r.h, c: r.c! };
  }

  /** The output sequence only (the Module contract; use {@link forwardSeq} for the final state). */
  forward(x: Variable, state?: LstmState): Variable {
    return this.forwardSeq(x, state).output;
  }
}

/**
 * Multi-layer GRU with PyTorch's semantics (torch.nn.GRU, either direction or both): gates r, z, n with
 * n = tanh(W_in x + b_in + r·(W_hn h + b_hn)); parameters `weight_ih_l{k}` [3H, in],
 * `weight_hh_l{k}` [3H, H], `bias_ih_l{k}`, `bias_hh_l{k}` [3H] (and `*_l{k}_reverse`),
 * initialised U(−1/√H, 1/√H).
 *
 * Dispatches per time step and layer: 2 forward, 2 backward.
 * @throws {RangeError} For sizes that are not integers >= 1 or dropout outside [0, 1).
 * @example
 * ```ts
 * import { Device, GRU, Variable } from "../index.ts";
 * import { ops } from "../engine.ts";
 * await Device.request();
 * const gru = new GRU(7, 9, { batchFirst: true });
 * const { output, h } = gru.forwardSeq(new Variable(ops.randn([3, 5, 7])));
 * console.log(output.shape, h.shape); // [3, 5, 9] [1, 3, 9]
 * ```
 */
export class GRU extends RnnBase {
  /**
   * A GRU from `inputSize` features to `hiddenSize`; options as PyTorch's (numLayers 1, bias,
   * batchFirst false, dropout 0, bidirectional false).
   * @throws {RangeError} For sizes that are not integers >= 1 or dropout outside [0, 1).
   */
  constructor(inputSize: number, hiddenSize: number, options: RnnOptions = {}) {
    super("gru", inputSize, hiddenSize, options);
  }

  /**
   * Run the sequence (flodl's `forward_seq`; PyTorch's `gru(x, h0)`).
   * @param x [seq, batch, inputSize], or [batch, seq, inputSize] with `batchFirst`; unbatched
   *   [seq, inputSize] as in PyTorch (h0 and results then lose the batch dim).
   * @param h0 Initial hidden state [numLayers · directions, batch, hiddenSize]; zeros when absent.
   * @returns The last layer's h at every step and the final h of every layer and direction
   *   [numLayers · directions, batch, hiddenSize].
   * @throws {RangeError} When x or h0 has the wrong shape (both shapes shown).
   */
  forwardSeq(x: Variable, h0?: Variable): { output: Variable; h: Variable } {
    const r = this.run(x, h0);
    return { output: r.output, h: r.h };
  }

  /** The output sequence only (the Module contract; use {@link forwardSeq} for the final state). */
  forward(x: Variable, h0?: Variable): Variable {
    return this.forwardSeq(x, h0).output;
  }
}
