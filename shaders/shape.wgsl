// Shape ops as one strided copy: permute/transpose, expand, narrow, cat. Output
// element i is unravelled over the iteration shape d0..d5 (padded on the left with 1)
// and copies src[src_base + Σ i_k·s_k] to dst[dst_base + Σ i_k·t_k]. A gather (permute,
// expand, narrow) has contiguous t; a scatter (cat, narrow's backward) contiguous s;
// expand reads with stride 0 along broadcast dims. The op merges dims that are
// contiguous in both src and dst first, so most copies use one or two of the six.
// NOTE: the buffers are u32 so f32, i32 and u32 tensors all copy bit-exactly (an f32
// load/store may canonicalise NaN payloads or flush an i32 that reads as a denormal).
override WG: u32 = 256;

struct Params {  // mirrored in src/tensor/ops/shape.ts
  n: u32, src_base: u32, dst_base: u32,
  d0: u32, d1: u32, d2: u32, d3: u32, d4: u32, d5: u32,
  s0: u32, s1: u32, s2: u32, s3: u32, s4: u32, s5: u32,
  t0: u32, t1: u32, t2: u32, t3: u32, t4: u32, t5: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
// The same buffers four words at a time (the *_vec4 entries).
@group(0) @binding(3) var<storage, read> src4: array<vec4u>;
@group(0) @binding(4) var<storage, read_write> dst4: array<vec4u>;

// #include "lib/grid.wgsl"

// Source and destination offsets of element i.
fn offsets(i: u32) -> vec2u {
  var r = i;
  var s = p.src_base;
  var t = p.dst_base;
  let i5 = r % p.d5; r = r / p.d5; s += i5 * p.s5; t += i5 * p.t5;
  let i4 = r % p.d4; r = r / p.d4; s += i4 * p.s4; t += i4 * p.t4;
  let i3 = r % p.d3; r = r / p.d3; s += i3 * p.s3; t += i3 * p.t3;
  let i2 = r % p.d2; r = r / p.d2; s += i2 * p.s2; t += i2 * p.t2;
  let i1 = r % p.d1; r = r / p.d1; s += i1 * p.s1; t += i1 * p.t1;
  s += r * p.s0; t += r * p.t0;
  return vec2u(s, t);
}

fn copy(i: u32) {
  let o = offsets(i);
  dst[o.y] = src[o.x];
}

// The *_vec4 entries: the host planned the copy in units of 4 words (the innermost dim
// contiguous on both sides and a multiple of 4, every other stride and both bases too), so
// one thread moves a vec4 for one unravel (integer division is slow on CPU adapters).
fn copy4(i: u32) {
  let o = offsets(i);
  dst4[o.y] = src4[o.x];
}

// One entry per use, so a validation error or a profile names the op; the bodies are the same copy.
@compute @workgroup_size(WG)
fn permute_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  copy(i);
}
@compute @workgroup_size(WG)
fn expand_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  copy(i);
}
@compute @workgroup_size(WG)
fn narrow_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  copy(i);
}
// Writes dy into its slice of a zeroed dx.
@compute @workgroup_size(WG)
fn narrow_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  copy(i);
}
// Writes one input into its slice of the output.
@compute @workgroup_size(WG)
fn cat_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  copy(i);
}

// Four words a thread (see copy4).
@compute @workgroup_size(WG)
fn permute_forward_vec4(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  copy4(i);
}
@compute @workgroup_size(WG)
fn expand_forward_vec4(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  copy4(i);
}
@compute @workgroup_size(WG)
fn narrow_forward_vec4(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  copy4(i);
}
@compute @workgroup_size(WG)
fn narrow_backward_vec4(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  copy4(i);
}
@compute @workgroup_size(WG)
fn cat_forward_vec4(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  copy4(i);
}
