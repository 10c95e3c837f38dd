// Inverted dropout with a counter-based mask: element i is kept when the uniform
// number u(seed, i) is >= p, and kept values are scaled by 1 / (1 - p). u is the same
// PCG hash as shaders/fill.wgsl's uniform_forward, so `rand(shape, { seed })` and this
// mask agree, on every device; the backward regenerates the mask from the seed
// instead of storing it.
override WG: u32 = 256;

struct Params { n: u32, seed: u32, p: f32, scale: f32 }  // mirrored in src/tensor/ops/dropout.ts
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;

fn index(g: vec3u, nw: vec3u) -> u32 { return g.y * nw.x * WG + g.x; }

// PCG-RXS-M-XS 32-bit output permutation (O'Neill), used as a hash (as in fill.wgsl).
fn pcg(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}
// Uniform in [0, 1) with 24 random bits (exact in f32).
fn unit(seed: u32, i: u32) -> f32 { return f32(pcg(pcg(seed) + i) >> 8u) * (1.0 / 16777216.0); }
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
