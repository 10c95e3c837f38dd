// Elementwise binary ops with NumPy broadcasting, comparisons, where, and in-place
// accumulation. Shapes are padded on the left to 6 dims; a (1), b (2) and c (5) are
// read through their own strides (0 along broadcast dims); `same` = 1 skips the index
// math when every operand already has the output's shape.
// Backward entries write the elementwise gradient at the output's shape; the op then
// sums it down to each input's shape (reduce.wgsl).
override WG: u32 = 256;

struct Params {  // mirrored in src/tensor/ops/binary.ts
  n: u32, same: u32,
  o0: u32, o1: u32, o2: u32, o3: u32, o4: u32, o5: u32,
  a0: u32, a1: u32, a2: u32, a3: u32, a4: u32, a5: u32,
  b0: u32, b1: u32, b2: u32, b3: u32, b4: u32, b5: u32,
  c0: u32, c1: u32, c2: u32, c3: u32, c4: u32, c5: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> dy: array<f32>;
@group(0) @binding(5) var<storage, read> c: array<f32>;

// #include "lib/grid.wgsl"

// NOTE: a NaN built from a `var`, not a constant: Tint (Chromium) rejects constant
// expressions that evaluate to NaN.
fn quiet_nan() -> f32 {
  var bits = 0x7fc00000u;
  return bitcast<f32>(bits);
}

// Offsets of output element i into a, b and c.
fn offsets(i: u32) -> vec3u {
  if (p.same == 1u) { return vec3u(i, i, i); }
  var r = i;
  let i5 = r % p.o5; r = r / p.o5;
  let i4 = r % p.o4; r = r / p.o4;
  let i3 = r % p.o3; r = r / p.o3;
  let i2 = r % p.o2; r = r / p.o2;
  let i1 = r % p.o1; r = r / p.o1;
  let i0 = r;
  let oa = i0 * p.a0 + i1 * p.a1 + i2 * p.a2 + i3 * p.a3 + i4 * p.a4 + i5 * p.a5;
  let ob = i0 * p.b0 + i1 * p.b1 + i2 * p.b2 + i3 * p.b3 + i4 * p.b4 + i5 * p.b5;
  let oc = i0 * p.c0 + i1 * p.c1 + i2 * p.c2 + i3 * p.c3 + i4 * p.c4 + i5 * p.c5;
  return vec3u(oa, ob, oc);
}

// x ^ e, with negative bases allowed for integer exponents (as PyTorch).
fn powf(v: f32, e: f32) -> f32 {
  if (e == 0.0) { return 1.0; }
  if (e == 2.0) { return v * v; }
  let m = pow(abs(v), e);
  if (v >= 0.0) { return m; }
  if (floor(e) != e) { return quiet_nan(); }
  return select(m, -m, (e - 2.0 * floor(e / 2.0)) == 1.0);
}

@compute @workgroup_size(WG)
fn add_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = a[o.x] + b[o.y];
}
@compute @workgroup_size(WG)
fn sub_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = a[o.x] - b[o.y];
}
@compute @workgroup_size(WG)
fn mul_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = a[o.x] * b[o.y];
}
@compute @workgroup_size(WG)
fn div_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = a[o.x] / b[o.y];
}
@compute @workgroup_size(WG)
fn pow_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = powf(a[o.x], b[o.y]);
}
@compute @workgroup_size(WG)
fn maximum_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = max(a[o.x], b[o.y]);
}
@compute @workgroup_size(WG)
fn minimum_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = min(a[o.x], b[o.y]);
}

// Comparisons give 1.0 or 0.0.
@compute @workgroup_size(WG)
fn eq_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = select(0.0, 1.0, a[o.x] == b[o.y]);
}
@compute @workgroup_size(WG)
fn ne_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = select(0.0, 1.0, a[o.x] != b[o.y]);
}
@compute @workgroup_size(WG)
fn lt_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = select(0.0, 1.0, a[o.x] < b[o.y]);
}
@compute @workgroup_size(WG)
fn le_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = select(0.0, 1.0, a[o.x] <= b[o.y]);
}
@compute @workgroup_size(WG)
fn gt_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = select(0.0, 1.0, a[o.x] > b[o.y]);
}
@compute @workgroup_size(WG)
fn ge_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = select(0.0, 1.0, a[o.x] >= b[o.y]);
}

// where(c, a, b): a where c != 0, else b.
@compute @workgroup_size(WG)
fn where_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = select(b[o.y], a[o.x], c[o.z] != 0.0);
}
// Gradient of where towards a (b_side = 0) or b (b_side = 1) is dy masked by c; kept in a
// separate entry per side so each binds only what it reads.
@compute @workgroup_size(WG)
fn where_backward_a(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = select(0.0, dy[i], c[o.z] != 0.0);
}
@compute @workgroup_size(WG)
fn where_backward_b(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  y[i] = select(dy[i], 0.0, c[o.z] != 0.0);
}

// Elementwise gradients at the output's shape (the op sums them to each input's shape).
@compute @workgroup_size(WG)
fn mul_backward_a(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = dy[i] * b[offsets(i).y];
}
@compute @workgroup_size(WG)
fn mul_backward_b(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = dy[i] * a[offsets(i).x];
}
@compute @workgroup_size(WG)
fn div_backward_a(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = dy[i] / b[offsets(i).y];
}
@compute @workgroup_size(WG)
fn div_backward_b(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  let vb = b[o.y];
  y[i] = -dy[i] * a[o.x] / (vb * vb);
}
@compute @workgroup_size(WG)
fn pow_backward_a(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  let e = b[o.y];
  y[i] = select(e * powf(a[o.x], e - 1.0) * dy[i], 0.0, e == 0.0);
}
// d(a^b)/db = a^b ln a; 0 where a = 0 and b > 0 (PyTorch's convention).
@compute @workgroup_size(WG)
fn pow_backward_b(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  let va = a[o.x];
  let vb = b[o.y];
  y[i] = select(powf(va, vb) * log(va) * dy[i], 0.0, va == 0.0 && vb >= 0.0);
}
// NOTE: at a tie maximum/minimum send half the gradient to each side, as PyTorch.
@compute @workgroup_size(WG)
fn maximum_backward_a(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  let va = a[o.x]; let vb = b[o.y];
  y[i] = select(select(0.0, dy[i], va > vb), 0.5 * dy[i], va == vb);
}
@compute @workgroup_size(WG)
fn maximum_backward_b(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  let va = a[o.x]; let vb = b[o.y];
  y[i] = select(select(0.0, dy[i], vb > va), 0.5 * dy[i], va == vb);
}
@compute @workgroup_size(WG)
fn minimum_backward_a(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  let va = a[o.x]; let vb = b[o.y];
  y[i] = select(select(0.0, dy[i], va < vb), 0.5 * dy[i], va == vb);
}
@compute @workgroup_size(WG)
fn minimum_backward_b(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let o = offsets(i);
  let va = a[o.x]; let vb = b[o.y];
  y[i] = select(select(0.0, dy[i], vb < va), 0.5 * dy[i], va == vb);
}

// y += a (same shape): gradient accumulation into a kept .grad.
@compute @workgroup_size(WG)
fn accumulate_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  y[i] = y[i] + a[i];
}
