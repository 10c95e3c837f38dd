/**
 * Float64 references of conv2d and conv_transpose2d (NCHW, PyTorch semantics) with the
 * gradients of input, weight and bias for an output gradient dy. Plain scatter loops over
 * Float64Array; never imports src/.
 */

export type Pair = [number, number];

/** Options, every pair given explicitly. */
export interface ConvRefOptions {
  stride: Pair;
  padding: Pair;
  dilation: Pair;
  groups: number;
  /** conv_transpose2d only. */
  outputPadding?: Pair;
}

export interface ConvRefResult {
  y: Float64Array;
  dx: Float64Array;
  dw: Float64Array;
  db: Float64Array;
}

/** Output shape of conv2d for x [N, Cin, H, W] and w [Cout, Cin/g, kh, kw]. */
export function conv2dRefShape(xs: number[], ws: number[], o: ConvRefOptions): number[] {
  const size = (d: number) =>
    Math.floor((xs[2 + d] + 2 * o.padding[d] - o.dilation[d] * (ws[2 + d] - 1) - 1) / o.stride[d]) + 1;
  return [xs[0], ws[0], size(0), size(1)];
}

/** Output shape of conv_transpose2d for x [N, Cin, H, W] and w [Cin, Cout/g, kh, kw]. */
export function convTranspose2dRefShape(xs: number[], ws: number[], o: ConvRefOptions): number[] {
  const op = o.outputPadding ?? [0, 0];
  const size = (d: number) =>
    (xs[2 + d] - 1) * o.stride[d] - 2 * o.padding[d] + o.dilation[d] * (ws[2 + d] - 1) + op[d] + 1;
  return [xs[0], ws[1] * o.groups, size(0), size(1)];
}

/**
 * y[n,o,oy,ox] = b[o] + Σ_{j,ky,kx} x[n, g·Cin/G + j, oy·s − p + ky·d, ox·s − p + kx·d] · w[o,j,ky,kx]
 * (out-of-range taps read zero), and the gradients of L = Σ y·dy.
 */
export function conv2dRef(
  x: ArrayLike<number>,
  xs: number[],
  w: ArrayLike<number>,
  ws: number[],
  b: ArrayLike<number> | null,
  o: ConvRefOptions,
  dy: ArrayLike<number>,
): ConvRefResult {
  const [N, C, H, W] = xs;
  const [O, J, KH, KW] = ws;
  const [, , HO, WO] = conv2dRefShape(xs, ws, o);
  const perGroupOut = O / o.groups;
  const y = new Float64Array(N * O * HO * WO);
  const dx = new Float64Array(x.length), dw = new Float64Array(w.length), db = new Float64Array(O);
  for (let n = 0; n < N; n++) {
    for (let oc = 0; oc < O; oc++) {
      const c0 = Math.floor(oc / perGroupOut) * J;
      for (let oy = 0; oy < HO; oy++) {
        for (let ox = 0; ox < WO; ox++) {
          const yi = ((n * O + oc) * HO + oy) * WO + ox;
          const g = dy[yi];
          let acc = b ? b[oc] : 0;
          db[oc] += g;
          for (let j = 0; j < J; j++) {
            for (let ky = 0; ky < KH; ky++) {
              const iy = oy * o.stride[0] - o.padding[0] + ky * o.dilation[0];
              if (iy < 0 || iy >= H) continue;
              for (let kx = 0; kx < KW; kx++) {
                const ix = ox * o.stride[1] - o.padding[1] + kx * o.dilation[1];
                if (ix < 0 || ix >= W) continue;
                const xi = ((n * C + c0 + j) * H + iy) * W + ix;
                const wi = ((oc * J + j) * KH + ky) * KW + kx;
                acc += x[xi] * w[wi];
                dx[xi] += g * w[wi];
                dw[wi] += g * x[xi];
              }
            }
          }
          y[yi] = acc;
        }
      }
    }
  }
  return { y, dx, dw, db };
}

/**
 * Transposed convolution by its definition: input pixel x[n,c,iy,ix] adds x·w[c,k,ky,kx] to
 * y[n, g·Cout/G + k, iy·s − p + ky·d, ix·s − p + kx·d] (taps outside the output dropped);
 * y starts at the bias. Gradients of L = Σ y·dy.
 */
export function convTranspose2dRef(
  x: ArrayLike<number>,
  xs: number[],
  w: ArrayLike<number>,
  ws: number[],
  b: ArrayLike<number> | null,
  o: ConvRefOptions,
  dy: ArrayLike<number>,
): ConvRefResult {
  const [N, C, H, W] = xs;
  const [, K, KH, KW] = ws;
  const [, O, HO, WO] = convTranspose2dRefShape(xs, ws, o);
  const perGroupIn = C / o.groups;
  const y = new Float64Array(N * O * HO * WO);
  const dx = new Float64Array(x.length), dw = new Float64Array(w.length), db = new Float64Array(O);
  for (let n = 0; n < N; n++) {
    for (let oc = 0; oc < O; oc++) {
      for (let i = 0; i < HO * WO; i++) {
        const yi = (n * O + oc) * HO * WO + i;
        y[yi] = b ? b[oc] : 0;
        db[oc] += dy[yi];
      }
    }
    for (let c = 0; c < C; c++) {
      const o0 = Math.floor(c / perGroupIn) * K;
      for (let iy = 0; iy < H; iy++) {
        for (let ix = 0; ix < W; ix++) {
          const xi = ((n * C + c) * H + iy) * W + ix;
          for (let k = 0; k < K; k++) {
            for (let ky = 0; ky < KH; ky++) {
              const oy = iy * o.stride[0] - o.padding[0] + ky * o.dilation[0];
              if (oy < 0 || oy >= HO) continue;
              for (let kx = 0; kx < KW; kx++) {
                const ox = ix * o.stride[1] - o.padding[1] + kx * o.dilation[1];
                if (ox < 0 || ox >= WO) continue;
                const yi = ((n * O + o0 + k) * HO + oy) * WO + ox;
                const wi = ((c * K + k) * KH + ky) * KW + kx;
                y[yi] += x[xi] * w[wi];
                dx[xi] += dy[yi] * w[wi];
                dw[wi] += dy[yi] * x[xi];
              }
            }
          }
        }
      }
    }
  }
  return { y, dx, dw, db };
}

/** conv1d's options, every value given explicitly. */
export interface Conv1dRefOptions {
  stride: number;
  padding: number;
  dilation: number;
  groups: number;
}

/** Output shape of conv1d for x [N, Cin, L] and w [Cout, Cin/g, K]. */
export function conv1dRefShape(xs: number[], ws: number[], o: Conv1dRefOptions): number[] {
  return [xs[0], ws[0], Math.floor((xs[2] + 2 * o.padding - o.dilation * (ws[2] - 1) - 1) / o.stride) + 1];
}

/**
 * y[n,o,t] = b[o] + Σ_{j,k} x[n, g·Cin/G + j, t·s − p + k·d] · w[o,j,k] (out-of-range taps read
 * zero), written in one dimension (not through conv2dRef), and the gradients of L = Σ y·dy.
 */
export function conv1dRef(
  x: ArrayLike<number>,
  xs: number[],
  w: ArrayLike<number>,
  ws: number[],
  b: ArrayLike<number> | null,
  o: Conv1dRefOptions,
  dy: ArrayLike<number>,
): ConvRefResult {
  const [N, C, L] = xs;
  const [O, J, K] = ws;
  const LO = conv1dRefShape(xs, ws, o)[2];
  const perGroupOut = O / o.groups;
  const y = new Float64Array(N * O * LO);
  const dx = new Float64Array(x.length), dw = new Float64Array(w.length), db = new Float64Array(O);
  for (let n = 0; n < N; n++) {
    for (let oc = 0; oc < O; oc++) {
      const c0 = Math.floor(oc / perGroupOut) * J;
      for (let t = 0; t < LO; t++) {
        const yi = (n * O + oc) * LO + t;
        const g = dy[yi];
        let acc = b ? b[oc] : 0;
        db[oc] += g;
        for (let j = 0; j < J; j++) {
          for (let k = 0; k < K; k++) {
            const i = t * o.stride - o.padding + k * o.dilation;
            if (i < 0 || i >= L) continue;
            const xi = (n * C + c0 + j) * L + i, wi = (oc * J + j) * K + k;
            acc += x[xi] * w[wi];
            dx[xi] += g * w[wi];
            dw[wi] += g * x[xi];
          }
        }
        y[yi] = acc;
      }
    }
  }
  return { y, dx, dw, db };
}
