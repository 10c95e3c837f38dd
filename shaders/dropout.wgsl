// Inverted dropout with a counter-based mask: element i is kept when the uniform
// number u(seed, i) is >= p, and kept values are scaled by 1 / (1 - p). u is
// lib/pcg.wgsl's, as shaders/fill.wgsl's uniform_forward, so `rand(shape, { seed })` and this
// mask agree, on every device; the backward regenerates the mask from the seed
// instead of storing it.
override WG: u32 = 256;

struct Params { n: u32, seed: u32, p: f32, scale: f32 }  // mirrored in src/tensor/ops/dropout.ts
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;

// #include "lib/grid.wgsl"
// #include "lib/pcg.wgsl"

fn keep(i: u32) -> f32 { return select(0.0, p.scale, unit(p.seed, i) >= p.p); }

@compute @workgroup_size(WG)
fn dropout_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.n) { return; }
  y[i] = x[i] * keep(i);
}

@compute @workgroup_size(WG)
fn dropout_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.n) { return; }
  dx[i] = dy[i] * keep(i);
}
