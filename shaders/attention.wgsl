// Fused scaled-dot-product attention, forward and backward (FlashAttention's tiling). q is
// [BH, Tq, D], k and v are [BH, Tk, D], contiguous; BH is batch * heads. No [Tq, Tk] matrix
// is ever written.
//
// Tiling: a workgroup of WG threads owns WG consecutive rows of one head, one row per thread
// (query rows in attention_forward and _dq, key rows in _dkv). It walks the other side in
// blocks of BK rows; each block is staged in workgroup memory (ta, tb) once and read by every
// thread of the workgroup, so K and V (or Q and dO) are read from storage once per workgroup
// instead of once per row. Within a block a thread keeps its scores in registers (sc, dp).
// Causal blocks past the workgroup's last row are never visited.
//
// Head dim: the tiles hold DC columns; a head wider than DC is walked in column chunks, the
// scores summed over chunks, and each output chunk gets its own pass over the keys (the
// scores of a wider head are recomputed once per output chunk: a head of 64 costs 2 passes).
//
// Online softmax (forward): per row a running max m and sum l of exp(s - m); a block's
// scores update them once (m grows to the block max, the partial output is rescaled by
// exp(m_old - m_new)). It saves lse = m + log(l) per row, from which both backward kernels
// recompute the probabilities.
//
// NOTE: arrays declared inside a loop are zeroed by an explicit loop: WGSL zero-initializes
// a `var` at each execution of its declaration, but a translation that hoists the variable
// to function scope (seen on lavapipe) zeroes it once, and the second key block then adds
// to the first block's scores.
//
// Masks: `causal` hides key j > i (top-left aligned, as torch's is_causal); attn_mask
// [Tq, Tk] and key-padding kpm [B, Tk] hide a key where their 32-bit word is nonzero
// (f32 or i32, -0.0 counts as 0). A row whose keys are all hidden outputs 0 and gets
// 0 gradients (PyTorch gives NaN there); its lse is FLT_MAX.
//
// Additive bias (PyTorch's float attn_mask: ALiBi, relative positions): the score of
// (b, h, i, j) is scale·q·k + bias[b·bias_b + h·bias_h + i·bias_i + j·bias_j], the strides
// 0 on the dims the bias broadcasts over (never materialized). A -inf bias hides the key as
// a mask does (the all-hidden row included). attention_backward_dbias writes dS [BH·Tq, Tk]
// (the bias gradient before the broadcast dims are summed) when the bias needs one.
//
// lse holds 2·nq floats: the rows' logsumexp (nq = B·H·Tq), then delta (written by _dq):
// one binding for both keeps _dq and _dkv at 10 storage buffers with the bias (10 is
// maxStorageBuffersPerShaderStage on many adapters, 8 the WebGPU default).
//
// Dropout on the probabilities: P~ = P * z, z = keep / (1 - p) from the same PCG hash as
// shaders/dropout.wgsl at counter (row * Tk + j), regenerated in the backward.
override WG: u32 = 32;  // rows per workgroup, one per thread (src/gpu/tuning.ts ATTENTION_WG)

// Rows of the other side per block, and head-dim columns per tile (DC4 vec4s). Constants,
// not overrides: the per-thread score and accumulator arrays must have a constant size.
// Two tiles of BK x DC f32 are 8 KiB of workgroup memory (WebGPU guarantees 16 KiB).
const BK = 32u;
const DC4 = 8u;
const DC = 32u;

struct Params {  // mirrored in src/tensor/ops/attention.ts
  rows: u32, heads: u32, tq: u32, tk: u32, d: u32, scale: f32,
  causal: u32, has_mask: u32, has_kpm: u32, seed: u32, p_drop: f32, keep_scale: f32,
  nq: u32, has_bias: u32, bias_b: u32, bias_h: u32, bias_i: u32, bias_j: u32,
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
@group(0) @binding(9) var<storage, read> bias: array<f32>;
@group(0) @binding(10) var<storage, read_write> dq: array<f32>;
@group(0) @binding(11) var<storage, read_write> dk: array<f32>;
@group(0) @binding(12) var<storage, read_write> dv: array<f32>;
// The scores path's [rows, Tk] matrices (attention_probs, attention_probs_backward), four
// keys a vec4: that path needs Tk a multiple of 4.
@group(0) @binding(13) var<storage, read_write> sp: array<vec4f>;
@group(0) @binding(14) var<storage, read_write> pz: array<vec4f>;
// dS of every (row, key), [BH·Tq, Tk] (attention_backward_dbias).
@group(0) @binding(15) var<storage, read_write> ds_out: array<f32>;

const FLT_MAX = 0x1.fffffep+127f;

// The block's two tiles, row-major [BK][DC4]: K and V (forward, dQ) or Q and dO (dK/dV).
var<workgroup> ta: array<vec4f, BK * DC4>;
var<workgroup> tb: array<vec4f, BK * DC4>;

// #include "lib/grid.wgsl"
// #include "lib/pcg.wgsl"
// #include "lib/segment.wgsl"

// The additive bias of query i, key j of head row bh (0 without one).
fn bias_of(bh: u32, i: u32, j: u32) -> f32 {
  if (p.has_bias == 0u) { return 0.0; }
  return bias[(bh / p.heads) * p.bias_b + (bh % p.heads) * p.bias_h + i * p.bias_i + j * p.bias_j];
}

// Key j hidden from query i of head row bh. (x << 1) drops the sign bit: -0.0 is 0.
// 0xff800000 is -inf: a bias entry of -inf hides its key.
fn hidden(bh: u32, i: u32, j: u32) -> bool {
  if (p.causal != 0u && j > i) { return true; }
  if (p.has_mask != 0u && (attn_mask[i * p.tk + j] << 1u) != 0u) { return true; }
  if (p.has_kpm != 0u && (kpm[(bh / p.heads) * p.tk + j] << 1u) != 0u) { return true; }
  if (p.has_bias != 0u && bitcast<u32>(bias_of(bh, i, j)) == 0xff800000u) { return true; }
  return false;
}

// The dropout multiplier z, from the same uniforms as shaders/dropout.wgsl (lib/pcg.wgsl).
fn keep(row: u32, j: u32) -> f32 {
  if (p.p_drop <= 0.0) { return 1.0; }
  return select(0.0, p.keep_scale, unit(p.seed, row * p.tk + j) >= p.p_drop);
}

// Keys a query row can see at all: causal rows stop at j = i.
fn key_end(i: u32) -> u32 { return select(p.tk, min(p.tk, i + 1u), p.causal != 0u); }

// The n (0..4) values at `at` of one buffer as a vec4, zeros past n: a head dim that is not
// a multiple of 4 (or the last chunk of one) is padded with zeros, which add nothing to a dot
// product. One function per buffer: an entry point binds only the buffers it reads.
fn ld_q(at: u32, n: u32) -> vec4f {
  if (n >= 4u) { return vec4f(q[at], q[at + 1u], q[at + 2u], q[at + 3u]); }
  var r = vec4f(0.0);
  for (var e = 0u; e < n; e++) { r[e] = q[at + e]; }
  return r;
}
fn ld_k(at: u32, n: u32) -> vec4f {
  if (n >= 4u) { return vec4f(k[at], k[at + 1u], k[at + 2u], k[at + 3u]); }
  var r = vec4f(0.0);
  for (var e = 0u; e < n; e++) { r[e] = k[at + e]; }
  return r;
}
fn ld_v(at: u32, n: u32) -> vec4f {
  if (n >= 4u) { return vec4f(v[at], v[at + 1u], v[at + 2u], v[at + 3u]); }
  var r = vec4f(0.0);
  for (var e = 0u; e < n; e++) { r[e] = v[at + e]; }
  return r;
}
fn ld_do(at: u32, n: u32) -> vec4f {
  if (n >= 4u) { return vec4f(dout[at], dout[at + 1u], dout[at + 2u], dout[at + 3u]); }
  var r = vec4f(0.0);
  for (var e = 0u; e < n; e++) { r[e] = dout[at + e]; }
  return r;
}

// Values of vec4 c4 of column chunk c in a row of D: 4, fewer at the end of the row, or 0.
fn lanes(c: u32, c4: u32) -> u32 {
  let col = c * DC + 4u * c4;
  return select(0u, min(4u, p.d - col), col < p.d);
}

// Which head and first row a workgroup covers, for rows of length `len` (Tq or Tk):
// (bh, row0). The grid may have a few workgroups past the last head (folded grids).
fn block_of(g: vec3u, nw: vec3u, len: u32) -> vec2u {
  let w = group_index(g, nw);
  let per_head = (len + WG - 1u) / WG;
  return vec2u(w / per_head, (w % per_head) * WG);
}

// Stage rows r0 .. r0 + n - 1 (of head base `base`, in elements) of K and V, column chunk c,
// in ta and tb; rows past n and columns past D are zeros. Every thread must call it.
fn tiles_kv(t: u32, base: u32, r0: u32, n: u32, c: u32) {
  workgroupBarrier();  // the previous block is consumed
  for (var x = t; x < BK * DC4; x += WG) {
    let jj = x / DC4;
    let m = select(0u, lanes(c, x % DC4), jj < n);
    let at = base + (r0 + min(jj, max(n, 1u) - 1u)) * p.d + c * DC + 4u * (x % DC4);
    ta[x] = ld_k(at, m);
    tb[x] = ld_v(at, m);
  }
  workgroupBarrier();
}
// The same for Q and dO (attention_backward_dkv).
fn tiles_qdo(t: u32, base: u32, r0: u32, n: u32, c: u32) {
  workgroupBarrier();
  for (var x = t; x < BK * DC4; x += WG) {
    let jj = x / DC4;
    let m = select(0u, lanes(c, x % DC4), jj < n);
    let at = base + (r0 + min(jj, max(n, 1u) - 1u)) * p.d + c * DC + 4u * (x % DC4);
    ta[x] = ld_q(at, m);
    tb[x] = ld_do(at, m);
  }
  workgroupBarrier();
}

// Thread t owns query row i = row0 + t (r = bh * Tq + i); the workgroup walks the key blocks
// up to the last key its last row sees. Per block: scores of the block over every column
// chunk, then one online-softmax update and the weighted sum of the block's V rows.
@compute @workgroup_size(WG)
fn attention_forward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                     @builtin(local_invocation_index) t: u32) {
  let blk = block_of(g, nw, p.tq);
  let bh = blk.x;
  if (bh * p.tq >= p.rows) { return; }  // uniform per workgroup
  let i = blk.y + t;
  let live = i < p.tq;
  let r = bh * p.tq + min(i, p.tq - 1u);
  let qr = r * p.d;
  let kb = bh * p.tk * p.d;
  let kend = key_end(min(blk.y + WG, p.tq) - 1u);  // keys the workgroup's last row sees
  let mine = select(0u, key_end(i), live);
  let nc = (p.d + DC - 1u) / DC;
  for (var oc = 0u; oc < nc; oc++) {
    var acc: array<vec4f, DC4>;
    for (var c4 = 0u; c4 < DC4; c4++) { acc[c4] = vec4f(0.0); }
    var m = -FLT_MAX;
    var l = 0.0;
    for (var j0 = 0u; j0 < kend; j0 += BK) {
      let n = min(BK, kend - j0);
      var sc: array<f32, BK>;
      for (var jj = 0u; jj < BK; jj++) { sc[jj] = 0.0; }
      for (var c = 0u; c < nc; c++) {
        tiles_kv(t, kb, j0, n, c);
        var qc: array<vec4f, DC4>;
        for (var c4 = 0u; c4 < DC4; c4++) { qc[c4] = ld_q(qr + c * DC + 4u * c4, lanes(c, c4)); }
        for (var jj = 0u; jj < BK; jj++) {
          var s = 0.0;
          for (var c4 = 0u; c4 < DC4; c4++) { s += dot(qc[c4], ta[jj * DC4 + c4]); }
          sc[jj] += s;
        }
      }
      if (oc + 1u != nc) { tiles_kv(t, kb, j0, n, oc); }  // tb holds the last chunk's V
      var bm = -FLT_MAX;
      for (var jj = 0u; jj < BK; jj++) {
        let j = j0 + jj;
        var s = -FLT_MAX;  // hidden: -FLT_MAX, below every real score
        if (j < mine && !hidden(bh, i, j)) { s = sc[jj] * p.scale + bias_of(bh, i, j); }
        sc[jj] = s;
        bm = max(bm, s);
      }
      let mn = max(m, bm);
      let alpha = exp(m - mn);  // 1 while every key so far is hidden (m = mn = -FLT_MAX)
      var bl = 0.0;
      for (var jj = 0u; jj < BK; jj++) {
        var e = 0.0;
        if (sc[jj] > -FLT_MAX) { e = exp(sc[jj] - mn); }
        bl += e;
        sc[jj] = e * keep(r, j0 + jj);
      }
      l = l * alpha + bl;
      m = mn;
      for (var c4 = 0u; c4 < DC4; c4++) {
        var a = acc[c4] * alpha;
        for (var jj = 0u; jj < BK; jj++) { a += sc[jj] * tb[jj * DC4 + c4]; }
        acc[c4] = a;
      }
    }
    if (live) {
      let inv = select(0.0, 1.0 / l, l > 0.0);
      for (var c4 = 0u; c4 < DC4; c4++) {
        let y = acc[c4] * inv;
        for (var e = 0u; e < lanes(oc, c4); e++) { o[qr + oc * DC + 4u * c4 + e] = y[e]; }
      }
      if (oc == 0u) { lse[r] = select(FLT_MAX, m + log(l), l > 0.0); }
    }
  }
}

// dQ for query row i, and delta_r = dO_r . O_r (= sum_j P_rj dP_rj, dropout included, at
// lse[nq + r]), which attention_backward_dkv and _dbias read next:
// dS_rj = P_rj (z_rj (dO_r . V_j) - delta_r),  dQ_r = scale sum_j dS_rj K_j.
@compute @workgroup_size(WG)
fn attention_backward_dq(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                         @builtin(local_invocation_index) t: u32) {
  let blk = block_of(g, nw, p.tq);
  let bh = blk.x;
  if (bh * p.tq >= p.rows) { return; }
  let i = blk.y + t;
  let live = i < p.tq;
  let r = bh * p.tq + min(i, p.tq - 1u);
  let qr = r * p.d;
  let kb = bh * p.tk * p.d;
  let kend = key_end(min(blk.y + WG, p.tq) - 1u);
  let mine = select(0u, key_end(i), live);
  let nc = (p.d + DC - 1u) / DC;
  var dl = 0.0;
  for (var c = 0u; c < p.d; c++) { dl += dout[qr + c] * o[qr + c]; }
  if (live) { lse[p.nq + r] = dl; }
  let lr = lse[r];
  for (var oc = 0u; oc < nc; oc++) {
    var acc: array<vec4f, DC4>;
    for (var c4 = 0u; c4 < DC4; c4++) { acc[c4] = vec4f(0.0); }
    for (var j0 = 0u; j0 < kend; j0 += BK) {
      let n = min(BK, kend - j0);
      var sc: array<f32, BK>;  // q_i . k_j, then dS_ij
      var dp: array<f32, BK>;  // dO_i . v_j
      for (var jj = 0u; jj < BK; jj++) { sc[jj] = 0.0; dp[jj] = 0.0; }
      for (var c = 0u; c < nc; c++) {
        tiles_kv(t, kb, j0, n, c);
        var qc: array<vec4f, DC4>;
        var dc: array<vec4f, DC4>;
        for (var c4 = 0u; c4 < DC4; c4++) {
          let at = qr + c * DC + 4u * c4;
          qc[c4] = ld_q(at, lanes(c, c4));
          dc[c4] = ld_do(at, lanes(c, c4));
        }
        for (var jj = 0u; jj < BK; jj++) {
          var s = 0.0;
          var d2 = 0.0;
          for (var c4 = 0u; c4 < DC4; c4++) {
            s += dot(qc[c4], ta[jj * DC4 + c4]);
            d2 += dot(dc[c4], tb[jj * DC4 + c4]);
          }
          sc[jj] += s;
          dp[jj] += d2;
        }
      }
      if (oc + 1u != nc) { tiles_kv(t, kb, j0, n, oc); }  // ta holds the last chunk's K
      for (var jj = 0u; jj < BK; jj++) {
        let j = j0 + jj;
        var ds = 0.0;
        if (j < mine && !hidden(bh, i, j)) {
          let pr = exp(sc[jj] * p.scale + bias_of(bh, i, j) - lr);
          ds = pr * (dp[jj] * keep(r, j) - dl);
        }
        sc[jj] = ds;
      }
      for (var c4 = 0u; c4 < DC4; c4++) {
        var a = acc[c4];
        for (var jj = 0u; jj < BK; jj++) { a += sc[jj] * ta[jj * DC4 + c4]; }
        acc[c4] = a;
      }
    }
    if (live) {
      for (var c4 = 0u; c4 < DC4; c4++) {
        let y = acc[c4] * p.scale;
        for (var e = 0u; e < lanes(oc, c4); e++) { dq[qr + oc * DC + 4u * c4 + e] = y[e]; }
      }
    }
  }
}

// dK and dV for key row j = row0 + t (r = bh * Tk + j), walking the query blocks that can
// see the workgroup's keys (causal: from query row0 on):
// dV_j = sum_i P_ij z_ij dO_i,  dK_j = scale sum_i dS_ij Q_i.  Needs delta from _dq.
// Here `rows` is BH * Tk.
@compute @workgroup_size(WG)
fn attention_backward_dkv(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                          @builtin(local_invocation_index) t: u32) {
  let blk = block_of(g, nw, p.tk);
  let bh = blk.x;
  if (bh * p.tk >= p.rows) { return; }
  let j = blk.y + t;
  let live = j < p.tk;
  let r = bh * p.tk + min(j, p.tk - 1u);
  let kr = r * p.d;
  let qrow = bh * p.tq;  // first query row of this head
  let qb = qrow * p.d;
  let istart = select(0u, blk.y, p.causal != 0u);
  let nc = (p.d + DC - 1u) / DC;
  for (var oc = 0u; oc < nc; oc++) {
    var ak: array<vec4f, DC4>;
    var av: array<vec4f, DC4>;
    for (var c4 = 0u; c4 < DC4; c4++) { ak[c4] = vec4f(0.0); av[c4] = vec4f(0.0); }
    for (var i0 = istart; i0 < p.tq; i0 += BK) {
      let n = min(BK, p.tq - i0);
      var sc: array<f32, BK>;  // k_j . q_i, then P_ij z_ij
      var dp: array<f32, BK>;  // v_j . dO_i, then dS_ij
      for (var ii = 0u; ii < BK; ii++) { sc[ii] = 0.0; dp[ii] = 0.0; }
      for (var c = 0u; c < nc; c++) {
        tiles_qdo(t, qb, i0, n, c);
        var kc: array<vec4f, DC4>;
        var vc: array<vec4f, DC4>;
        for (var c4 = 0u; c4 < DC4; c4++) {
          let at = kr + c * DC + 4u * c4;
          kc[c4] = ld_k(at, lanes(c, c4));
          vc[c4] = ld_v(at, lanes(c, c4));
        }
        for (var ii = 0u; ii < BK; ii++) {
          var s = 0.0;
          var d2 = 0.0;
          for (var c4 = 0u; c4 < DC4; c4++) {
            s += dot(kc[c4], ta[ii * DC4 + c4]);
            d2 += dot(vc[c4], tb[ii * DC4 + c4]);
          }
          sc[ii] += s;
          dp[ii] += d2;
        }
      }
      if (oc + 1u != nc) { tiles_qdo(t, qb, i0, n, oc); }
      for (var ii = 0u; ii < BK; ii++) {
        let i = i0 + ii;
        var pz = 0.0;
        var ds = 0.0;
        if (live && ii < n && !hidden(bh, i, j)) {
          let pr = exp(sc[ii] * p.scale + bias_of(bh, i, j) - lse[qrow + i]);
          let z = keep(qrow + i, j);
          pz = pr * z;
          ds = pr * (dp[ii] * z - lse[p.nq + qrow + i]);
        }
        sc[ii] = pz;
        dp[ii] = ds;
      }
      for (var c4 = 0u; c4 < DC4; c4++) {
        var a = av[c4];
        var b = ak[c4];
        for (var ii = 0u; ii < BK; ii++) {
          a += sc[ii] * tb[ii * DC4 + c4];
          b += dp[ii] * ta[ii * DC4 + c4];
        }
        av[c4] = a;
        ak[c4] = b;
      }
    }
    if (live) {
      for (var c4 = 0u; c4 < DC4; c4++) {
        let y = av[c4];
        let z = ak[c4] * p.scale;
        for (var e = 0u; e < lanes(oc, c4); e++) {
          let at = kr + oc * DC + 4u * c4 + e;
          dv[at] = y[e];
          dk[at] = z[e];
        }
      }
    }
  }
}

// dS_rj = P_rj (z_rj dP_rj - delta_r) of query row i for every key (0 where hidden), into
// ds_out [BH·Tq, Tk]: the gradient of the bias before its broadcast dims are summed. The
// same walk as attention_backward_dq (after it: it reads delta), without the dQ sums.
@compute @workgroup_size(WG)
fn attention_backward_dbias(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                            @builtin(local_invocation_index) t: u32) {
  let blk = block_of(g, nw, p.tq);
  let bh = blk.x;
  if (bh * p.tq >= p.rows) { return; }
  let i = blk.y + t;
  let live = i < p.tq;
  let r = bh * p.tq + min(i, p.tq - 1u);
  let qr = r * p.d;
  let kb = bh * p.tk * p.d;
  let kend = key_end(min(blk.y + WG, p.tq) - 1u);
  let mine = select(0u, key_end(i), live);
  let nc = (p.d + DC - 1u) / DC;
  let lr = lse[r];
  let dl = lse[p.nq + r];
  for (var j0 = 0u; j0 < kend; j0 += BK) {
    let n = min(BK, kend - j0);
    var sc: array<f32, BK>;
    var dp: array<f32, BK>;
    for (var jj = 0u; jj < BK; jj++) { sc[jj] = 0.0; dp[jj] = 0.0; }
    for (var c = 0u; c < nc; c++) {
      tiles_kv(t, kb, j0, n, c);
      var qc: array<vec4f, DC4>;
      var dc: array<vec4f, DC4>;
      for (var c4 = 0u; c4 < DC4; c4++) {
        let at = qr + c * DC + 4u * c4;
        qc[c4] = ld_q(at, lanes(c, c4));
        dc[c4] = ld_do(at, lanes(c, c4));
      }
      for (var jj = 0u; jj < BK; jj++) {
        var s = 0.0;
        var d2 = 0.0;
        for (var c4 = 0u; c4 < DC4; c4++) {
          s += dot(qc[c4], ta[jj * DC4 + c4]);
          d2 += dot(dc[c4], tb[jj * DC4 + c4]);
        }
        sc[jj] += s;
        dp[jj] += d2;
      }
    }
    for (var jj = 0u; jj < n; jj++) {
      let j = j0 + jj;
      var ds = 0.0;
      if (j < mine && !hidden(bh, i, j)) {
        ds = exp(sc[jj] * p.scale + bias_of(bh, i, j) - lr) * (dp[jj] * keep(r, j) - dl);
      }
      if (live) { ds_out[r * p.tk + j] = ds; }
    }
  }
  if (live) {
    for (var j = kend; j < p.tk; j++) { ds_out[r * p.tk + j] = 0.0; }  // keys past the walk
  }
}

// ---- the scores path -------------------------------------------------------------------
// On CPU adapters the fused kernels above run at a tenth of the register matmul's rate
// (per-thread score arrays and staged tiles indexed by loop counters live in memory there;
// bench/README.md "gpt-nano step"), so src/tensor/ops/attention.ts writes the scores
// S = Q·Kᵀ [BH·Tq, Tk] with the matmul and only the row softmax and its backward run here:
//   forward   S → P in place (attention_probs), P~ = P·z into pz when dropout, O = P~·V;
//   backward  dP~ = dO·Vᵀ → dS in place (attention_probs_backward), dQ = dS·K, dK = dSᵀ·Q,
//             dV = P~ᵀ·dO.
// The masks, the all-hidden row (P = 0) and the dropout multipliers are the fused kernels'.
// A thread reads and writes four keys at a time (Tk is a multiple of 4 on this path): on
// CPU adapters every storage access is a loop over the SIMD lanes.
//
// Blocking: lib/segment.wgsl's, one segment per row, over Tk / 4 vec4s.

// The biases of keys j .. j + 3 of query i of head row bh.
fn bias4(bh: u32, i: u32, j: u32) -> vec4f {
  if (p.has_bias == 0u) { return vec4f(0.0); }
  return vec4f(bias_of(bh, i, j), bias_of(bh, i, j + 1u), bias_of(bh, i, j + 2u), bias_of(bh, i, j + 3u));
}

// Keys j .. j + 3 visible to query i of head row bh.
fn visible4(bh: u32, i: u32, j: u32) -> vec4<bool> {
  return vec4<bool>(!hidden(bh, i, j), !hidden(bh, i, j + 1u), !hidden(bh, i, j + 2u), !hidden(bh, i, j + 3u));
}

// The dropout multipliers of keys j .. j + 3 of row r.
fn keep4(r: u32, j: u32) -> vec4f {
  if (p.p_drop <= 0.0) { return vec4f(1.0); }
  return vec4f(keep(r, j), keep(r, j + 1u), keep(r, j + 2u), keep(r, j + 3u));
}

// Row r = bh * Tq + i of sp: scores in, probabilities out (0 where hidden, and the whole row
// when every key is), and P·z in pz when dropout is on.
@compute @workgroup_size(WG)
fn attention_probs(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                   @builtin(local_invocation_index) t: u32) {
  let sl = segment(g, nw, t);
  let r = sl.x;
  let n4 = select(0u, p.tk / 4u, r < p.rows);
  let bh = r / p.tq;
  let i = r % p.tq;
  let base = r * (p.tk / 4u);
  var st = vec2f(-FLT_MAX, 0.0);  // the row's running softmax state (lib/segment.wgsl)
  for (var j4 = sl.y; j4 < n4; j4 += SEG) {
    let vis = visible4(bh, i, 4u * j4);
    let s = select(vec4f(-FLT_MAX), sp[base + j4] * p.scale + bias4(bh, i, 4u * j4), vis);  // hidden: below every real score
    let bm = max(max(s.x, s.y), max(s.z, s.w));
    let e = select(vec4f(0.0), exp(s - bm), vis);
    st = softmax_join(st, vec2f(bm, e.x + e.y + e.z + e.w));
  }
  st = seg_tree(t, st, SEG_SOFTMAX);
  let m = st.x;
  let l = st.y;
  let inv = select(0.0, 1.0 / l, l > 0.0);
  for (var j4 = sl.y; j4 < n4; j4 += SEG) {
    let at = base + j4;
    let pr = select(vec4f(0.0), exp(sp[at] * p.scale + bias4(bh, i, 4u * j4) - m) * inv, visible4(bh, i, 4u * j4));
    sp[at] = pr;
    if (p.p_drop > 0.0) { pz[at] = pr * keep4(r, 4u * j4); }
  }
}

// dS = scale · P ⊙ (z ⊙ dP~ − delta), delta_r = Σ_j P_rj z_rj dP~_rj: P in sp, dP~ in pz,
// overwritten by dS (the scale of S = scale·Q·Kᵀ folded in, so dQ = dS·K).
@compute @workgroup_size(WG)
fn attention_probs_backward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                            @builtin(local_invocation_index) t: u32) {
  let sl = segment(g, nw, t);
  let r = sl.x;
  let n4 = select(0u, p.tk / 4u, r < p.rows);
  let base = r * (p.tk / 4u);
  var acc = 0.0;
  for (var j4 = sl.y; j4 < n4; j4 += SEG) { acc += dot(sp[base + j4] * keep4(r, 4u * j4), pz[base + j4]); }
  let dl = seg_sum2(t, vec2f(acc, 0.0)).x;
  for (var j4 = sl.y; j4 < n4; j4 += SEG) {
    let at = base + j4;
    pz[at] = p.scale * sp[at] * (keep4(r, 4u * j4) * pz[at] - dl);
  }
}
