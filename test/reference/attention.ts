/**
 * Float64 references of scaled-dot-product attention and multi-head attention (PyTorch's
 * nn.MultiheadAttention layout), forward and every gradient. Never imports src/.
 */

/** Masks and dropout of {@link sdpaRef}; a nonzero mask entry hides the key. */
export interface SdpaRefOptions {
  causal?: boolean;
  /** [tq, tk] */
  attnMask?: ArrayLike<number>;
  /** [b, tk] */
  keyPaddingMask?: ArrayLike<number>;
  /** Added to the scores per (bh, i, j), [b*h*tq*tk] (already broadcast); -inf hides the key. */
  bias?: ArrayLike<number>;
  /** Multiplier z per (bh, i, j) applied to the weights (dropout keep / (1 - p)); [b*h*tq*tk]. */
  dropout?: ArrayLike<number>;
  /** Default 1/√d. */
  scale?: number;
}

/**
 * softmax(q·kᵀ·scale + bias over visible keys)·(dropout) ·v for q [b,h,tq,d], k and v
 * [b,h,tk,d], and the gradients of q, k, v and of the (broadcast) bias, dbias = dS
 * [b*h*tq*tk], for the output gradient `dout`. A row with no visible key gives 0.
 */
export function sdpaRef(
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  v: ArrayLike<number>,
  dims: { b: number; h: number; tq: number; tk: number; d: number },
  opts: SdpaRefOptions,
  dout: ArrayLike<number>,
): { o: Float64Array; dq: Float64Array; dk: Float64Array; dv: Float64Array; dbias: Float64Array } {
  const { b, h, tq, tk, d } = dims;
  const scale = opts.scale ?? 1 / Math.sqrt(d);
  const o = new Float64Array(b * h * tq * d), dq = new Float64Array(o.length);
  const dk = new Float64Array(b * h * tk * d), dv = new Float64Array(dk.length);
  const dbias = new Float64Array(b * h * tq * tk);
  const bias = (bh: number, i: number, j: number) => (opts.bias ? opts.bias[(bh * tq + i) * tk + j] : 0);
  const visible = (bh: number, i: number, j: number) =>
    !(opts.causal && j > i) && !(opts.attnMask && opts.attnMask[i * tk + j] !== 0) &&
    !(opts.keyPaddingMask && opts.keyPaddingMask[Math.floor(bh / h) * tk + j] !== 0) &&
    bias(bh, i, j) !== -Infinity;
  for (let bh = 0; bh < b * h; bh++) {
    const qr = (i: number) => (bh * tq + i) * d, kr = (j: number) => (bh * tk + j) * d;
    for (let i = 0; i < tq; i++) {
      const s = new Float64Array(tk).fill(-Infinity);
      let m = -Infinity;
      for (let j = 0; j < tk; j++) {
        if (!visible(bh, i, j)) continue;
        let acc = 0;
        for (let c = 0; c < d; c++) acc += q[qr(i) + c] * k[kr(j) + c];
        s[j] = acc * scale + bias(bh, i, j);
        m = Math.max(m, s[j]);
      }
      if (m === -Infinity) continue; // no visible key: output and gradients stay 0
      const pr = new Float64Array(tk);
      let sum = 0;
      for (let j = 0; j < tk; j++) sum += pr[j] = s[j] === -Infinity ? 0 : Math.exp(s[j] - m);
      for (let j = 0; j < tk; j++) pr[j] /= sum;
      const z = (j: number) => (opts.dropout ? opts.dropout[(bh * tq + i) * tk + j] : 1);
      for (let j = 0; j < tk; j++) {
        for (let c = 0; c < d; c++) o[qr(i) + c] += pr[j] * z(j) * v[kr(j) + c];
      }
      // Backward of this row.
      const dp = new Float64Array(tk);
      let dot = 0;
      for (let j = 0; j < tk; j++) {
        if (pr[j] === 0) continue;
        let acc = 0;
        for (let c = 0; c < d; c++) {
          acc += dout[qr(i) + c] * v[kr(j) + c];
          dv[kr(j) + c] += pr[j] * z(j) * dout[qr(i) + c];
        }
        dp[j] = acc * z(j);
        dot += pr[j] * dp[j];
      }
      for (let j = 0; j < tk; j++) {
        dbias[(bh * tq + i) * tk + j] = pr[j] * (dp[j] - dot);
        const ds = pr[j] * (dp[j] - dot) * scale;
        if (ds === 0) continue;
        for (let c = 0; c < d; c++) {
          dq[qr(i) + c] += ds * k[kr(j) + c];
          dk[kr(j) + c] += ds * q[qr(i) + c];
        }
      }
    }
  }
  return { o, dq, dk, dv, dbias };
}

/** PCG-RXS-M-XS 32-bit hash (O'Neill), the generator of the engine's dropout masks. */
function pcg(x: number): number {
  const state = (Math.imul(x >>> 0, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> ((state >>> 28) + 4)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}

/**
 * The attention dropout multipliers z for `count` counters: keep / (1 - p), with the uniform
 * u(seed, n) = (pcg(pcg(seed) + n) >> 8) / 2^24 and keep when u >= p.
 */
export function dropoutMultipliers(seed: number, p: number, count: number): Float64Array {
  const z = new Float64Array(count), s = pcg(seed);
  for (let n = 0; n < count; n++) {
    const u = (pcg((s + n) >>> 0) >>> 8) / 16777216;
    z[n] = u >= p ? 1 / (1 - p) : 0;
  }
  return z;
}

/** x [rows, in] · wᵀ + b with w [out, in], and its backward. */
function linear(
  x: ArrayLike<number>,
  rows: number,
  w: ArrayLike<number>,
  b: ArrayLike<number>,
  wRow0: number,
  inF: number,
  outF: number,
) {
  const y = new Float64Array(rows * outF);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      let acc = b[wRow0 + o];
      for (let c = 0; c < inF; c++) acc += x[r * inF + c] * w[(wRow0 + o) * inF + c];
      y[r * outF + o] = acc;
    }
  }
  return y;
}
function linearBack(
  x: ArrayLike<number>,
  rows: number,
  w: ArrayLike<number>,
  wRow0: number,
  inF: number,
  outF: number,
  dy: ArrayLike<number>,
  dx: Float64Array,
  dw: Float64Array,
  db: Float64Array,
): void {
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      const g = dy[r * outF + o];
      db[wRow0 + o] += g;
      for (let c = 0; c < inF; c++) {
        dx[r * inF + c] += g * w[(wRow0 + o) * inF + c];
        dw[(wRow0 + o) * inF + c] += g * x[r * inF + c];
      }
    }
  }
}

/** [b, t, h*d] (heads interleaved in the last dim) to [b, h, t, d], and back. */
function splitHeads(x: ArrayLike<number>, b: number, t: number, h: number, d: number): Float64Array {
  const y = new Float64Array(b * t * h * d);
  for (let bb = 0; bb < b; bb++) {
    for (let tt = 0; tt < t; tt++) {
      for (let hh = 0; hh < h; hh++) {
        for (let c = 0; c < d; c++) y[((bb * h + hh) * t + tt) * d + c] = x[((bb * t + tt) * h + hh) * d + c];
      }
    }
  }
  return y;
}
function mergeHeads(x: ArrayLike<number>, b: number, t: number, h: number, d: number): Float64Array {
  const y = new Float64Array(b * t * h * d);
  for (let bb = 0; bb < b; bb++) {
    for (let tt = 0; tt < t; tt++) {
      for (let hh = 0; hh < h; hh++) {
        for (let c = 0; c < d; c++) y[((bb * t + tt) * h + hh) * d + c] = x[((bb * h + hh) * t + tt) * d + c];
      }
    }
  }
  return y;
}

/** Weights of {@link mhaRef} in PyTorch's layout. */
export interface MhaWeights {
  inProjWeight: ArrayLike<number>; // [3E, E]
  inProjBias: ArrayLike<number>; // [3E]
  outProjWeight: ArrayLike<number>; // [E, E]
  outProjBias: ArrayLike<number>; // [E]
}

/**
 * nn.MultiheadAttention(E, H, batch_first=True) on query [b, tq, E], key and value
 * [b, tk, E]: out = out_proj(sdpa(q W_qᵀ + b_q, k W_kᵀ + b_k, v W_vᵀ + b_v)), and the
 * gradients of the three inputs and four weights for `dout`.
 */
export function mhaRef(
  query: ArrayLike<number>,
  key: ArrayLike<number>,
  value: ArrayLike<number>,
  dims: { b: number; tq: number; tk: number; e: number; h: number },
  w: MhaWeights,
  opts: SdpaRefOptions,
  dout: ArrayLike<number>,
) {
  const { b, tq, tk, e, h } = dims;
  const d = e / h;
  const qp = linear(query, b * tq, w.inProjWeight, w.inProjBias, 0, e, e);
  const kp = linear(key, b * tk, w.inProjWeight, w.inProjBias, e, e, e);
  const vp = linear(value, b * tk, w.inProjWeight, w.inProjBias, 2 * e, e, e);
  const attnDout = new Float64Array(b * tq * e);
  const dOutW = new Float64Array(e * e), dOutB = new Float64Array(e);
  // Forward through sdpa with a zero gradient first, to get the attention output.
  const first = sdpaRef(
    splitHeads(qp, b, tq, h, d),
    splitHeads(kp, b, tk, h, d),
    splitHeads(vp, b, tk, h, d),
    {
      b,
      h,
      tq,
      tk,
      d,
    },
    opts,
    new Float64Array(b * h * tq * d),
  );
  const attn = mergeHeads(first.o, b, tq, h, d);
  const out = linear(attn, b * tq, w.outProjWeight, w.outProjBias, 0, e, e);
  linearBack(attn, b * tq, w.outProjWeight, 0, e, e, dout, attnDout, dOutW, dOutB);
  const g = sdpaRef(
    splitHeads(qp, b, tq, h, d),
    splitHeads(kp, b, tk, h, d),
    splitHeads(vp, b, tk, h, d),
    { b, h, tq, tk, d },
    opts,
    splitHeads(attnDout, b, tq, h, d),
  );
  const dQuery = new Float64Array(b * tq * e),
    dKey = new Float64Array(b * tk * e),
    dValue = new Float64Array(b * tk * e);
  const dInW = new Float64Array(3 * e * e), dInB = new Float64Array(3 * e);
  linearBack(query, b * tq, w.inProjWeight, 0, e, e, mergeHeads(g.dq, b, tq, h, d), dQuery, dInW, dInB);
  linearBack(key, b * tk, w.inProjWeight, e, e, e, mergeHeads(g.dk, b, tk, h, d), dKey, dInW, dInB);
  linearBack(value, b * tk, w.inProjWeight, 2 * e, e, e, mergeHeads(g.dv, b, tk, h, d), dValue, dInW, dInB);
  return {
    out,
    dQuery,
    dKey,
    dValue,
    dInProjWeight: dInW,
    dInProjBias: dInB,
    dOutProjWeight: dOutW,
    dOutProjBias: dOutB,
  };
}
