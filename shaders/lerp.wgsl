// Adopting a consensus in one pass over the flat parameters:
// out = (1 − alpha)·pre + alpha·post (alpha = 1: overwrite; EASGD: alpha in (0, 1)), and
// per-workgroup partial sums of (pre − post)², pre², post² for the divergence, which a
// second single-workgroup pass adds up.
override WG: u32 = 256;

struct Params { n: u32, alpha: f32, chunks: u32 }  // mirrored in src/tensor/ops/lerp.ts
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> pre: array<f32>;
@group(0) @binding(2) var<storage, read> post: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> partial: array<f32>;
@group(0) @binding(5) var<storage, read_write> total: array<f32>;

var<workgroup> s0: array<f32, WG>;
var<workgroup> s1: array<f32, WG>;
var<workgroup> s2: array<f32, WG>;

fn tree(t: u32) {
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (t < s) {
      s0[t] += s0[t + s];
      s1[t] += s1[t + s];
      s2[t] += s2[t + s];
    }
    workgroupBarrier();
  }
}

@compute @workgroup_size(WG)
fn lerp_norms_forward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                      @builtin(local_invocation_index) t: u32) {
  let c = g.y * nw.x + g.x;
  if (c >= p.chunks) { return; }  // uniform per workgroup
  let span = (p.n + p.chunks - 1u) / p.chunks;
  let lo = c * span;
  let hi = min(p.n, lo + span);
  var dd = 0.0;
  var aa = 0.0;
  var bb = 0.0;
  let keep = 1.0 - p.alpha;
  for (var i = lo + t; i < hi; i += WG) {
    let a = pre[i];
    let b = post[i];
    let d = a - b;
    dd += d * d;
    aa += a * a;
    bb += b * b;
    // NOTE: keep·a + alpha·b is exactly b when alpha = 1 (0·a = 0 for finite a).
    out[i] = keep * a + p.alpha * b;
  }
  s0[t] = dd;
  s1[t] = aa;
  s2[t] = bb;
  workgroupBarrier();
  tree(t);
  if (t == 0u) {
    partial[3u * c] = s0[0];
    partial[3u * c + 1u] = s1[0];
    partial[3u * c + 2u] = s2[0];
  }
}

@compute @workgroup_size(WG)
fn norms_total_forward(@builtin(local_invocation_index) t: u32) {
  var dd = 0.0;
  var aa = 0.0;
  var bb = 0.0;
  for (var c = t; c < p.chunks; c += WG) {
    dd += partial[3u * c];
    aa += partial[3u * c + 1u];
    bb += partial[3u * c + 2u];
  }
  s0[t] = dd;
  s1[t] = aa;
  s2[t] = bb;
  workgroupBarrier();
  tree(t);
  if (t == 0u) {
    total[0] = s0[0];
    total[1] = s1[0];
    total[2] = s2[0];
  }
}
