// Loss functions with PyTorch semantics (reduction "none" | "sum" | "mean").
//
// Class losses read logits or log-probabilities x [N, C] and i32 targets [N]:
// - cross_entropy_forward: one workgroup per row (one thread per row with few classes:
//   cross_entropy_forward_rows), fused log-softmax + NLL (+ label smoothing); writes the row loss to `el` and the row's max and log-sum-exp to
//   stats[2r], stats[2r+1] for the backward.
// - nll_forward: one thread per row.
// - class_mean_forward: one workgroup sums the row losses and divides by the number of
//   rows whose target is not ignore_index, storing that count at stats[den_at].
// Elementwise losses (mse, l1, smooth_l1, bce, bce_logits, kl_div, focal) read a prediction `a` and a target `b` of one shape, write the
// per-element loss to `el`, and total_forward sums it (times `scale`: 1 or 1/n).
//
// Backward kernels are elementwise. The upstream gradient of an element is dy[i]
// (mode 0, reduction "none"), dy[0] * scale (mode 1: "sum", or an elementwise "mean"
// with scale 1/n), or dy[0] / stats[den_at] (mode 2: a class-loss "mean").
override WG: u32 = 256;

struct Params {  // mirrored in src/tensor/ops/loss.ts
  n: u32, classes: u32, ignore_index: i32, smoothing: f32,
  mode: u32, scale: f32, den_at: u32, beta: f32, pw_n: u32,
  log_target: u32, alpha: f32, gamma: f32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> tgt: array<i32>;
@group(0) @binding(4) var<storage, read_write> el: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;
@group(0) @binding(6) var<storage, read_write> stats: array<f32>;
@group(0) @binding(7) var<storage, read> dy: array<f32>;
@group(0) @binding(8) var<storage, read_write> dx: array<f32>;
@group(0) @binding(9) var<storage, read> pw: array<f32>;

// #include "lib/grid.wgsl"
// #include "lib/reduce.wgsl"

// NOTE: built from a var: Tint (Chromium) rejects a constant expression that is NaN.
fn nan() -> f32 {
  var bits = 0x7fc00000u;
  return bitcast<f32>(bits);
}

// log(1 + u) for u > -1, accurate to a few ulps for small u (WGSL has no log1p):
// the rounding of 1 + u is divided back out (Goldberg's trick).
fn log1p(u: f32) -> f32 {
  let w = 1.0 + u;
  if (w == 1.0) { return u; }
  return log(w) * u / (w - 1.0);
}
fn sigmoid(v: f32) -> f32 {
  let e = exp(-abs(v));
  return select(e / (1.0 + e), 1.0 / (1.0 + e), v >= 0.0);
}

// Upstream gradient for element or row i of an elementwise loss (modes 0 and 1).
fn upstream(i: u32) -> f32 { return select(dy[i], dy[0] * p.scale, p.mode != 0u); }
// The same for a class loss, whose "mean" divides by the count of non-ignored rows.
fn upstream_class(r: u32) -> f32 {
  if (p.mode == 2u) { return dy[0] / stats[p.den_at]; }
  return select(dy[r], dy[0] * p.scale, p.mode != 0u);
}

// ---- cross entropy and NLL -------------------------------------------------

// loss_r = lse - (1 - eps) x_t - (eps / C) sum_j x_j, written as
// log(sum exp(x - m)) + (1 - eps)(m - x_t) + (eps / C) sum_j (m - x_j): each term is
// non-negative, so nothing cancels even for logits around 1e3.
@compute @workgroup_size(WG)
fn cross_entropy_forward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                         @builtin(local_invocation_index) t: u32) {
  let r = group_index(g, nw);
  if (r >= p.n) { return; }  // uniform per workgroup
  let base = r * p.classes;
  var m = -0x1.fffffep+127f;  // -FLT_MAX, exact (Tint rejects decimals that round past it)
  for (var j = t; j < p.classes; j += WG) { m = max(m, a[base + j]); }
  m = wg_max(t, m);
  var s = 0.0;
  var d = 0.0;
  for (var j = t; j < p.classes; j += WG) { let v = a[base + j]; s += exp(v - m); d += m - v; }
  s = wg_sum(t, s);
  d = wg_sum(t, d);
  if (t == 0u) { cross_entropy_row(r, m, s, d); }
}

// The same, one thread per row: for few classes, where a workgroup per row would spend its
// time in barriers (slow on software adapters) for a handful of logits.
@compute @workgroup_size(WG)
fn cross_entropy_forward_rows(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let r = index(gid, nw);
  if (r >= p.n) { return; }
  let base = r * p.classes;
  var m = -0x1.fffffep+127f;
  for (var j = 0u; j < p.classes; j++) { m = max(m, a[base + j]); }
  var s = 0.0;
  var d = 0.0;
  for (var j = 0u; j < p.classes; j++) { let v = a[base + j]; s += exp(v - m); d += m - v; }
  cross_entropy_row(r, m, s, d);
}

// Row r's loss from its max m, Σ exp(x - m) and Σ (m - x); saves m and the log-sum-exp.
fn cross_entropy_row(r: u32, m: f32, s: f32, d: f32) {
  let ls = log(s);
  let tg = tgt[r];
  var loss = 0.0;
  if (tg != p.ignore_index) {
    if (tg < 0 || u32(tg) >= p.classes) {
      loss = nan();  // NOTE: a target outside [0, C) cannot be reported from the GPU; NaN makes it visible
    } else {
      loss = ls + (1.0 - p.smoothing) * (m - a[r * p.classes + u32(tg)]) + p.smoothing / f32(p.classes) * d;
    }
  }
  el[r] = loss;
  stats[2u * r] = m;
  stats[2u * r + 1u] = ls;
}

// dx = g_r * (softmax(x)_j - q_j) with q = (1 - eps) onehot(t) + eps / C; 0 on ignored rows.
@compute @workgroup_size(WG)
fn cross_entropy_backward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n * p.classes) { return; }
  let r = i / p.classes;
  let j = i % p.classes;
  let tg = tgt[r];
  if (tg == p.ignore_index) { dx[i] = 0.0; return; }
  if (tg < 0 || u32(tg) >= p.classes) { dx[i] = nan(); return; }
  let prob = exp((a[i] - stats[2u * r]) - stats[2u * r + 1u]);
  let q = select(0.0, 1.0 - p.smoothing, u32(tg) == j) + p.smoothing / f32(p.classes);
  dx[i] = upstream_class(r) * (prob - q);
}

// loss_r = -x[r, t_r]; 0 where t_r is ignore_index.
@compute @workgroup_size(WG)
fn nll_forward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let r = index(gid, nw);
  if (r >= p.n) { return; }
  let tg = tgt[r];
  var loss = 0.0;
  if (tg != p.ignore_index) {
    if (tg < 0 || u32(tg) >= p.classes) { loss = nan(); } else { loss = -a[r * p.classes + u32(tg)]; }
  }
  el[r] = loss;
}

@compute @workgroup_size(WG)
fn nll_backward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n * p.classes) { return; }
  let r = i / p.classes;
  let tg = tgt[r];
  if (tg == p.ignore_index) { dx[i] = 0.0; return; }
  if (tg < 0 || u32(tg) >= p.classes) { dx[i] = nan(); return; }
  dx[i] = select(0.0, -upstream_class(r), u32(tg) == i % p.classes);
}

// y = sum of row losses / count of rows not ignored (0 / 0 = NaN when all are, as PyTorch).
@compute @workgroup_size(WG)
fn class_mean_forward(@builtin(local_invocation_index) t: u32) {
  var acc = 0.0;
  var cnt = 0.0;
  for (var r = t; r < p.n; r += WG) {
    acc += el[r];
    cnt += select(1.0, 0.0, tgt[r] == p.ignore_index);
  }
  acc = wg_sum(t, acc);
  cnt = wg_sum(t, cnt);
  if (t == 0u) { y[0] = acc / cnt; stats[p.den_at] = cnt; }
}

// cross_entropy_forward_rows then class_mean_forward in one launch, for a batch one workgroup
// covers: thread t computes rows t, t + WG, ... and sums their losses in that order, as
// class_mean_forward's thread t does, so y has the same bits.
@compute @workgroup_size(WG)
fn cross_entropy_mean_forward_rows(@builtin(local_invocation_index) t: u32) {
  var acc = 0.0;
  var cnt = 0.0;
  for (var r = t; r < p.n; r += WG) {
    let base = r * p.classes;
    var m = -0x1.fffffep+127f;
    for (var j = 0u; j < p.classes; j++) { m = max(m, a[base + j]); }
    var s = 0.0;
    var d = 0.0;
    for (var j = 0u; j < p.classes; j++) { let v = a[base + j]; s += exp(v - m); d += m - v; }
    cross_entropy_row(r, m, s, d);
    acc += el[r];
    cnt += select(1.0, 0.0, tgt[r] == p.ignore_index);
  }
  acc = wg_sum(t, acc);
  cnt = wg_sum(t, cnt);
  if (t == 0u) { y[0] = acc / cnt; stats[p.den_at] = cnt; }
}

// y = scale * sum of the n losses in `el` (scale 1 for "sum", 1/n for "mean").
@compute @workgroup_size(WG)
fn total_forward(@builtin(local_invocation_index) t: u32) {
  var acc = 0.0;
  for (var i = t; i < p.n; i += WG) { acc += el[i]; }
  acc = wg_sum(t, acc);
  if (t == 0u) { y[0] = acc * p.scale; }
}

// ---- elementwise losses: a = prediction, b = target --------------------------

@compute @workgroup_size(WG)
fn mse_forward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  let d = a[i] - b[i];
  el[i] = d * d;
}
@compute @workgroup_size(WG)
fn mse_backward_a(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  dx[i] = 2.0 * (a[i] - b[i]) * upstream(i);
}
@compute @workgroup_size(WG)
fn mse_backward_b(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  dx[i] = 2.0 * (b[i] - a[i]) * upstream(i);
}

// NOTE: the gradient of |d| at d = 0 is 0 (sign(0)), as PyTorch.
@compute @workgroup_size(WG)
fn l1_forward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  el[i] = abs(a[i] - b[i]);
}
@compute @workgroup_size(WG)
fn l1_backward_a(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  dx[i] = sign(a[i] - b[i]) * upstream(i);
}
@compute @workgroup_size(WG)
fn l1_backward_b(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  dx[i] = sign(b[i] - a[i]) * upstream(i);
}

// Huber-like: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta. beta = 0 is L1
// (the quadratic branch never applies), as PyTorch.
fn smooth_l1_grad(d: f32) -> f32 { return select(sign(d), d / p.beta, abs(d) < p.beta); }
@compute @workgroup_size(WG)
fn smooth_l1_forward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  let d = abs(a[i] - b[i]);
  el[i] = select(d - 0.5 * p.beta, 0.5 * d * d / p.beta, d < p.beta);
}
@compute @workgroup_size(WG)
fn smooth_l1_backward_a(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  dx[i] = smooth_l1_grad(a[i] - b[i]) * upstream(i);
}
@compute @workgroup_size(WG)
fn smooth_l1_backward_b(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  dx[i] = smooth_l1_grad(b[i] - a[i]) * upstream(i);
}

// Binary cross entropy on probabilities. NOTE: as PyTorch, each log is clamped to
// >= -100 so p = 0 or 1 gives a finite loss, and the gradient's denominator p (1 - p)
// is clamped to >= 1e-12.
@compute @workgroup_size(WG)
fn bce_forward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  let x = a[i];
  let t = b[i];
  el[i] = -(t * clamped_log(x) + (1.0 - t) * clamped_log1p(-x));
}

// max(log(x), -100) and max(log1p(u), -100), with log(0) taken as -100 itself:
// SwiftShader's log(0) is -127·ln 2 ≈ -88.03, not -inf.
fn clamped_log(x: f32) -> f32 {
  if (x <= 0.0) { return -100.0; }
  return max(log(x), -100.0);
}
fn clamped_log1p(u: f32) -> f32 {
  if (u <= -1.0) { return -100.0; }
  return max(log1p(u), -100.0);
}
@compute @workgroup_size(WG)
fn bce_backward_a(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  let x = a[i];
  dx[i] = (x - b[i]) / max((1.0 - x) * x, 1e-12) * upstream(i);
}

// Binary cross entropy on logits, PyTorch's stable form with pos_weight w (broadcast
// over the trailing pw_n elements): with lw = 1 + (w - 1) t,
// loss = (1 - t) x + lw * softplus(-x), softplus(-x) = log1p(exp(-|x|)) + max(-x, 0).
@compute @workgroup_size(WG)
fn bce_logits_forward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  let x = a[i];
  let t = b[i];
  let lw = 1.0 + (pw[i % p.pw_n] - 1.0) * t;
  el[i] = (1.0 - t) * x + lw * (log1p(exp(-abs(x))) + max(-x, 0.0));
}
// d/dx = (1 - t) - lw sigmoid(-x) = (1 - t) sigmoid(x) - w t sigmoid(-x): the second
// form has no cancellation when t is 0 or 1 and |x| is large.
@compute @workgroup_size(WG)
fn bce_logits_backward_a(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  let x = a[i];
  let t = b[i];
  dx[i] = ((1.0 - t) * sigmoid(x) - pw[i % p.pw_n] * t * sigmoid(-x)) * upstream(i);
}

// ---- KL divergence: a = input (log-probabilities), b = target --------------------------

// As torch.nn.functional.kl_div: target · (log target − input), with 0 where target = 0
// (xlogy), or with log_target: e^target · (target − input). Reductions scale the sum by 1
// ("sum"), 1/n ("mean", every element, as PyTorch) or 1/N ("batchmean", input's dim 0).
@compute @workgroup_size(WG)
fn kl_div_forward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  let x = a[i];
  let t = b[i];
  let plain = select(t * (log(t) - x), 0.0, t == 0.0);
  el[i] = select(plain, exp(t) * (t - x), p.log_target != 0u);
}
@compute @workgroup_size(WG)
fn kl_div_backward_a(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  let t = b[i];
  dx[i] = -select(t, exp(t), p.log_target != 0u) * upstream(i);
}
// NOTE: d/dtarget is log t + 1 − input, NaN at t = 0 as PyTorch's (xlogy's 0/0); with
// log_target it is e^t (t − input + 1).
@compute @workgroup_size(WG)
fn kl_div_backward_b(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  let x = a[i];
  let t = b[i];
  let plain = select(log(t) + 1.0 - x, nan(), t == 0.0);
  dx[i] = select(plain, exp(t) * (t - x + 1.0), p.log_target != 0u) * upstream(i);
}

// ---- sigmoid focal loss: a = logits, b = targets in [0, 1] -----------------------------

// torchvision.ops.sigmoid_focal_loss: ce · (1 − p_t)^gamma · alpha_t, with ce the BCE of
// the logits, p_t = σ(x) t + σ(−x)(1 − t) and alpha_t = alpha t + (1 − alpha)(1 − t)
// (1 when alpha < 0). 1 − p_t is computed as σ(x)(1 − t) + σ(−x) t: no cancellation when
// the prediction is confident, where the loss lives.
fn focal_pow(m: f32, e: f32) -> f32 {
  if (e == 0.0) { return 1.0; }
  if (m <= 0.0) { return 0.0; }
  return pow(m, e);
}
fn focal_alpha(t: f32) -> f32 {
  return select(1.0, p.alpha * t + (1.0 - p.alpha) * (1.0 - t), p.alpha >= 0.0);
}
@compute @workgroup_size(WG)
fn focal_forward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  let x = a[i];
  let t = b[i];
  let ce = (1.0 - t) * x + log1p(exp(-abs(x))) + max(-x, 0.0);
  let m = sigmoid(x) * (1.0 - t) + sigmoid(-x) * t;
  el[i] = focal_alpha(t) * ce * focal_pow(m, p.gamma);
}
// d/dx = alpha_t [(σ(x) − t) m^gamma + ce · gamma m^(gamma − 1) · σ(x) σ(−x) (1 − 2t)].
@compute @workgroup_size(WG)
fn focal_backward_a(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(gid, nw);
  if (i >= p.n) { return; }
  let x = a[i];
  let t = b[i];
  let s = sigmoid(x);
  let r = sigmoid(-x);
  let ce = (1.0 - t) * x + log1p(exp(-abs(x))) + max(-x, 0.0);
  let m = s * (1.0 - t) + r * t;
  let dce = (1.0 - t) * s - t * r;
  let dm = s * r * (1.0 - 2.0 * t);
  let g = dce * focal_pow(m, p.gamma) + ce * p.gamma * focal_pow(m, p.gamma - 1.0) * dm;
  dx[i] = focal_alpha(t) * g * upstream(i);
}
