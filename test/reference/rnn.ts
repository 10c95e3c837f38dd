/**
 * Float64 references of PyTorch's LSTM and GRU (multi-layer, unidirectional, no dropout)
 * with the gradients of every weight, the input and the initial states. Never imports src/.
 *
 * Layouts are PyTorch's: x [T, B, I], h0/c0 [L, B, H], weight_ih [G, I], weight_hh [G, H],
 * biases [G], G = 4H (LSTM gates i, f, g, o) or 3H (GRU gates r, z, n).
 */

export type RnnKind = "lstm" | "gru";

/** One layer's weights (biases absent for `bias=False`). */
export interface RnnLayerWeights {
  wih: ArrayLike<number>;
  whh: ArrayLike<number>;
  bih?: ArrayLike<number>;
  bhh?: ArrayLike<number>;
}

/** Gradients of one layer's weights. */
export interface RnnLayerGrads {
  wih: Float64Array;
  whh: Float64Array;
  bih: Float64Array;
  bhh: Float64Array;
}

/** Sizes of a run. */
export interface RnnDims {
  steps: number;
  batch: number;
  input: number;
  hidden: number;
}

/** What {@link rnnRef} returns: outputs and gradients of L = Σ y·dy + Σ hn·dhn (+ Σ cn·dcn). */
export interface RnnRefResult {
  y: Float64Array;
  hn: Float64Array;
  cn: Float64Array;
  dx: Float64Array;
  dh0: Float64Array;
  dc0: Float64Array;
  layers: RnnLayerGrads[];
}

const sig = (v: number) => 1 / (1 + Math.exp(-v));

interface LayerRun {
  y: Float64Array; // [T, B, H]
  hn: Float64Array;
  cn: Float64Array;
  dx: Float64Array; // [T, B, I]
  dh0: Float64Array;
  dc0: Float64Array;
  g: RnnLayerGrads;
}

/** One layer forward, then (given dy [T,B,H], dhn, dcn) backward through time. */
function layer(
  kind: RnnKind,
  d: RnnDims,
  inSize: number,
  w: RnnLayerWeights,
  x: ArrayLike<number>,
  h0: ArrayLike<number>,
  c0: ArrayLike<number>,
  dy: ArrayLike<number>,
  dhn: ArrayLike<number>,
  dcn: ArrayLike<number>,
): LayerRun {
  const { steps: T, batch: B, hidden: H } = d;
  const K = kind === "lstm" ? 4 : 3, G = K * H;
  const bih = (k: number) => (w.bih ? w.bih[k] : 0), bhh = (k: number) => (w.bhh ? w.bhh[k] : 0);
  // Pre-activations split into the input part (ax) and the recurrent part (ah) per step.
  const hs = new Float64Array((T + 1) * B * H), cs = new Float64Array((T + 1) * B * H);
  const ax = new Float64Array(T * B * G), ah = new Float64Array(T * B * G);
  hs.set(Array.from(h0));
  cs.set(Array.from(c0));
  for (let t = 0; t < T; t++) {
    for (let b = 0; b < B; b++) {
      const hp = (j: number) => hs[(t * B + b) * H + j];
      for (let k = 0; k < G; k++) {
        let sx = bih(k), sh = bhh(k);
        for (let i = 0; i < inSize; i++) sx += w.wih[k * inSize + i] * x[(t * B + b) * inSize + i];
        for (let j = 0; j < H; j++) sh += w.whh[k * H + j] * hp(j);
        ax[(t * B + b) * G + k] = sx;
        ah[(t * B + b) * G + k] = sh;
      }
      for (let j = 0; j < H; j++) {
        const at = (k: number) => (t * B + b) * G + k * H + j;
        const o = ((t + 1) * B + b) * H + j;
        if (kind === "lstm") {
          const [i, f, g, og] = [0, 1, 2, 3].map((k) => ax[at(k)] + ah[at(k)]);
          const c = sig(f) * cs[(t * B + b) * H + j] + sig(i) * Math.tanh(g);
          cs[o] = c;
          hs[o] = sig(og) * Math.tanh(c);
        } else {
          const r = sig(ax[at(0)] + ah[at(0)]), z = sig(ax[at(1)] + ah[at(1)]);
          const n = Math.tanh(ax[at(2)] + r * ah[at(2)]);
          hs[o] = (1 - z) * n + z * hp(j);
        }
      }
    }
  }
  const y = hs.slice(B * H), hn = hs.slice(T * B * H), cn = cs.slice(T * B * H);
  // Backward through time: dh and dc carried from step t + 1 to t.
  const dx = new Float64Array(T * B * inSize);
  const g: RnnLayerGrads = {
    wih: new Float64Array(G * inSize),
    whh: new Float64Array(G * H),
    bih: new Float64Array(G),
    bhh: new Float64Array(G),
  };
  let dh = Float64Array.from(dhn), dc = Float64Array.from(dcn);
  for (let t = T - 1; t >= 0; t--) {
    const dhPrev = new Float64Array(B * H), dcPrev = new Float64Array(B * H);
    for (let b = 0; b < B; b++) {
      const dax = new Float64Array(G), dah = new Float64Array(G); // gradients of ax and ah
      for (let j = 0; j < H; j++) {
        const at = (k: number) => (t * B + b) * G + k * H + j;
        const e = b * H + j;
        const dht = dh[e] + dy[(t * B + b) * H + j];
        const hp = hs[(t * B + b) * H + j];
        if (kind === "lstm") {
          const [i, f, gg, o] = [0, 1, 2, 3].map((k) => ax[at(k)] + ah[at(k)]);
          const si = sig(i), sf = sig(f), tg = Math.tanh(gg), so = sig(o);
          const c = cs[((t + 1) * B + b) * H + j], cp = cs[(t * B + b) * H + j], tc = Math.tanh(c);
          const dct = dc[e] + dht * so * (1 - tc * tc);
          const pre = [
            dct * tg * si * (1 - si),
            dct * cp * sf * (1 - sf),
            dct * si * (1 - tg * tg),
            dht * tc * so * (1 - so),
          ];
          for (let k = 0; k < 4; k++) dax[k * H + j] = dah[k * H + j] = pre[k];
          dcPrev[e] = dct * sf;
        } else {
          const r = sig(ax[at(0)] + ah[at(0)]), z = sig(ax[at(1)] + ah[at(1)]);
          const n = Math.tanh(ax[at(2)] + r * ah[at(2)]);
          const dn = dht * (1 - z) * (1 - n * n);
          const dz = dht * (hp - n) * z * (1 - z);
          const dr = dn * ah[at(2)] * r * (1 - r);
          dax[j] = dah[j] = dr;
          dax[H + j] = dah[H + j] = dz;
          dax[2 * H + j] = dn;
          dah[2 * H + j] = dn * r;
          dhPrev[e] += dht * z;
        }
      }
      for (let k = 0; k < G; k++) {
        g.bih[k] += dax[k];
        g.bhh[k] += dah[k];
        for (let i = 0; i < inSize; i++) {
          g.wih[k * inSize + i] += dax[k] * x[(t * B + b) * inSize + i];
          dx[(t * B + b) * inSize + i] += dax[k] * w.wih[k * inSize + i];
        }
        for (let j = 0; j < H; j++) {
          g.whh[k * H + j] += dah[k] * hs[(t * B + b) * H + j];
          dhPrev[b * H + j] += dah[k] * w.whh[k * H + j];
        }
      }
    }
    dh = dhPrev;
    dc = dcPrev;
  }
  return { y, hn, cn, dx, dh0: dh, dc0: dc, g };
}

/**
 * A multi-layer LSTM or GRU (PyTorch's torch.nn.LSTM / GRU, `batch_first=False`, no dropout)
 * forward, and the gradients of L = Σ y·dy + Σ h_n·dhn (+ Σ c_n·dcn for LSTM) with respect to
 * x, h0, c0 and every layer's weights. `c0`/`dcn` are ignored for GRU (pass empty arrays).
 */
export function rnnRef(
  kind: RnnKind,
  d: RnnDims,
  layers: readonly RnnLayerWeights[],
  x: ArrayLike<number>,
  h0: ArrayLike<number>,
  c0: ArrayLike<number>,
  dy: ArrayLike<number>,
  dhn: ArrayLike<number>,
  dcn: ArrayLike<number>,
): RnnRefResult {
  const { steps: T, batch: B, hidden: H } = d;
  const L = layers.length, S = B * H;
  const part = (a: ArrayLike<number>, k: number) =>
    a.length ? Array.prototype.slice.call(a, k * S, (k + 1) * S) as number[] : new Array<number>(S).fill(0);
  const inputs: ArrayLike<number>[] = [x];
  const zerosY = new Float64Array(T * S);
  for (let k = 0; k < L; k++) {
    const size = k === 0 ? d.input : H;
    const run = layer(
      kind,
      d,
      size,
      layers[k],
      inputs[k],
      part(h0, k),
      part(c0, k),
      zerosY,
      part(dhn, k),
      part(dcn, k),
    );
    inputs.push(run.y);
  }
  const hn = new Float64Array(L * S), cn = new Float64Array(L * S);
  const dh0 = new Float64Array(L * S), dc0 = new Float64Array(L * S);
  const grads: RnnLayerGrads[] = new Array(L);
  let dyk: ArrayLike<number> = dy, dx: Float64Array = new Float64Array(0);
  for (let k = L - 1; k >= 0; k--) {
    const size = k === 0 ? d.input : H;
    const run = layer(kind, d, size, layers[k], inputs[k], part(h0, k), part(c0, k), dyk, part(dhn, k), part(dcn, k));
    hn.set(run.hn, k * S);
    cn.set(run.cn, k * S);
    dh0.set(run.dh0, k * S);
    dc0.set(run.dc0, k * S);
    grads[k] = run.g;
    dyk = dx = run.dx;
  }
  return { y: inputs[L] as Float64Array, hn, cn, dx, dh0, dc0, layers: grads };
}
