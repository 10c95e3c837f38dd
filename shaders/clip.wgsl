// Gradient clipping without a readback (torch.nn.utils.clip_grad_norm_ / clip_grad_value_).
// clip_grad_norm is three kernels (per gradient, or once for gradients packed in one flat
// buffer by a foreach optimizer: the *_multi entries): norm_partial reduces each gradient into a few partial
// values (one per workgroup) at its offset of a shared partials buffer, norm_total reduces
// all partials into the total norm and the clip coefficient, and clip_scale multiplies each
// gradient in place by the coefficient it reads from the GPU buffer, so the host never waits.
override WG: u32 = 256;

struct Params {  // mirrored in src/optim/clip.ts
  n: u32,            // elements of this gradient (norm_partial, clip_scale, clip_value)
  offset: u32,       // first partial slot of this gradient (norm_partial)
  count: u32,        // partials in all (norm_total)
  kind: u32,         // 0: max |g| (inf norm), 1: sum |g|^p, 2: sum g^2, 3: sum |g|
  norm_type: f32,    // p of kind 1
  max_norm: f32,
  clip_value: f32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> grad: array<f32>;
@group(0) @binding(2) var<storage, read_write> partials: array<f32>;
@group(0) @binding(3) var<storage, read_write> total: array<f32>;
@group(0) @binding(4) var<storage, read_write> coef: array<f32>;
// The *_multi entries: gradients packed in one flat buffer (a foreach optimizer group), one
// row [start, end) of at most WG elements per workgroup, one partial per row.
@group(0) @binding(5) var<storage, read> segments: array<vec2u>;

var<workgroup> sv: array<f32, WG>;

// #include "lib/grid.wgsl"

fn term(v: f32) -> f32 {
  switch (p.kind) {
    case 0u: { return abs(v); }
    case 1u: { return pow(abs(v), p.norm_type); }
    case 2u: { return v * v; }
    default: { return abs(v); }
  }
}

fn combine(a: f32, b: f32) -> f32 {
  if (p.kind == 0u) { return max(a, b); }
  return a + b;
}

// Tree-reduce sv[0..WG) into sv[0] with `combine` (every thread of the workgroup calls it).
fn reduce_shared(t: u32) {
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (t < s) { sv[t] = combine(sv[t], sv[t + s]); }
    workgroupBarrier();
  }
}

// Workgroup w of nw.x reduces elements w·WG + t, striding by nw.x·WG, into partials[offset + w].
@compute @workgroup_size(WG)
fn norm_partial_forward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
                        @builtin(local_invocation_index) t: u32) {
  var acc = 0.0;
  for (var i = wg.x * WG + t; i < p.n; i += nw.x * WG) { acc = combine(acc, term(grad[i])); }
  sv[t] = acc;
  reduce_shared(t);
  if (t == 0u) { partials[p.offset + wg.x] = sv[0]; }
}

// Every gradient of a packed group in one launch: workgroup w reduces row w (count rows) into
// partials[w].
@compute @workgroup_size(WG)
fn norm_partial_multi_forward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
    @builtin(local_invocation_index) t: u32) {
  let w = group_index(wg, nw);
  var acc = 0.0;
  if (w < p.count) {
    let s = segments[w];
    if (s.x + t < s.y) { acc = term(grad[s.x + t]); }
  }
  sv[t] = acc;
  reduce_shared(t);
  if (t == 0u && w < p.count) { partials[w] = sv[0]; }
}

// One workgroup: total = (sum of partials)^(1/p) (or their max), and the clip coefficient
// min(1, max_norm / (total + 1e-6)), PyTorch's clip_coef_clamped.
@compute @workgroup_size(WG)
fn norm_total_forward(@builtin(local_invocation_index) t: u32) {
  var acc = 0.0;
  for (var i = t; i < p.count; i += WG) { acc = combine(acc, partials[i]); }
  sv[t] = acc;
  reduce_shared(t);
  if (t == 0u) {
    let s = sv[0];
    var norm = s;
    if (p.kind == 1u) { norm = pow(s, 1.0 / p.norm_type); }
    if (p.kind == 2u) { norm = sqrt(s); }
    total[0] = norm;
    coef[0] = min(p.max_norm / (norm + 1e-6), 1.0);
  }
}

// grad *= coef[0], in place.
@compute @workgroup_size(WG)
fn clip_scale_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  grad[i] = grad[i] * coef[0];
}

// grad *= coef[0] over a packed group's rows.
@compute @workgroup_size(WG)
fn clip_scale_multi_forward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
    @builtin(local_invocation_index) t: u32) {
  let w = group_index(wg, nw); if (w >= p.count) { return; }
  let s = segments[w];
  let i = s.x + t; if (i >= s.y) { return; }
  grad[i] = grad[i] * coef[0];
}

// grad = clamp(grad, -clip_value, clip_value), in place.
@compute @workgroup_size(WG)
fn clip_value_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  grad[i] = clamp(grad[i], -p.clip_value, p.clip_value);
}
