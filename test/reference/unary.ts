/** Float64 references of the elementwise unary ops: forward f(x) and derivative f'(x). Never imports src/. */

/** erf with |error| < 1e-15 (series for small |x|, continued fraction for erfc otherwise). */
export function erf(x: number): number {
  return 1 - erfc(x);
}

export function erfc(x: number): number {
  const z = Math.abs(x);
  let r: number;
  if (z < 2) {
    // Maclaurin series of erf, then 1 - erf.
    let term = z, sum = z;
    for (let k = 1; k < 80; k++) {
      term *= -z * z / k;
      sum += term / (2 * k + 1);
    }
    r = 1 - (2 / Math.sqrt(Math.PI)) * sum;
  } else {
    // Lentz continued fraction for erfc.
    let f = z, c = z, d = 0;
    for (let k = 1; k < 200; k++) {
      const a = k / 2;
      d = z + a * d;
      c = z + a / c;
      d = 1 / d;
      const delta = c * d;
      f *= delta;
      if (Math.abs(delta - 1) < 1e-16) break;
    }
    r = Math.exp(-z * z) / (f * Math.sqrt(Math.PI));
  }
  return x >= 0 ? r : 2 - r;
}

const sig = (x: number) => 1 / (1 + Math.exp(-x));
const K = Math.sqrt(2 / Math.PI);

export interface UnaryRef {
  f: (x: number, a: number, b: number) => number;
  df: (x: number, a: number, b: number) => number;
}

export const UNARY_REF: Record<string, UnaryRef> = {
  neg: { f: (x) => -x, df: () => -1 },
  affine: { f: (x, a, b) => a * x + b, df: (_x, a) => a },
  abs: { f: Math.abs, df: (x) => Math.sign(x) },
  exp: { f: Math.exp, df: Math.exp },
  log: { f: Math.log, df: (x) => 1 / x },
  sqrt: { f: Math.sqrt, df: (x) => 0.5 / Math.sqrt(x) },
  rsqrt: { f: (x) => 1 / Math.sqrt(x), df: (x) => -0.5 * x ** -1.5 },
  tanh: { f: Math.tanh, df: (x) => 1 - Math.tanh(x) ** 2 },
  sigmoid: { f: sig, df: (x) => sig(x) * (1 - sig(x)) },
  relu: { f: (x) => Math.max(x, 0), df: (x) => (x > 0 ? 1 : 0) },
  leakyRelu: { f: (x, a) => (x > 0 ? x : a * x), df: (x, a) => (x > 0 ? 1 : a) },
  gelu: {
    f: (x) => 0.5 * x * erfc(-x / Math.SQRT2),
    df: (x) => 0.5 * erfc(-x / Math.SQRT2) + x * Math.exp(-0.5 * x * x) / Math.sqrt(2 * Math.PI),
  },
  geluTanh: {
    f: (x) => 0.5 * x * (1 + Math.tanh(K * (x + 0.044715 * x ** 3))),
    df: (x) => {
      const t = Math.tanh(K * (x + 0.044715 * x ** 3));
      return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K * (1 + 3 * 0.044715 * x * x);
    },
  },
  silu: { f: (x) => x * sig(x), df: (x) => sig(x) * (1 + x * (1 - sig(x))) },
  softplus: {
    f: (x, beta, th) => (beta * x > th ? x : Math.log1p(Math.exp(beta * x)) / beta),
    df: (x, beta, th) => (beta * x > th ? 1 : sig(beta * x)),
  },
  // log σ(x) = -softplus(-x), written with log1p so the f64 value is exact in both tails.
  logSigmoid: { f: (x) => Math.min(x, 0) - Math.log1p(Math.exp(-Math.abs(x))), df: (x) => sig(-x) },
  clamp: { f: (x, lo, hi) => Math.min(Math.max(x, lo), hi), df: (x, lo, hi) => (x >= lo && x <= hi ? 1 : 0) },
  powScalar: { f: (x, e) => x ** e, df: (x, e) => (e === 0 ? 0 : e * x ** (e - 1)) },
  elu: { f: (x, a) => (x > 0 ? x : a * Math.expm1(x)), df: (x, a) => (x > 0 ? 1 : a * Math.exp(x)) },
  selu: { f: (x) => SELU_SCALE * (x > 0 ? x : SELU_ALPHA * Math.expm1(x)), df: (x) => SELU_SCALE * (x > 0 ? 1 : SELU_ALPHA * Math.exp(x)) },
  mish: {
    f: (x) => x * Math.tanh(Math.log1p(Math.exp(x))),
    df: (x) => {
      const t = Math.tanh(Math.log1p(Math.exp(x)));
      return t + x * (1 - t * t) * sig(x);
    },
  },
  hardswish: {
    f: (x) => x * Math.min(Math.max(x + 3, 0), 6) / 6,
    df: (x) => (x < -3 ? 0 : x > 3 ? 1 : x / 3 + 0.5),
  },
  hardsigmoid: { f: (x) => Math.min(Math.max(x + 3, 0), 6) / 6, df: (x) => (x > -3 && x < 3 ? 1 / 6 : 0) },
};

/** SELU's constants, written out independently of src/ (torch.nn.SELU's docs). */
export const SELU_ALPHA = 1.6732632423543772848170429916717;
export const SELU_SCALE = 1.0507009873554804934193349852946;

/**
 * PReLU over x of `shape` with weight [C] on dim 1 (or [1] shared): y, dx and dw for upstream dy.
 */
export function preluRef(x: ArrayLike<number>, shape: readonly number[], w: ArrayLike<number>, dy: ArrayLike<number>) {
  const c = w.length, inner = c === 1 ? 1 : shape.slice(2).reduce((a, b) => a * b, 1);
  const y = new Float64Array(x.length), dx = new Float64Array(x.length), dw = new Float64Array(c);
  for (let i = 0; i < x.length; i++) {
    const ch = c === 1 ? 0 : Math.floor(i / inner) % c;
    const pos = x[i] > 0;
    y[i] = pos ? x[i] : w[ch] * x[i];
    dx[i] = (pos ? 1 : w[ch]) * dy[i];
    if (!pos) dw[ch] += x[i] * dy[i];
  }
  return { y, dx, dw };
}

/** y = f(x) and dx = f'(x)·dy over arrays. */
export function unaryRef(name: string, x: ArrayLike<number>, dy: ArrayLike<number>, a = 0, b = 0) {
  const r = UNARY_REF[name];
  const y = new Float64Array(x.length), dx = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) {
    y[i] = r.f(x[i], a, b);
    dx[i] = r.df(x[i], a, b) * dy[i];
  }
  return { y, dx };
}
