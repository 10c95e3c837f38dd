// Tensor creation: constant fill, arange, seeded uniform and normal random numbers,
// and dtype casts. Random numbers are counter-based (a PCG hash of seed and index),
// so a seed gives the same tensor on every device and in test/reference/random.ts.
override WG: u32 = 256;

struct Params { n: u32, value: f32, start: f32, step: f32, seed: u32, lo: f32, hi: f32 }  // mirrored in src/tensor/creation.ts
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> xi: array<i32>;
@group(0) @binding(3) var<storage, read> xf: array<f32>;
@group(0) @binding(4) var<storage, read_write> yi: array<i32>;

// #include "lib/grid.wgsl"
// #include "lib/pcg.wgsl"

@compute @workgroup_size(WG)
fn fill_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.n) { return; }
  y[i] = p.value;
}

@compute @workgroup_size(WG)
fn arange_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.n) { return; }
  y[i] = p.start + f32(i) * p.step;
}

@compute @workgroup_size(WG)
fn uniform_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.n) { return; }
  y[i] = p.lo + (p.hi - p.lo) * unit(p.seed, i);
}

// Box-Muller on two uniforms drawn at counters 2i and 2i+1; 1 - u keeps log away from 0.
@compute @workgroup_size(WG)
fn normal_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.n) { return; }
  let u1 = 1.0 - unit(p.seed, 2u * i);
  let u2 = unit(p.seed, 2u * i + 1u);
  y[i] = p.lo + p.hi * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

@compute @workgroup_size(WG)
fn i32_to_f32_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.n) { return; }
  y[i] = f32(xi[i]);
}

// Truncation toward zero, as PyTorch's .to(int32).
@compute @workgroup_size(WG)
fn f32_to_i32_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.n) { return; }
  yi[i] = i32(xf[i]);
}

// In place: yi += i32(value), a counter's step (BatchNorm's num_batches_tracked), recorded
// like any op so it stays in program order with the step's other work.
@compute @workgroup_size(WG)
fn increment_i32_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.n) { return; }
  yi[i] = yi[i] + i32(p.value);
}
