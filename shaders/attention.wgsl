// Fused scaled-dot-product attention, forward and backward (FlashAttention's algorithm,
// one row per workgroup). q is [BH, Tq, D], k and v are [BH, Tk, D], contiguous; BH is
// batch * heads. No [Tq, Tk] matrix is ever written: the forward walks the keys of one
// query row in blocks of WG, keeps a running max m and sum l of exp(s - m) (the online,
// max-subtracted softmax) and rescales its partial output when m grows. It saves
// lse = m + log(l) per row, from which both backward kernels recompute the probabilities.
//
// Masks: `causal` hides key j > i (top-left aligned, as torch's is_causal); attn_mask
// [Tq, Tk] and key-padding kpm [B, Tk] hide a key where their 32-bit word is nonzero
// (f32 or i32, -0.0 counts as 0). A row whose keys are all hidden outputs 0 and gets
// 0 gradients (PyTorch gives NaN there); its lse is FLT_MAX.
//
// Dropout on the probabilities: P~ = P * z, z = keep / (1 - p) from the same PCG hash as
// shaders/dropout.wgsl at counter (row * Tk + j), regenerated in the backward.
override WG: u32 = 64;

struct Params {  // mirrored in src/tensor/ops/attention.ts
  rows: u32, heads: u32, tq: u32, tk: u32, d: u32, scale: f32,
  causal: u32, has_mask: u32, has_kpm: u32, seed: u32, p_drop: f32, keep_scale: f32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<storage, read> attn_mask: array<u32>;
@group(0) @binding(7) var<storage, read> kpm: array<u32>;
@group(0) @binding(8) var<storage, read> dout: array<f32>;
@group(0) @binding(9) var<storage, read_write> delta: array<f32>;
@group(0) @binding(10) var<storage, read_write> dq: array<f32>;
@group(0) @binding(11) var<storage, read_write> dk: array<f32>;
@group(0) @binding(12) var<storage, read_write> dv: array<f32>;

const FLT_MAX = 0x1.fffffep+127f;

var<workgroup> sa: array<f32, WG>;   // per-key (or per-query) weights of the current block
var<workgroup> sb: array<f32, WG>;   // a second weight (dK's dS in attention_backward_dkv)

// #include "lib/grid.wgsl"
// #include "lib/reduce.wgsl"
// #include "lib/pcg.wgsl"

// Key j hidden from query i of head row bh. (x << 1) drops the sign bit: -0.0 is 0.
fn hidden(bh: u32, i: u32, j: u32) -> bool {
  if (p.causal != 0u && j > i) { return true; }
  if (p.has_mask != 0u && (attn_mask[i * p.tk + j] << 1u) != 0u) { return true; }
  if (p.has_kpm != 0u && (kpm[(bh / p.heads) * p.tk + j] << 1u) != 0u) { return true; }
  return false;
}

// Row dot products over D: q row . k row (scores) and dout row . v row (dP~).
fn dot_qk(qi: u32, kj: u32) -> f32 {
  var s = 0.0;
  for (var c = 0u; c < p.d; c++) { s += q[qi + c] * k[kj + c]; }
  return s;
}
fn dot_dov(qi: u32, kj: u32) -> f32 {
  var s = 0.0;
  for (var c = 0u; c < p.d; c++) { s += dout[qi + c] * v[kj + c]; }
  return s;
}

// The dropout multiplier z, from the same uniforms as shaders/dropout.wgsl (lib/pcg.wgsl).
fn keep(row: u32, j: u32) -> f32 {
  if (p.p_drop <= 0.0) { return 1.0; }
  return select(0.0, p.keep_scale, unit(p.seed, row * p.tk + j) >= p.p_drop);
}

// Keys a query row can see at all: causal rows stop at j = i.
fn key_end(i: u32) -> u32 { return select(p.tk, min(p.tk, i + 1u), p.causal != 0u); }

// One workgroup per query row r = bh * Tq + i; thread t scores key j0 + t of each block,
// then owns output columns c = t, t + WG, ... (kept in `o` between blocks).
@compute @workgroup_size(WG)
fn attention_forward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                     @builtin(local_invocation_index) t: u32) {
  let r = group_index(g, nw);
  if (r >= p.rows) { return; }  // uniform per workgroup
  let bh = r / p.tq;
  let i = r % p.tq;
  let qr = r * p.d;
  let kb = bh * p.tk * p.d;
  let kend = key_end(i);
  for (var c = t; c < p.d; c += WG) { o[qr + c] = 0.0; }
  var m = -FLT_MAX;
  var l = 0.0;
  for (var j0 = 0u; j0 < kend; j0 += WG) {
    let j = j0 + t;
    let seen = j < kend && !hidden(bh, i, j);
    var s = -FLT_MAX;
    if (seen) { s = dot_qk(qr, kb + j * p.d) * p.scale; }
    let mn = max(m, wg_max(t, s));
    var e = 0.0;
    if (seen) { e = exp(s - mn); }
    let alpha = exp(m - mn);  // 1 while every key so far is hidden (m = mn = -FLT_MAX)
    l = l * alpha + wg_sum(t, e);
    sa[t] = e * keep(r, j);
    workgroupBarrier();
    let n = min(WG, kend - j0);
    for (var c = t; c < p.d; c += WG) {
      var acc = o[qr + c] * alpha;
      for (var jj = 0u; jj < n; jj++) { acc += sa[jj] * v[kb + (j0 + jj) * p.d + c]; }
      o[qr + c] = acc;
    }
    workgroupBarrier();
    m = mn;
  }
  let inv = select(0.0, 1.0 / l, l > 0.0);
  for (var c = t; c < p.d; c += WG) { o[qr + c] *= inv; }
  if (t == 0u) { lse[r] = select(FLT_MAX, m + log(l), l > 0.0); }
}

// dQ for query row r, and delta[r] = dO_r . O_r (= sum_j P_rj dP_rj, dropout included),
// which attention_backward_dkv reads next:
// dS_rj = P_rj (z_rj (dO_r . V_j) - delta_r),  dQ_r = scale sum_j dS_rj K_j.
@compute @workgroup_size(WG)
fn attention_backward_dq(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                         @builtin(local_invocation_index) t: u32) {
  let r = group_index(g, nw);
  if (r >= p.rows) { return; }
  let bh = r / p.tq;
  let i = r % p.tq;
  let qr = r * p.d;
  let kb = bh * p.tk * p.d;
  let kend = key_end(i);
  var part = 0.0;
  for (var c = t; c < p.d; c += WG) { part += dout[qr + c] * o[qr + c]; dq[qr + c] = 0.0; }
  let dl = wg_sum(t, part);
  if (t == 0u) { delta[r] = dl; }
  let lr = lse[r];
  for (var j0 = 0u; j0 < kend; j0 += WG) {
    let j = j0 + t;
    var ds = 0.0;
    if (j < kend && !hidden(bh, i, j)) {
      let pr = exp(dot_qk(qr, kb + j * p.d) * p.scale - lr);
      ds = pr * (dot_dov(qr, kb + j * p.d) * keep(r, j) - dl);
    }
    sa[t] = ds;
    workgroupBarrier();
    let n = min(WG, kend - j0);
    for (var c = t; c < p.d; c += WG) {
      var acc = dq[qr + c];
      for (var jj = 0u; jj < n; jj++) { acc += sa[jj] * k[kb + (j0 + jj) * p.d + c]; }
      dq[qr + c] = acc;
    }
    workgroupBarrier();
  }
  for (var c = t; c < p.d; c += WG) { dq[qr + c] *= p.scale; }
}

// dK and dV for key row r = bh * Tk + j, walking the query rows that see key j:
// dV_j = sum_i P_ij z_ij dO_i,  dK_j = scale sum_i dS_ij Q_i.  Needs delta from _dq.
// Here `rows` is BH * Tk.
@compute @workgroup_size(WG)
fn attention_backward_dkv(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                          @builtin(local_invocation_index) t: u32) {
  let r = group_index(g, nw);
  if (r >= p.rows) { return; }
  let bh = r / p.tk;
  let j = r % p.tk;
  let kr = r * p.d;
  let qb = bh * p.tq;  // first query row of this head
  let istart = select(0u, j, p.causal != 0u);
  for (var c = t; c < p.d; c += WG) { dk[kr + c] = 0.0; dv[kr + c] = 0.0; }
  for (var i0 = istart; i0 < p.tq; i0 += WG) {
    let i = i0 + t;
    var pz = 0.0;
    var ds = 0.0;
    if (i < p.tq && !hidden(bh, i, j)) {
      let qi = (qb + i) * p.d;
      let pr = exp(dot_qk(qi, kr) * p.scale - lse[qb + i]);
      let z = keep(qb + i, j);
      pz = pr * z;
      ds = pr * (dot_dov(qi, kr) * z - delta[qb + i]);
    }
    sa[t] = pz;
    sb[t] = ds;
    workgroupBarrier();
    let n = min(WG, p.tq - i0);
    for (var c = t; c < p.d; c += WG) {
      var av = dv[kr + c];
      var ak = dk[kr + c];
      for (var ii = 0u; ii < n; ii++) {
        let at = (qb + i0 + ii) * p.d + c;
        av += sa[ii] * dout[at];
        ak += sb[ii] * q[at];
      }
      dv[kr + c] = av;
      dk[kr + c] = ak;
    }
    workgroupBarrier();
  }
  for (var c = t; c < p.d; c += WG) { dk[kr + c] *= p.scale; }
}
