// Elementwise unary ops: y = f(x) and dx = f'(.) * dy.
// Forward reads x (1) and writes y (2); backward reads what the op saved, x (1) or
// y (2), and dy (3), and writes dx (4). The scalars of Params are named for what they are.
// PReLU alone also reads its weight (5) and writes each element's share of the weight
// gradient (6); inner/channels locate an element's channel (the other ops ignore them).
override WG: u32 = 256;

// Each scalar is named for what it is; an op reads only its own.
struct Params {  // mirrored in src/tensor/ops/unary.ts
  n: u32, scale: f32, shift: f32, slope: f32, beta: f32, threshold: f32,
  lo: f32, hi: f32, exponent: f32, alpha: f32, inner: u32, channels: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;
@group(0) @binding(5) var<storage, read> w: array<f32>;
@group(0) @binding(6) var<storage, read_write> dw_each: array<f32>;

// #include "lib/grid.wgsl"
// #include "lib/act.wgsl"

// NOTE: a NaN built from a `var`, not a constant: Tint (Chromium) rejects constant
// expressions that evaluate to NaN.
fn quiet_nan() -> f32 {
  var bits = 0x7fc00000u;
  return bitcast<f32>(bits);
}

// log(1 + u) for u >= 0 without losing small u (WGSL has no log1p). Below 1e-2 the series
// (truncation u^5/5) beats log(1 + u), whose rounding of 1 + u costs 6e-8/u relative.
fn log1p_pos(u: f32) -> f32 {
  if (u < 1e-2) { return u * (1.0 - u * (0.5 - u * (1.0 / 3.0 - u * 0.25))); }
  return log(1.0 + u);
}
// e^v - 1 without losing small |v| (WGSL has no expm1); the series is exact to f32 below 1e-2.
fn expm1(v: f32) -> f32 {
  if (abs(v) < 1e-2) { return v * (1.0 + v * (0.5 + v * (1.0 / 6.0 + v / 24.0))); }
  return exp(v) - 1.0;
}

// tanh keeping its relative accuracy near 0 (tanh_safe's 1 - e cancels there): Mish
// takes tanh of softplus values as small as e^-20.
fn tanh_small(v: f32) -> f32 {
  let m = expm1(-2.0 * abs(clamp(v, -20.0, 20.0)));
  return keep_nan(v, -sign(v) * m / (m + 2.0));
}

@compute @workgroup_size(WG)
fn neg_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = -x[i];
}
@compute @workgroup_size(WG)
fn neg_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = -dy[i];
}

// y = scale * x + shift (scalar multiply and add).
@compute @workgroup_size(WG)
fn affine_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = p.scale * x[i] + p.shift;
}
@compute @workgroup_size(WG)
fn affine_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = p.scale * dy[i];
}

// NOTE: the gradient of |x| at 0 is 0, as PyTorch's sign(0).
@compute @workgroup_size(WG)
fn abs_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = abs(x[i]);
}
@compute @workgroup_size(WG)
fn abs_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = sign(x[i]) * dy[i];
}

@compute @workgroup_size(WG)
fn exp_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = exp(x[i]);
}
@compute @workgroup_size(WG)
fn exp_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = y[i] * dy[i];
}

@compute @workgroup_size(WG)
fn log_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = log(x[i]);
}
@compute @workgroup_size(WG)
fn log_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = dy[i] / x[i];
}

@compute @workgroup_size(WG)
fn sqrt_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = sqrt(x[i]);
}
@compute @workgroup_size(WG)
fn sqrt_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = dy[i] / (2.0 * y[i]);
}

@compute @workgroup_size(WG)
fn rsqrt_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = 1.0 / sqrt(x[i]);
}
@compute @workgroup_size(WG)
fn rsqrt_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = y[i];
  dx[i] = -0.5 * v * v * v * dy[i];
}

@compute @workgroup_size(WG)
fn tanh_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = act_forward(4u, x[i]);
}
@compute @workgroup_size(WG)
fn tanh_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = act_backward(4u, y[i], dy[i]);
}

@compute @workgroup_size(WG)
fn sigmoid_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = act_forward(5u, x[i]);
}
@compute @workgroup_size(WG)
fn sigmoid_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = act_backward(5u, y[i], dy[i]);
}

// NOTE: the gradient of relu at 0 is 0, as in PyTorch; NaN passes through (max() would
// drop it on IEEE maxNum hardware, hiding a diverged model).
@compute @workgroup_size(WG)
fn relu_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = act_forward(1u, x[i]);
}
@compute @workgroup_size(WG)
fn relu_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = act_backward(1u, y[i], dy[i]);
}

// slope = negative slope.
@compute @workgroup_size(WG)
fn leaky_relu_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  y[i] = select(p.slope * v, v, v > 0.0);
}
@compute @workgroup_size(WG)
fn leaky_relu_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = select(p.slope, 1.0, x[i] > 0.0) * dy[i];
}

// Exact GELU: x * Phi(x) = 0.5 * x * erfc(-x / sqrt(2)).
@compute @workgroup_size(WG)
fn gelu_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = act_forward(2u, x[i]);
}
@compute @workgroup_size(WG)
fn gelu_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = act_backward(2u, x[i], dy[i]);
}

// tanh-approximate GELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
@compute @workgroup_size(WG)
fn gelu_tanh_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = act_forward(3u, x[i]);
}
@compute @workgroup_size(WG)
fn gelu_tanh_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = act_backward(3u, x[i], dy[i]);
}

@compute @workgroup_size(WG)
fn silu_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = act_forward(6u, x[i]);
}
@compute @workgroup_size(WG)
fn silu_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = act_backward(6u, x[i], dy[i]);
}

// Softplus with beta and threshold, as PyTorch:
// (1/beta) log(1 + exp(beta x)), and x itself where beta x > threshold.
@compute @workgroup_size(WG)
fn softplus_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  let t = p.beta * v;
  y[i] = select((max(t, 0.0) + log1p_pos(exp(-abs(t)))) / p.beta, v, t > p.threshold);
}
@compute @workgroup_size(WG)
fn softplus_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let t = p.beta * x[i];
  dx[i] = select(sigmoid(t), 1.0, t > p.threshold) * dy[i];
}

// LogSigmoid, log(1 / (1 + e^-x)) = -softplus(-x) in its stable form
// min(x, 0) - log1p(e^-|x|): no overflow for large |x|, no log(0) far in the negative tail.
@compute @workgroup_size(WG)
fn log_sigmoid_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  y[i] = keep_nan(v, min(v, 0.0) - log1p_pos(exp(-abs(v))));
}
// d/dx = sigmoid(-x), which keeps its relative accuracy where it is tiny (x large).
@compute @workgroup_size(WG)
fn log_sigmoid_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = sigmoid(-x[i]) * dy[i];
}

// clamp to [lo, hi]; the gradient passes where lo <= x <= hi (PyTorch).
@compute @workgroup_size(WG)
fn clamp_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = min(max(x[i], p.lo), p.hi);
}
@compute @workgroup_size(WG)
fn clamp_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  dx[i] = select(0.0, dy[i], v >= p.lo && v <= p.hi);
}

// x ^ exponent for a scalar exponent; negative bases work for integer exponents, as in PyTorch.
fn pow_scalar(v: f32, e: f32) -> f32 {
  if (e == 0.0) { return 1.0; }
  if (e == 1.0) { return v; }
  if (e == 2.0) { return v * v; }
  let m = pow(abs(v), e);
  if (v >= 0.0) { return m; }
  if (floor(e) != e) { return quiet_nan(); }   // NaN, as PyTorch
  let odd = (e - 2.0 * floor(e / 2.0)) == 1.0;
  return select(m, -m, odd);
}
@compute @workgroup_size(WG)
fn pow_scalar_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = pow_scalar(x[i], p.exponent);
}
@compute @workgroup_size(WG)
fn pow_scalar_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  dx[i] = p.exponent * pow_scalar(x[i], p.exponent - 1.0) * dy[i];
}

// ELU: x for x > 0, alpha (e^x - 1) otherwise (PyTorch's nn.ELU).
@compute @workgroup_size(WG)
fn elu_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  y[i] = select(p.alpha * expm1(v), v, v > 0.0);
}
@compute @workgroup_size(WG)
fn elu_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  dx[i] = select(p.alpha * exp(v), 1.0, v > 0.0) * dy[i];
}

// SELU: scale * ELU(x; alpha) with alpha and scale the fixed
// constants of Klambauer et al., passed from src/tensor/ops/unary.ts.
@compute @workgroup_size(WG)
fn selu_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  y[i] = p.scale * select(p.alpha * expm1(v), v, v > 0.0);
}
@compute @workgroup_size(WG)
fn selu_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  dx[i] = p.scale * select(p.alpha * exp(v), 1.0, v > 0.0) * dy[i];
}

// Mish: x tanh(softplus(x)), softplus in its stable form max(x, 0) + log1p(e^-|x|).
fn softplus1(v: f32) -> f32 { return max(v, 0.0) + log1p_pos(exp(-abs(v))); }
@compute @workgroup_size(WG)
fn mish_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  y[i] = v * tanh_small(softplus1(v));
}
@compute @workgroup_size(WG)
fn mish_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  let t = tanh_small(softplus1(v));
  dx[i] = (t + v * (1.0 - t * t) * sigmoid(v)) * dy[i];
}

// Hardswish: x relu6(x + 3) / 6. NOTE: the gradient follows PyTorch at the kinks:
// 0 below -3, x/3 + 1/2 on [-3, 3], 1 above 3.
@compute @workgroup_size(WG)
fn hardswish_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  y[i] = keep_nan(v, v * clamp(v + 3.0, 0.0, 6.0) / 6.0);
}
@compute @workgroup_size(WG)
fn hardswish_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  dx[i] = select(select(v / 3.0 + 0.5, 1.0, v > 3.0), 0.0, v < -3.0) * dy[i];
}

// Hardsigmoid: relu6(x + 3) / 6; the gradient is 1/6 strictly inside (-3, 3), as PyTorch.
@compute @workgroup_size(WG)
fn hardsigmoid_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  y[i] = keep_nan(v, clamp(v + 3.0, 0.0, 6.0) / 6.0);
}
@compute @workgroup_size(WG)
fn hardsigmoid_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  dx[i] = select(0.0, 1.0 / 6.0, v > -3.0 && v < 3.0) * dy[i];
}

// PReLU: x for x > 0, w[c] x otherwise, c the element's channel (dim 1: the index's
// quotient by inner, modulo channels; channels = 1 shares one weight).
fn channel(i: u32) -> u32 { return (i / p.inner) % p.channels; }
@compute @workgroup_size(WG)
fn prelu_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  y[i] = select(w[channel(i)] * v, v, v > 0.0);
}
// dx, and each element's term of dw (x dy where x <= 0); the host sums the terms per channel.
@compute @workgroup_size(WG)
fn prelu_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = x[i];
  let pos = v > 0.0;
  dx[i] = select(w[channel(i)], 1.0, pos) * dy[i];
  dw_each[i] = select(v * dy[i], 0.0, pos);
}
