// Rotary position embedding (RoPE) on x [rows, T, D] (rows = every leading dim): the pair
// (a, b) of a row at position pos = offset + (row mod T) turns by pos * base^(-2i/D).
// cos and sin come from a host-built f64-accurate table tab[(pos * D/2 + i) * 2 + {0, 1}]
// (f32 sin of a large angle computed on the GPU loses digits). One thread per pair.
// Pairs are (i, i + D/2) ("rotate half", GPT-NeoX / LLaMA) or (2i, 2i + 1) when interleaved.
override WG: u32 = 256;

struct Params { pairs: u32, t: u32, d: u32, offset: u32, interleaved: u32 }  // mirrored in src/tensor/ops/rope.ts
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> tab: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

// #include "lib/grid.wgsl"

// Element indices of pair n and its (cos, sin).
struct Pair { a: u32, b: u32, cs: vec2f }
fn pair(n: u32) -> Pair {
  let half = p.d / 2u;
  let row = n / half;
  let i = n % half;
  let pos = p.offset + row % p.t;
  let k = (pos * half + i) * 2u;
  let a = select(row * p.d + i, row * p.d + 2u * i, p.interleaved != 0u);
  let b = select(a + half, a + 1u, p.interleaved != 0u);
  return Pair(a, b, vec2f(tab[k], tab[k + 1u]));
}

@compute @workgroup_size(WG)
fn rope_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let n = index(g, nw);
  if (n >= p.pairs) { return; }
  let q = pair(n);
  let xa = x[q.a];
  let xb = x[q.b];
  y[q.a] = xa * q.cs.x - xb * q.cs.y;
  y[q.b] = xa * q.cs.y + xb * q.cs.x;
}

// The transpose of a rotation is the rotation by the opposite angle (x holds dy, y dx).
@compute @workgroup_size(WG)
fn rope_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let n = index(g, nw);
  if (n >= p.pairs) { return; }
  let q = pair(n);
  let ga = x[q.a];
  let gb = x[q.b];
  y[q.a] = ga * q.cs.x + gb * q.cs.y;
  y[q.b] = -ga * q.cs.y + gb * q.cs.x;
}
