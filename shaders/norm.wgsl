// Layer and batch normalization, PyTorch semantics (biased variance for normalizing).
//
// Layer norm: x is [rows, len] (len = product of the normalized trailing dims); one
// workgroup per row. Batch norm: x is [N, C, S] (S = product of spatial dims, 1 for
// [N, C]); one workgroup per channel over its len = N * S elements. Both save
// stats[2k] = mean and stats[2k + 1] = 1 / sqrt(var + eps) per row or channel.
//
// weight and bias are read at w[k * w_stride] and b[k * b_stride]: an absent weight or
// bias is a one-element constant (1 or 0) read with stride 0.
override WG: u32 = 256;

struct Params {  // mirrored in src/tensor/ops/norm.ts
  rows: u32, len: u32, inner: u32, channels: u32, eps: f32, momentum: f32,
  training: u32, w_stride: u32, b_stride: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;
@group(0) @binding(6) var<storage, read> dy: array<f32>;
@group(0) @binding(7) var<storage, read_write> dx: array<f32>;
@group(0) @binding(8) var<storage, read_write> dw: array<f32>;
@group(0) @binding(9) var<storage, read_write> db: array<f32>;
@group(0) @binding(10) var<storage, read_write> running_mean: array<f32>;
@group(0) @binding(11) var<storage, read_write> running_var: array<f32>;

// #include "lib/grid.wgsl"
// #include "lib/reduce.wgsl"

// ---- layer norm ----------------------------------------------------------------

// NOTE: two passes (mean, then sum of squared deviations) rather than E[x^2] - E[x]^2,
// which cancels catastrophically when |mean| >> std.
@compute @workgroup_size(WG)
fn layer_norm_forward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                      @builtin(local_invocation_index) t: u32) {
  let r = group_index(g, nw);
  if (r >= p.rows) { return; }  // uniform per workgroup
  let base = r * p.len;
  var s = 0.0;
  for (var j = t; j < p.len; j += WG) { s += x[base + j]; }
  let m = wg_sum2(t, vec2f(s, 0.0)).x / f32(p.len);
  var q = 0.0;
  for (var j = t; j < p.len; j += WG) { let d = x[base + j] - m; q += d * d; }
  let rstd = inverseSqrt(wg_sum2(t, vec2f(q, 0.0)).x / f32(p.len) + p.eps);
  for (var j = t; j < p.len; j += WG) {
    let i = base + j;
    y[i] = (x[i] - m) * rstd * w[j * p.w_stride] + b[j * p.b_stride];
  }
  if (t == 0u) { stats[2u * r] = m; stats[2u * r + 1u] = rstd; }
}

// With g = dy * w and xhat = (x - mean) * rstd:
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
@compute @workgroup_size(WG)
fn layer_norm_backward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                       @builtin(local_invocation_index) t: u32) {
  let r = group_index(g, nw);
  if (r >= p.rows) { return; }
  let base = r * p.len;
  let m = stats[2u * r];
  let rstd = stats[2u * r + 1u];
  var acc = vec2f(0.0);
  for (var j = t; j < p.len; j += WG) {
    let i = base + j;
    let gj = dy[i] * w[j * p.w_stride];
    acc += vec2f(gj, gj * (x[i] - m) * rstd);
  }
  let mg = wg_sum2(t, acc) / f32(p.len);
  for (var j = t; j < p.len; j += WG) {
    let i = base + j;
    dx[i] = rstd * (dy[i] * w[j * p.w_stride] - mg.x - (x[i] - m) * rstd * mg.y);
  }
}

// dw[j] = sum over rows of dy * xhat: one workgroup per column j.
@compute @workgroup_size(WG)
fn layer_norm_backward_weight(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                              @builtin(local_invocation_index) t: u32) {
  let j = group_index(g, nw);
  if (j >= p.len) { return; }
  var acc = 0.0;
  for (var r = t; r < p.rows; r += WG) {
    let i = r * p.len + j;
    acc += dy[i] * (x[i] - stats[2u * r]) * stats[2u * r + 1u];
  }
  let s = wg_sum2(t, vec2f(acc, 0.0));
  if (t == 0u) { dw[j] = s.x; }
}

// db[j] = sum over rows of dy.
@compute @workgroup_size(WG)
fn layer_norm_backward_bias(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                            @builtin(local_invocation_index) t: u32) {
  let j = group_index(g, nw);
  if (j >= p.len) { return; }
  var acc = 0.0;
  for (var r = t; r < p.rows; r += WG) { acc += dy[r * p.len + j]; }
  let s = wg_sum2(t, vec2f(acc, 0.0));
  if (t == 0u) { db[j] = s.x; }
}

// ---- batch norm ----------------------------------------------------------------

// Element k (of len = N * S) of channel c in x [N, C, S].
fn at(c: u32, k: u32) -> u32 { return (k / p.inner) * p.channels * p.inner + c * p.inner + k % p.inner; }

// Training: normalize with the batch mean and biased variance, and move the running
// statistics in place: r = (1 - momentum) r + momentum * batch, where the variance
// enters UNBIASED (times len / (len - 1)), as PyTorch. Eval: normalize with the running
// statistics and leave them alone. Either way the statistics used are saved.
@compute @workgroup_size(WG)
fn batch_norm_forward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                      @builtin(local_invocation_index) t: u32) {
  let c = group_index(g, nw);
  if (c >= p.channels) { return; }
  var m: f32;
  var rstd: f32;
  if (p.training != 0u) {
    var s = 0.0;
    for (var k = t; k < p.len; k += WG) { s += x[at(c, k)]; }
    m = wg_sum2(t, vec2f(s, 0.0)).x / f32(p.len);
    var q = 0.0;
    for (var k = t; k < p.len; k += WG) { let d = x[at(c, k)] - m; q += d * d; }
    let ss = wg_sum2(t, vec2f(q, 0.0)).x;
    rstd = inverseSqrt(ss / f32(p.len) + p.eps);
    if (t == 0u) {
      let unbiased = ss / f32(p.len - 1u);
      running_mean[c] = (1.0 - p.momentum) * running_mean[c] + p.momentum * m;
      running_var[c] = (1.0 - p.momentum) * running_var[c] + p.momentum * unbiased;
    }
  } else {
    m = running_mean[c];
    rstd = inverseSqrt(running_var[c] + p.eps);
  }
  let scale = rstd * w[c * p.w_stride];
  let shift = b[c * p.b_stride];
  for (var k = t; k < p.len; k += WG) { let i = at(c, k); y[i] = (x[i] - m) * scale + shift; }
  if (t == 0u) { stats[2u * c] = m; stats[2u * c + 1u] = rstd; }
}

// Per-channel sums of dy and dy * xhat (the bias and weight gradients).
fn channel_sums(c: u32, t: u32, m: f32, rstd: f32) -> vec2f {
  var acc = vec2f(0.0);
  for (var k = t; k < p.len; k += WG) { let i = at(c, k); acc += vec2f(dy[i], dy[i] * (x[i] - m) * rstd); }
  return wg_sum2(t, acc);
}

// Training: dx = w rstd (dy - mean(dy) - xhat mean(dy xhat)), the batch statistics
// depending on x. Eval: dx = w rstd dy (the running statistics are constants).
@compute @workgroup_size(WG)
fn batch_norm_backward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                       @builtin(local_invocation_index) t: u32) {
  let c = group_index(g, nw);
  if (c >= p.channels) { return; }
  let m = stats[2u * c];
  let rstd = stats[2u * c + 1u];
  let s = channel_sums(c, t, m, rstd);
  let k1 = select(0.0, s.x / f32(p.len), p.training != 0u);
  let k2 = select(0.0, s.y / f32(p.len), p.training != 0u);
  let scale = rstd * w[c * p.w_stride];
  for (var k = t; k < p.len; k += WG) {
    let i = at(c, k);
    dx[i] = scale * (dy[i] - k1 - (x[i] - m) * rstd * k2);
  }
  if (t == 0u) { dw[c] = s.y; db[c] = s.x; }
}

// Only the weight and bias gradients (x needs none).
@compute @workgroup_size(WG)
fn batch_norm_backward_params(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                              @builtin(local_invocation_index) t: u32) {
  let c = group_index(g, nw);
  if (c >= p.channels) { return; }
  let s = channel_sums(c, t, stats[2u * c], stats[2u * c + 1u]);
  if (t == 0u) { dw[c] = s.y; db[c] = s.x; }
}

// ---- RMS norm --------------------------------------------------------------------

// y = x * rstd * w with rstd = 1 / sqrt(mean(x^2) + eps): no centring and no bias. Saves
// stats[2r] = 0 and stats[2r + 1] = rstd, so layer_norm_backward_weight gives its dw.
@compute @workgroup_size(WG)
fn rms_norm_forward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                    @builtin(local_invocation_index) t: u32) {
  let r = group_index(g, nw);
  if (r >= p.rows) { return; }
  let base = r * p.len;
  var q = 0.0;
  for (var j = t; j < p.len; j += WG) { let xj = x[base + j]; q += xj * xj; }
  let rstd = inverseSqrt(wg_sum2(t, vec2f(q, 0.0)).x / f32(p.len) + p.eps);
  for (var j = t; j < p.len; j += WG) { y[base + j] = x[base + j] * rstd * w[j * p.w_stride]; }
  if (t == 0u) { stats[2u * r] = 0.0; stats[2u * r + 1u] = rstd; }
}

// With g = dy * w and xhat = x * rstd: dx = rstd * (g - xhat * mean(g * xhat)).
@compute @workgroup_size(WG)
fn rms_norm_backward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                     @builtin(local_invocation_index) t: u32) {
  let r = group_index(g, nw);
  if (r >= p.rows) { return; }
  let base = r * p.len;
  let rstd = stats[2u * r + 1u];
  var acc = 0.0;
  for (var j = t; j < p.len; j += WG) { let i = base + j; acc += dy[i] * w[j * p.w_stride] * x[i] * rstd; }
  let mgx = wg_sum2(t, vec2f(acc, 0.0)).x / f32(p.len);
  for (var j = t; j < p.len; j += WG) {
    let i = base + j;
    dx[i] = rstd * (dy[i] * w[j * p.w_stride] - x[i] * rstd * mgx);
  }
}
