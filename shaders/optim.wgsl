// Optimizer updates: one fused kernel per parameter per step (or one per packed group, the
// `_multi_` entries) reads the gradient and updates the parameter and its state in place.
// Both entries of an update call the same `<update>_at(i)`, so they round alike, bit for bit. The rules are PyTorch's single-tensor
// updates (torch/optim/sgd.py, adam.py, rmsprop.py), operation for operation, so the f32
// rounding matches theirs. An update has no backward; entries keep the `_forward` suffix.
// Scalars that depend on the step (bias corrections, 1 - beta) are computed on the host
// in f64 and arrive rounded once, as PyTorch passes Python floats.
override WG: u32 = 256;

struct Params {  // mirrored in src/optim/kernel.ts
  n: u32,
  first: u32,                // 1 when SGD's momentum buffer was just created: it starts as d_p
  lr: f32,
  weight_decay: f32,         // L2 penalty added to the gradient (SGD, Adam, RMSprop); 0 for AdamW
  decay: f32,                // AdamW's decoupled factor 1 - lr·weight_decay; 1 otherwise
  momentum: f32,             // SGD and RMSprop
  one_minus_dampening: f32,  // SGD
  nesterov: u32,             // SGD
  beta1: f32,
  one_minus_beta1: f32,
  beta2: f32,
  one_minus_beta2: f32,
  alpha: f32,                // RMSprop smoothing constant
  one_minus_alpha: f32,
  eps: f32,
  step_size: f32,            // Adam: lr / (1 - beta1^step)
  bc2_sqrt: f32,             // Adam: sqrt(1 - beta2^step)
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> param: array<f32>;
@group(0) @binding(2) var<storage, read> grad: array<f32>;
@group(0) @binding(3) var<storage, read_write> momentum_buffer: array<f32>;
@group(0) @binding(4) var<storage, read_write> exp_avg: array<f32>;
@group(0) @binding(5) var<storage, read_write> exp_avg_sq: array<f32>;
@group(0) @binding(6) var<storage, read_write> square_avg: array<f32>;
@group(0) @binding(7) var<storage, read_write> grad_avg: array<f32>;
// Multi-tensor entries (`*_multi_forward`): one dispatch updates a whole parameter group packed
// into flat buffers (param, grad and each state at the same offsets). Workgroup w updates
// elements [segments[w].x, segments[w].y): at most WG of one parameter, so padding between
// parameters (offsets are aligned for binding views) is never touched. p.n = workgroups.
// One element a thread, no loop: 4 a thread made Adam slower on lavapipe, and a loop of one
// pass ran 1.8x slower on SwiftShader (MLP Adam 8.6 ms against 4.7, bench/README.md).
@group(0) @binding(8) var<storage, read> segments: array<vec2u>;

// #include "lib/grid.wgsl"

const NONE: u32 = 0xffffffffu;

// The element thread t of workgroup wg updates in a multi-tensor entry, or NONE.
fn segment_index(wg: vec3u, nw: vec3u, t: u32) -> u32 {
  let w = group_index(wg, nw);
  if (w >= p.n) { return NONE; }
  let s = segments[w];
  let i = s.x + t;
  if (i >= s.y) { return NONE; }
  return i;
}

// The gradient with the L2 penalty, as `grad.add(param, alpha=weight_decay)`. The branch is
// uniform; skipping it when the decay is 0 keeps grad bit-exact for inf/nan parameters too.
fn decayed_grad(i: u32, w: f32) -> f32 {
  if (p.weight_decay != 0.0) { return grad[i] + p.weight_decay * w; }
  return grad[i];
}

// torch.lerp(a, b, t) for t < 0.5, the only weights used here (1 - beta1, 1 - alpha):
// a + t·(b - a).
fn lerp_low(a: f32, b: f32, t: f32) -> f32 { return a + t * (b - a); }

// SGD without momentum: param -= lr·d_p.
fn sgd_at(i: u32) {
  let w = param[i];
  param[i] = w - p.lr * decayed_grad(i, w);
}
@compute @workgroup_size(WG)
fn sgd_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i < p.n) { sgd_at(i); }
}
@compute @workgroup_size(WG)
fn sgd_multi_forward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
    @builtin(local_invocation_index) t: u32) {
  let i = segment_index(wg, nw, t); if (i != NONE) { sgd_at(i); }
}

// SGD with momentum: buf = d_p on its first step, else momentum·buf + (1 - dampening)·d_p;
// the step uses d_p + momentum·buf (Nesterov) or buf.
fn sgd_momentum_at(i: u32) {
  let w = param[i];
  let d = decayed_grad(i, w);
  var b = d;
  if (p.first == 0u) { b = p.momentum * momentum_buffer[i] + p.one_minus_dampening * d; }
  momentum_buffer[i] = b;
  let u = select(b, d + p.momentum * b, p.nesterov != 0u);
  param[i] = w - p.lr * u;
}
@compute @workgroup_size(WG)
fn sgd_momentum_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i < p.n) { sgd_momentum_at(i); }
}
@compute @workgroup_size(WG)
fn sgd_momentum_multi_forward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
    @builtin(local_invocation_index) t: u32) {
  let i = segment_index(wg, nw, t); if (i != NONE) { sgd_momentum_at(i); }
}

// Adam and AdamW. Adam adds the L2 penalty to the gradient (weight_decay), AdamW scales
// the parameter by `decay` before the update; the other factor is neutral (0 or 1).
// NOTE: denom = sqrt(v)/sqrt(1 - beta2^t) + eps, eps outside the bias correction as in
// PyTorch (not sqrt(v̂ + eps)).
fn adam_at(i: u32) {
  let w = param[i];
  let d = decayed_grad(i, w);
  let m = lerp_low(exp_avg[i], d, p.one_minus_beta1);
  let v = p.beta2 * exp_avg_sq[i] + p.one_minus_beta2 * d * d;
  exp_avg[i] = m;
  exp_avg_sq[i] = v;
  let denom = sqrt(v) / p.bc2_sqrt + p.eps;
  param[i] = w * p.decay - p.step_size * (m / denom);
}
@compute @workgroup_size(WG)
fn adam_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i < p.n) { adam_at(i); }
}
@compute @workgroup_size(WG)
fn adam_multi_forward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
    @builtin(local_invocation_index) t: u32) {
  let i = segment_index(wg, nw, t); if (i != NONE) { adam_at(i); }
}

// RMSprop's denominator sqrt(avg) + eps; centered subtracts the squared mean gradient.
fn rms_denom(sq: f32, ga: f32, centered: bool) -> f32 {
  if (centered) { return sqrt(sq - ga * ga) + p.eps; }
  return sqrt(sq) + p.eps;
}

fn rmsprop_at(i: u32) {
  let w = param[i];
  let d = decayed_grad(i, w);
  let sq = p.alpha * square_avg[i] + p.one_minus_alpha * d * d;
  square_avg[i] = sq;
  param[i] = w - p.lr * (d / rms_denom(sq, 0.0, false));
}
@compute @workgroup_size(WG)
fn rmsprop_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i < p.n) { rmsprop_at(i); }
}
@compute @workgroup_size(WG)
fn rmsprop_multi_forward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
    @builtin(local_invocation_index) t: u32) {
  let i = segment_index(wg, nw, t); if (i != NONE) { rmsprop_at(i); }
}

fn rmsprop_momentum_at(i: u32) {
  let w = param[i];
  let d = decayed_grad(i, w);
  let sq = p.alpha * square_avg[i] + p.one_minus_alpha * d * d;
  square_avg[i] = sq;
  let b = p.momentum * momentum_buffer[i] + d / rms_denom(sq, 0.0, false);
  momentum_buffer[i] = b;
  param[i] = w - p.lr * b;
}
@compute @workgroup_size(WG)
fn rmsprop_momentum_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i < p.n) { rmsprop_momentum_at(i); }
}
@compute @workgroup_size(WG)
fn rmsprop_momentum_multi_forward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
    @builtin(local_invocation_index) t: u32) {
  let i = segment_index(wg, nw, t); if (i != NONE) { rmsprop_momentum_at(i); }
}

fn rmsprop_centered_at(i: u32) {
  let w = param[i];
  let d = decayed_grad(i, w);
  let sq = p.alpha * square_avg[i] + p.one_minus_alpha * d * d;
  let ga = lerp_low(grad_avg[i], d, p.one_minus_alpha);
  square_avg[i] = sq;
  grad_avg[i] = ga;
  param[i] = w - p.lr * (d / rms_denom(sq, ga, true));
}
@compute @workgroup_size(WG)
fn rmsprop_centered_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i < p.n) { rmsprop_centered_at(i); }
}
@compute @workgroup_size(WG)
fn rmsprop_centered_multi_forward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
    @builtin(local_invocation_index) t: u32) {
  let i = segment_index(wg, nw, t); if (i != NONE) { rmsprop_centered_at(i); }
}

fn rmsprop_centered_momentum_at(i: u32) {
  let w = param[i];
  let d = decayed_grad(i, w);
  let sq = p.alpha * square_avg[i] + p.one_minus_alpha * d * d;
  let ga = lerp_low(grad_avg[i], d, p.one_minus_alpha);
  square_avg[i] = sq;
  grad_avg[i] = ga;
  let b = p.momentum * momentum_buffer[i] + d / rms_denom(sq, ga, true);
  momentum_buffer[i] = b;
  param[i] = w - p.lr * b;
}
@compute @workgroup_size(WG)
fn rmsprop_centered_momentum_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i < p.n) { rmsprop_centered_momentum_at(i); }
}
@compute @workgroup_size(WG)
fn rmsprop_centered_momentum_multi_forward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
    @builtin(local_invocation_index) t: u32) {
  let i = segment_index(wg, nw, t); if (i != NONE) { rmsprop_centered_momentum_at(i); }
}
