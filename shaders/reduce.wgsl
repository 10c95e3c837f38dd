// Reductions over any set of dims. The op merges adjacent dims into at most 4 kept
// dims (k*, strides ks*) and 4 reduced dims (r*, strides rs*) of the input, so output
// element o and reduced index r address x[base(o) + off(r)]. One workgroup reduces
// one output in shared memory, threads striding over r.
override WG: u32 = 256;

struct Params {  // mirrored in src/tensor/ops/reduce.ts
  n_out: u32, len: u32, scale: f32, correction: f32,
  k0: u32, k1: u32, k2: u32, k3: u32,
  ks0: u32, ks1: u32, ks2: u32, ks3: u32,
  r0: u32, r1: u32, r2: u32, r3: u32,
  rs0: u32, rs1: u32, rs2: u32, rs3: u32,
  chunks: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> idx: array<i32>;
@group(0) @binding(4) var<storage, read> dy: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<f32>;
@group(0) @binding(6) var<storage, read> mean: array<f32>;
@group(0) @binding(7) var<storage, read> sel: array<i32>;

var<workgroup> sv: array<f32, WG>;
var<workgroup> si: array<i32, WG>;

fn out_index(g: vec3u, nw: vec3u) -> u32 { return g.y * nw.x + g.x; }

fn base(o: u32) -> u32 {
  var q = o;
  let i3 = q % p.k3; q = q / p.k3;
  let i2 = q % p.k2; q = q / p.k2;
  let i1 = q % p.k1; q = q / p.k1;
  return q * p.ks0 + i1 * p.ks1 + i2 * p.ks2 + i3 * p.ks3;
}
fn off(r: u32) -> u32 {
  var q = r;
  let i3 = q % p.r3; q = q / p.r3;
  let i2 = q % p.r2; q = q / p.r2;
  let i1 = q % p.r1; q = q / p.r1;
  return q * p.rs0 + i1 * p.rs1 + i2 * p.rs2 + i3 * p.rs3;
}

// y[o·chunks + c] = scale · Σ x over the c-th of `chunks` slices of output o's reduced
// range (sum: scale 1; mean: scale 1/len). chunks > 1 spreads a long reduction over many
// workgroups (one workgroup looping over 200k elements is slow on any adapter); the op
// then sums the partials in a second pass.
@compute @workgroup_size(WG)
fn sum_forward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
               @builtin(local_invocation_index) t: u32) {
  let w = out_index(g, nw);
  if (w >= p.n_out * p.chunks) { return; }  // uniform per workgroup
  let o = w / p.chunks;
  let c = w - o * p.chunks;
  let span = (p.len + p.chunks - 1u) / p.chunks;
  let lo = c * span;
  let hi = min(p.len, lo + span);
  let b = base(o);
  var acc = 0.0;
  for (var r = lo + t; r < hi; r += WG) { acc += x[b + off(r)]; }
  sv[t] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (t < s) { sv[t] += sv[t + s]; }
    workgroupBarrier();
  }
  if (t == 0u) { y[w] = sv[0] * p.scale; }
}

// The same sum, one thread per output looping over its whole range: for many outputs with
// short ranges (a bias gradient: 256 outputs of 64 rows), where a workgroup per output
// would spend its time in barriers (slow on software adapters) for a few additions.
@compute @workgroup_size(WG)
fn sum_serial(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let o = gid.y * nw.x * WG + gid.x;
  if (o >= p.n_out) { return; }
  let b = base(o);
  var acc = 0.0;
  for (var r = 0u; r < p.len; r++) { acc += x[b + off(r)]; }
  y[o] = acc * p.scale;
}

// dx[base(o) + off(r)] = scale * dy[o]: the gradient of sum/mean, broadcast back.
@compute @workgroup_size(WG)
fn sum_backward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                @builtin(local_invocation_index) t: u32) {
  let o = out_index(g, nw);
  if (o >= p.n_out) { return; }
  let b = base(o);
  let v = dy[o] * p.scale;
  for (var r = t; r < p.len; r += WG) { dx[b + off(r)] = v; }
}

// Variance with `correction` (1 = unbiased, as torch.var), given the mean per output.
@compute @workgroup_size(WG)
fn var_forward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
               @builtin(local_invocation_index) t: u32) {
  let o = out_index(g, nw);
  if (o >= p.n_out) { return; }
  let b = base(o);
  let m = mean[o];
  var acc = 0.0;
  for (var r = t; r < p.len; r += WG) { let d = x[b + off(r)] - m; acc += d * d; }
  sv[t] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (t < s) { sv[t] += sv[t + s]; }
    workgroupBarrier();
  }
  if (t == 0u) { y[o] = sv[0] / max(f32(p.len) - p.correction, 0.0); }
}
// d var / dx = 2 (x - mean) / (len - correction) * dy
@compute @workgroup_size(WG)
fn var_backward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                @builtin(local_invocation_index) t: u32) {
  let o = out_index(g, nw);
  if (o >= p.n_out) { return; }
  let b = base(o);
  let m = mean[o];
  let k = 2.0 * dy[o] / max(f32(p.len) - p.correction, 0.0);
  for (var r = t; r < p.len; r += WG) { let at = b + off(r); dx[at] = k * (x[at] - m); }
}

// max (scale = 1) or min (scale = -1) with the index of the first extreme, as
// torch.max(dim). NaN wins, as in PyTorch.
@compute @workgroup_size(WG)
fn max_forward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
               @builtin(local_invocation_index) t: u32) {
  let o = out_index(g, nw);
  if (o >= p.n_out) { return; }
  let b = base(o);
  var best = -0x1.fffffep+127f;  // -FLT_MAX, exact: Tint rejects decimal literals that round past it
  var bi = -1;
  for (var r = t; r < p.len; r += WG) {
    let v = x[b + off(r)] * p.scale;
    if (bi < 0 || v > best || (v != v && best == best)) { best = v; bi = i32(r); }
  }
  sv[t] = best;
  si[t] = bi;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (t < s) {
      let v = sv[t + s]; let j = si[t + s];
      let cur = sv[t]; let ci = si[t];
      let better = j >= 0 && (ci < 0 || v > cur || (v == cur && j < ci) || (v != v && cur == cur) ||
        (v != v && cur != cur && j < ci));
      if (better) { sv[t] = v; si[t] = j; }
    }
    workgroupBarrier();
  }
  if (t == 0u) { y[o] = sv[0] * p.scale; idx[o] = si[0]; }
}

// The gradient of max/min goes to the selected element only.
@compute @workgroup_size(WG)
fn max_backward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                @builtin(local_invocation_index) t: u32) {
  let o = out_index(g, nw);
  if (o >= p.n_out) { return; }
  let b = base(o);
  let j = sel[o];
  for (var r = t; r < p.len; r += WG) { dx[b + off(r)] = select(0.0, dy[o], i32(r) == j); }
}
