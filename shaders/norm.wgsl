// Layer and batch normalization, PyTorch semantics (biased variance for normalizing).
//
// Layer norm: x is [rows, len] (len = product of the normalized trailing dims); one
// segment of SEG threads per row, several rows per workgroup (see "Blocking" below).
// Batch norm: x is [N, C, S] (S = product of spatial dims, 1 for
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
// The layer norm rows four values a vec4 (the *_vec4 entries, len a multiple of 4): on CPU
// adapters every storage access is a loop over the SIMD lanes. An absent weight or bias is
// then a four-element constant read with stride 0.
@group(0) @binding(12) var<storage, read> x4: array<vec4f>;
@group(0) @binding(13) var<storage, read> w4: array<vec4f>;
@group(0) @binding(14) var<storage, read> b4: array<vec4f>;
@group(0) @binding(15) var<storage, read_write> y4: array<vec4f>;
@group(0) @binding(16) var<storage, read> dy4: array<vec4f>;
@group(0) @binding(17) var<storage, read_write> dx4: array<vec4f>;
@group(0) @binding(18) var<storage, read_write> dw4: array<vec4f>;
@group(0) @binding(19) var<storage, read_write> db4: array<vec4f>;

// #include "lib/grid.wgsl"
// #include "lib/reduce.wgsl"
// #include "lib/segment.wgsl"

// ---- layer norm ----------------------------------------------------------------

// Blocking (rowLaunch / columnLaunch in src/tensor/ops/norm.ts, lib/segment.wgsl): the row
// kernels give each segment one row (its threads stride over the row's len elements); the
// column kernels (weight and bias gradients) give each segment one column (its threads
// stride over the rows, adjacent segments reading adjacent columns).

// NOTE: two passes (mean, then sum of squared deviations) rather than E[x^2] - E[x]^2,
// which cancels catastrophically when |mean| >> std.
@compute @workgroup_size(WG)
fn layer_norm_forward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                      @builtin(local_invocation_index) t: u32) {
  let sl = segment(g, nw, t);
  let r = sl.x;
  let n = select(0u, p.len, r < p.rows);  // an out-of-range row loops over nothing
  let base = r * p.len;
  var s = 0.0;
  for (var j = sl.y; j < n; j += SEG) { s += x[base + j]; }
  let m = seg_sum2(t, vec2f(s, 0.0)).x / f32(p.len);
  var q = 0.0;
  for (var j = sl.y; j < n; j += SEG) { let d = x[base + j] - m; q += d * d; }
  let rstd = inverseSqrt(seg_sum2(t, vec2f(q, 0.0)).x / f32(p.len) + p.eps);
  for (var j = sl.y; j < n; j += SEG) {
    let i = base + j;
    y[i] = (x[i] - m) * rstd * w[j * p.w_stride] + b[j * p.b_stride];
  }
  if (sl.y == 0u && r < p.rows) { stats[2u * r] = m; stats[2u * r + 1u] = rstd; }
}

// With g = dy * w and xhat = (x - mean) * rstd:
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
@compute @workgroup_size(WG)
fn layer_norm_backward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                       @builtin(local_invocation_index) t: u32) {
  let sl = segment(g, nw, t);
  let r = min(sl.x, p.rows - 1u);  // stats read in range; n = 0 keeps the row untouched
  let n = select(0u, p.len, sl.x < p.rows);
  let base = r * p.len;
  let m = stats[2u * r];
  let rstd = stats[2u * r + 1u];
  var acc = vec2f(0.0);
  for (var j = sl.y; j < n; j += SEG) {
    let i = base + j;
    let gj = dy[i] * w[j * p.w_stride];
    acc += vec2f(gj, gj * (x[i] - m) * rstd);
  }
  let mg = seg_sum2(t, acc) / f32(p.len);
  for (var j = sl.y; j < n; j += SEG) {
    let i = base + j;
    dx[i] = rstd * (dy[i] * w[j * p.w_stride] - mg.x - (x[i] - m) * rstd * mg.y);
  }
}

// Column j's sums over the rows of (dy * xhat, dy): the weight and bias gradients. One
// segment per column; lane l sums rows l, l + SEG, ...
fn column_sums(g: vec3u, nw: vec3u, t: u32) -> vec2f {
  let sl = segment(g, nw, t);
  let j = sl.x;
  let n = select(0u, p.rows, j < p.len);
  var acc = vec2f(0.0);
  for (var r = sl.y; r < n; r += SEG) {
    let i = r * p.len + j;
    let d = dy[i];
    acc += vec2f(d * (x[i] - stats[2u * r]) * stats[2u * r + 1u], d);
  }
  return seg_sum2(t, acc);
}

// dw[j] = sum over rows of dy * xhat.
@compute @workgroup_size(WG)
fn layer_norm_backward_weight(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                              @builtin(local_invocation_index) t: u32) {
  let s = column_sums(g, nw, t);
  let sl = segment(g, nw, t);
  if (sl.y == 0u && sl.x < p.len) { dw[sl.x] = s.x; }
}

// db[j] = sum over rows of dy.
@compute @workgroup_size(WG)
fn layer_norm_backward_bias(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                            @builtin(local_invocation_index) t: u32) {
  let sl = segment(g, nw, t);
  let j = sl.x;
  let n = select(0u, p.rows, j < p.len);
  var acc = 0.0;
  for (var r = sl.y; r < n; r += SEG) { acc += dy[r * p.len + j]; }
  let s = seg_sum2(t, vec2f(acc, 0.0));
  if (sl.y == 0u && j < p.len) { db[j] = s.x; }
}

// Both at once (dy read once, one launch).
@compute @workgroup_size(WG)
fn layer_norm_backward_params(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                              @builtin(local_invocation_index) t: u32) {
  let s = column_sums(g, nw, t);
  let sl = segment(g, nw, t);
  if (sl.y == 0u && sl.x < p.len) { dw[sl.x] = s.x; db[sl.x] = s.y; }
}

// The same three kernels four values a thread step (len a multiple of 4; segments over
// len / 4 vec4s, the column kernel's segments over 4 adjacent columns each).
fn sum4(v: vec4f) -> f32 { return v.x + v.y + v.z + v.w; }

@compute @workgroup_size(WG)
fn layer_norm_forward_vec4(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                           @builtin(local_invocation_index) t: u32) {
  let sl = segment(g, nw, t);
  let r = sl.x;
  let n = select(0u, p.len / 4u, r < p.rows);
  let base = r * (p.len / 4u);
  var s = vec4f(0.0);
  for (var j = sl.y; j < n; j += SEG) { s += x4[base + j]; }
  let m = seg_sum2(t, vec2f(sum4(s), 0.0)).x / f32(p.len);
  var q = vec4f(0.0);
  for (var j = sl.y; j < n; j += SEG) { let d = x4[base + j] - m; q += d * d; }
  let rstd = inverseSqrt(seg_sum2(t, vec2f(sum4(q), 0.0)).x / f32(p.len) + p.eps);
  for (var j = sl.y; j < n; j += SEG) {
    y4[base + j] = (x4[base + j] - m) * rstd * w4[j * p.w_stride] + b4[j * p.b_stride];
  }
  if (sl.y == 0u && r < p.rows) { stats[2u * r] = m; stats[2u * r + 1u] = rstd; }
}

@compute @workgroup_size(WG)
fn layer_norm_backward_vec4(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                            @builtin(local_invocation_index) t: u32) {
  let sl = segment(g, nw, t);
  let r = min(sl.x, p.rows - 1u);
  let n = select(0u, p.len / 4u, sl.x < p.rows);
  let base = r * (p.len / 4u);
  let m = stats[2u * r];
  let rstd = stats[2u * r + 1u];
  var acc = vec2f(0.0);
  for (var j = sl.y; j < n; j += SEG) {
    let gj = dy4[base + j] * w4[j * p.w_stride];
    acc += vec2f(sum4(gj), dot(gj, (x4[base + j] - m) * rstd));
  }
  let mg = seg_sum2(t, acc) / f32(p.len);
  for (var j = sl.y; j < n; j += SEG) {
    let i = base + j;
    dx4[i] = rstd * (dy4[i] * w4[j * p.w_stride] - mg.x - (x4[i] - m) * rstd * mg.y);
  }
}

var<workgroup> nv4: array<vec4f, 2u * WG>;

// Columns 4c .. 4c + 3's sums over the rows of dy * xhat (dw) and dy (db), a segment per
// four columns; lane l sums rows l, l + SEG, ...
@compute @workgroup_size(WG)
fn layer_norm_backward_params_vec4(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                                   @builtin(local_invocation_index) t: u32) {
  let sl = segment(g, nw, t);
  let c = sl.x;
  let w = p.len / 4u;
  let n = select(0u, p.rows, c < w);
  var aw = vec4f(0.0);
  var ab = vec4f(0.0);
  for (var r = sl.y; r < n; r += SEG) {
    let d = dy4[r * w + c];
    aw += d * (x4[r * w + c] - stats[2u * r]) * stats[2u * r + 1u];
    ab += d;
  }
  nv4[2u * t] = aw;
  nv4[2u * t + 1u] = ab;
  workgroupBarrier();
  let lane = sl.y;
  for (var s = SEG / 2u; s > 0u; s = s >> 1u) {
    if (lane < s) {
      nv4[2u * t] += nv4[2u * (t + s)];
      nv4[2u * t + 1u] += nv4[2u * (t + s) + 1u];
    }
    workgroupBarrier();
  }
  if (lane == 0u && c < w) { dw4[c] = nv4[2u * t]; db4[c] = nv4[2u * t + 1u]; }
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
// Blocked as the layer norm row kernels (one SEG-thread segment per row).
@compute @workgroup_size(WG)
fn rms_norm_forward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                    @builtin(local_invocation_index) t: u32) {
  let sl = segment(g, nw, t);
  let r = sl.x;
  let n = select(0u, p.len, r < p.rows);
  let base = r * p.len;
  var q = 0.0;
  for (var j = sl.y; j < n; j += SEG) { let xj = x[base + j]; q += xj * xj; }
  let rstd = inverseSqrt(seg_sum2(t, vec2f(q, 0.0)).x / f32(p.len) + p.eps);
  for (var j = sl.y; j < n; j += SEG) { y[base + j] = x[base + j] * rstd * w[j * p.w_stride]; }
  if (sl.y == 0u && r < p.rows) { stats[2u * r] = 0.0; stats[2u * r + 1u] = rstd; }
}

// With g = dy * w and xhat = x * rstd: dx = rstd * (g - xhat * mean(g * xhat)).
@compute @workgroup_size(WG)
fn rms_norm_backward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                     @builtin(local_invocation_index) t: u32) {
  let sl = segment(g, nw, t);
  let r = min(sl.x, p.rows - 1u);
  let n = select(0u, p.len, sl.x < p.rows);
  let base = r * p.len;
  let rstd = stats[2u * r + 1u];
  var acc = 0.0;
  for (var j = sl.y; j < n; j += SEG) { let i = base + j; acc += dy[i] * w[j * p.w_stride] * x[i] * rstd; }
  let mgx = seg_sum2(t, vec2f(acc, 0.0)).x / f32(p.len);
  for (var j = sl.y; j < n; j += SEG) {
    let i = base + j;
    dx[i] = rstd * (dy[i] * w[j * p.w_stride] - x[i] * rstd * mgx);
  }
}
