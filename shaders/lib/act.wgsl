// Activations shared by the elementwise ops (shaders/unary.wgsl) and the fused epilogues of
// the matrix product (shaders/matmul.wgsl), so a fused Linear + activation computes the same
// f32 operations as the two ops apart. Included with `// #include "lib/act.wgsl"`.
//
// Kinds (mirrored by ACTIVATIONS in src/tensor/ops/matmul_plan.ts):
//   0 none, 1 relu, 2 gelu (exact), 3 gelu_tanh, 4 tanh, 5 sigmoid, 6 silu.
// act_backward(kind, s, g) is the gradient through the activation for an upstream g, from
// what the op saves: its output y for relu, tanh and sigmoid, its input x for the others.

const SQRT1_2: f32 = 0.7071067811865476;
const INV_SQRT_2PI: f32 = 0.3989422804014327;
const SQRT_2_OVER_PI: f32 = 0.7978845608028654;

// erfc with fractional error below 1.2e-7 everywhere (Numerical Recipes' Chebyshev fit),
// so exact GELU keeps its relative accuracy for very negative inputs, where 1 + erf
// would cancel.
fn erfc(v: f32) -> f32 {
  let z = abs(v);
  let t = 1.0 / (1.0 + 0.5 * z);
  let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
    t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
    t * (-0.82215223 + t * 0.17087277)))))))));
  return select(2.0 - r, r, v >= 0.0);
}
// r, or v itself when v is NaN: clamp/sign/select would turn a NaN into a number.
// NOTE: tested on the bits; compilers assume no NaN and fold `v != v` to false.
fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
fn keep_nan(v: f32, r: f32) -> f32 { return select(r, v, is_nan(v)); }
fn sigmoid(v: f32) -> f32 {
  let e = exp(-abs(v));
  return keep_nan(v, select(e / (1.0 + e), 1.0 / (1.0 + e), v >= 0.0));
}
// tanh through exp of a clamped argument: some drivers return NaN for tanh of large |v|.
fn tanh_safe(v: f32) -> f32 {
  let e = exp(-2.0 * abs(clamp(v, -20.0, 20.0)));
  return keep_nan(v, sign(v) * (1.0 - e) / (1.0 + e));
}

// NOTE: relu's gradient at 0 is 0, as in PyTorch; NaN passes through relu (max() would drop
// it on IEEE maxNum hardware, hiding a diverged model). Kind 1 of the two functions below,
// apart for code inlined many times over (matmul's stores), where a whole switch would be
// copied at each call before the compiler drops its dead cases.
fn relu_value(v: f32) -> f32 { return select(max(v, 0.0), v, is_nan(v)); }
fn relu_gradient(y: f32, g: f32) -> f32 { return select(0.0, g, y > 0.0); }

fn act_forward(kind: u32, v: f32) -> f32 {
  switch (kind) {
    case 1u: { return relu_value(v); }
    case 2u: { return 0.5 * v * erfc(-v * SQRT1_2); }
    case 3u: { return 0.5 * v * (1.0 + tanh_safe(SQRT_2_OVER_PI * (v + 0.044715 * v * v * v))); }
    case 4u: { return tanh_safe(v); }
    case 5u: { return sigmoid(v); }
    case 6u: { return v * sigmoid(v); }
    default: { return v; }
  }
}

fn act_backward(kind: u32, s: f32, g: f32) -> f32 {
  switch (kind) {
    case 1u: { return relu_gradient(s, g); }
    case 2u: { return (0.5 * erfc(-s * SQRT1_2) + s * INV_SQRT_2PI * exp(-0.5 * s * s)) * g; }
    case 3u: {
      let t = tanh_safe(SQRT_2_OVER_PI * (s + 0.044715 * s * s * s));
      let dt = (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * s * s);
      return (0.5 * (1.0 + t) + 0.5 * s * dt) * g;
    }
    case 4u: { return (1.0 - s * s) * g; }
    case 5u: { return s * (1.0 - s) * g; }
    case 6u: {
      let sg = sigmoid(s);
      return sg * (1.0 + s * (1.0 - sg)) * g;
    }
    default: { return g; }
  }
}
