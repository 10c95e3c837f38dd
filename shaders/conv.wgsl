// Direct 2-D convolution, NCHW, PyTorch semantics, in two kernel bodies (plus a bias sum).
//
// conv_tile: out[n, o, y, x] = bias[o] + Σ_{i, ky, kx} src'[n, g·cin/G + i, y·s − p + ky·d, x·s − p + kx·d]
//                                                    · w[base + g·w_group + o'·w_out + i·w_in + ky·w_ky + kx·w_kx]
//   where g is o's group, o' its index in the group, and src' is src with (in_dil − 1) zeros
//   inserted between elements (in_dil = 1: src itself). Out-of-range taps read zero.
//   conv2d runs it as is. Its input gradient is the same sum over dy with zeros inserted
//   (in_dil = stride), the kernel flipped (negative w_ky, w_kx) and the weight's channel
//   axes swapped (w_out, w_in); src/tensor/ops/conv.ts sets those strides. A transposed
//   convolution is that input gradient, and its own input gradient is a plain conv2d.
//
// weight_tile: dw[o, j, ky, kx] = Σ_{n, y, x} dy[n, o, y, x] · xs[n, c(o, j), y·s − p + ky·d, x·s − p + kx·d]
//   for a conv2d with input xs (binding 1) and output gradient dy (binding 4): the weight
//   gradient of both ops (for a transposed convolution xs is its output gradient and dy its input).
//
// Both run on CPU adapters (lavapipe, SwiftShader), where every storage load is a gather
// and dominates, so each thread computes a register tile and reuses its loads: conv_tile
// 4 output channels × 8 columns (loads per multiply-add: 5/32 with stride 1, 12/32 otherwise),
// weight_tile 4 output channels × 4 kernel columns, reduced over a workgroup.
override WG: u32 = 64;

struct Params {  // mirrored in src/tensor/ops/conv.ts
  n: u32, groups: u32,
  cin: u32, hin: u32, win: u32,
  cout: u32, hout: u32, wout: u32,
  kh: u32, kw: u32,
  stride_h: i32, stride_w: i32, pad_h: i32, pad_w: i32, dil_h: i32, dil_w: i32,
  in_dil_h: i32, in_dil_w: i32,
  w_base: i32, w_group: i32, w_out: i32, w_in: i32, w_ky: i32, w_kx: i32,
  has_bias: u32, total: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;  // conv_tile's input; weight_tile's xs
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read> dy: array<f32>;   // weight_tile's and the bias sum's dy
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

var<workgroup> partial: array<vec4f, WG>;

// #include "lib/grid.wgsl"

// Floor of a / b for b > 0 (WGSL's `/` truncates toward zero).
// NOTE: no `%`, and the quotient kept comes from a non-negative dividend: Deno's WebGPU on NVIDIA computes
// i32 `%` of a negative number as the unsigned remainder of its bit pattern (-12 % 3 gave 1).
fn fdiv(a: i32, b: i32) -> i32 { return select(a / b, -((b - 1 - a) / b), a < 0); }

// src' along a row: position u of the zero-inserted row whose elements start at `row`.
fn src_at(row: i32, u: i32) -> f32 {
  let wi = i32(p.win);
  if (p.in_dil_w == 1) { return select(0.0, src[u32(row + clamp(u, 0, wi - 1))], u >= 0 && u < wi); }
  let q = fdiv(u, p.in_dil_w);
  let ok = q * p.in_dil_w == u && q >= 0 && q < wi;
  return select(0.0, src[u32(row + clamp(q, 0, wi - 1))], ok);
}

// Tile element i = (((n·G + g)·blocks + b)·hout + y)·xblocks + xb: output channels
// g·cout/G + 4b + [0, 4) of image n, row y, columns 8·xb + [0, 8).
fn conv_tile(i: u32) {
  let cog = p.cout / p.groups;
  let cig = p.cin / p.groups;
  let blocks = (cog + 3u) / 4u;
  let xblocks = (p.wout + 7u) / 8u;
  let xb = i % xblocks;
  let y = i32((i / xblocks) % p.hout);
  let b = (i / (xblocks * p.hout)) % blocks;
  let g = (i / (xblocks * p.hout * blocks)) % p.groups;
  let n = i / (xblocks * p.hout * blocks * p.groups);
  let o0 = b * 4u;
  let nout = min(4u, cog - o0);
  // Channels past the group's last repeat its last one: loads stay in range, results are dropped.
  let wo = p.w_base + i32(g) * p.w_group + vec4i(vec4u(o0) + min(vec4u(0u, 1u, 2u, 3u), vec4u(nout - 1u))) * p.w_out;
  let x0 = i32(xb * 8u);
  let u0 = x0 * p.stride_w - p.pad_w;
  let slide = p.stride_w == 1 && p.dil_w == 1;
  var a0 = vec4f(0.0); var a1 = vec4f(0.0); var a2 = vec4f(0.0); var a3 = vec4f(0.0);
  var b0 = vec4f(0.0); var b1 = vec4f(0.0); var b2 = vec4f(0.0); var b3 = vec4f(0.0);
  for (var ci = 0u; ci < cig; ci++) {
    let plane = (n * p.cin + g * cig + ci) * p.hin;
    let wc = wo + i32(ci) * p.w_in;
    for (var ky = 0; ky < i32(p.kh); ky++) {
      let uy = y * p.stride_h - p.pad_h + ky * p.dil_h;
      let iy = fdiv(uy, p.in_dil_h);
      if (iy * p.in_dil_h != uy || iy < 0 || iy >= i32(p.hin)) { continue; }
      let row = i32((plane + u32(iy)) * p.win);
      let wk = wc + ky * p.w_ky;
      var xa = vec4f(0.0);
      var xz = vec4f(0.0);
      for (var kx = 0; kx < i32(p.kw); kx++) {
        if (slide && kx > 0) {
          // Stride 1, dilation 1: the next tap reads the same columns shifted by one.
          xa = vec4f(xa.yzw, xz.x);
          xz = vec4f(xz.yzw, src_at(row, u0 + kx + 7));
        } else {
          let u = u0 + kx * p.dil_w;
          let s = p.stride_w;
          xa = vec4f(src_at(row, u), src_at(row, u + s), src_at(row, u + 2 * s), src_at(row, u + 3 * s));
          xz = vec4f(src_at(row, u + 4 * s), src_at(row, u + 5 * s), src_at(row, u + 6 * s), src_at(row, u + 7 * s));
        }
        let wv = vec4u(wk + kx * p.w_kx);
        let w0 = w[wv.x]; let w1 = w[wv.y]; let w2 = w[wv.z]; let w3 = w[wv.w];
        a0 += w0 * xa; b0 += w0 * xz;
        a1 += w1 * xa; b1 += w1 * xz;
        a2 += w2 * xa; b2 += w2 * xz;
        a3 += w3 * xa; b3 += w3 * xz;
      }
    }
  }
  let oc = g * cog + o0;
  let plane_size = p.hout * p.wout;
  let base = ((n * p.cout + oc) * p.hout + u32(y)) * p.wout;
  let bv = select(vec4f(0.0), vec4f(bias[oc], bias[oc + min(1u, nout - 1u)], bias[oc + min(2u, nout - 1u)],
                                    bias[oc + min(3u, nout - 1u)]), p.has_bias != 0u);
  for (var t = 0u; t < 8u; t++) {
    let x = u32(x0) + t;
    if (x >= p.wout) { break; }
    let lo = t < 4u;
    let s = t & 3u;
    let v = vec4f(select(b0[s], a0[s], lo), select(b1[s], a1[s], lo), select(b2[s], a2[s], lo), select(b3[s], a3[s], lo)) + bv;
    for (var q = 0u; q < nout; q++) { out[base + q * plane_size + x] = v[q]; }
  }
}

// Number of conv_tile threads for the current params (the op computes the same).
fn conv_tiles() -> u32 {
  return p.n * p.groups * ((p.cout / p.groups + 3u) / 4u) * p.hout * ((p.wout + 7u) / 8u);
}

// Output rows [first, last) whose tap k lands inside [0, size): 0 <= o·stride − pad + k·dil < size.
fn rows(k: i32, stride: i32, pad: i32, dil: i32, size: u32, count: u32) -> vec2i {
  let shift = pad - k * dil;
  let first = max(-fdiv(-shift, stride), 0);
  let last = min(fdiv(i32(size) - 1 + shift, stride) + 1, i32(count));
  return vec2i(first, max(last, first));
}

fn xs_at(row: i32, u: i32) -> f32 {
  let wi = i32(p.win);
  return select(0.0, src[u32(row + clamp(u, 0, wi - 1))], u >= 0 && u < wi);
}

// Workgroup e = ((((g·blocks + b)·cig + j)·kh + ky)·kxblocks + kb): the weight gradient of
// output channels g·cout/G + 4b + [0, 4), input channel j, kernel row ky, kernel columns
// 4·kb + [0, 4). Threads split the (n, y) rows; thread 0 gets the totals, channel q in lane q of
// the returned vectors.
fn weight_tile(e: u32, t: u32) -> array<vec4f, 4> {
  let cog = p.cout / p.groups;
  let cig = p.cin / p.groups;
  let blocks = (cog + 3u) / 4u;
  let kxblocks = (p.kw + 3u) / 4u;
  let kb = e % kxblocks;
  let ky = i32((e / kxblocks) % p.kh);
  let j = (e / (kxblocks * p.kh)) % cig;
  let b = (e / (kxblocks * p.kh * cig)) % blocks;
  let g = e / (kxblocks * p.kh * cig * blocks);
  let oc = g * cog + b * 4u;
  let nout = min(4u, cog - b * 4u);
  let ocs = vec4u(oc) + min(vec4u(0u, 1u, 2u, 3u), vec4u(nout - 1u));
  let c = g * cig + j;
  let kx0 = i32(kb * 4u);
  let ry = rows(ky, p.stride_h, p.pad_h, p.dil_h, p.hin, p.hout);
  let ny = u32(ry.y - ry.x);
  let plane_size = p.hout * p.wout;
  let slide = p.stride_w == 1 && p.dil_w == 1;
  var acc0 = vec4f(0.0); var acc1 = vec4f(0.0); var acc2 = vec4f(0.0); var acc3 = vec4f(0.0);
  for (var r = t; r < p.n * ny; r += WG) {
    let n = r / ny;
    let y = ry.x + i32(r % ny);
    let ybase = ((n * p.cout) * p.hout + u32(y)) * p.wout;
    let row = i32(((n * p.cin + c) * p.hin + u32(y * p.stride_h - p.pad_h + ky * p.dil_h)) * p.win);
    let u0 = kx0 * p.dil_w - p.pad_w;
    var xv = vec4f(0.0);
    for (var x = 0; x < i32(p.wout); x++) {
      let u = x * p.stride_w + u0;
      if (slide && x > 0) {
        // Stride 1, dilation 1: the next column reads the same inputs shifted by one.
        xv = vec4f(xv.yzw, xs_at(row, u + 3));
      } else {
        let d = p.dil_w;
        xv = vec4f(xs_at(row, u), xs_at(row, u + d), xs_at(row, u + 2 * d), xs_at(row, u + 3 * d));
      }
      let at = ybase + ocs * plane_size + u32(x);
      acc0 += dy[at.x] * xv;
      acc1 += dy[at.y] * xv;
      acc2 += dy[at.z] * xv;
      acc3 += dy[at.w] * xv;
    }
  }
  return array<vec4f, 4>(reduce_partial(acc0, t), reduce_partial(acc1, t), reduce_partial(acc2, t),
                         reduce_partial(acc3, t));
}

// Sum `v` over the workgroup; thread 0 gets the total.
fn reduce_partial(v: vec4f, t: u32) -> vec4f {
  workgroupBarrier();  // the previous call's readers are done with `partial`
  partial[t] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (t < s) { partial[t] += partial[t + s]; }
    workgroupBarrier();
  }
  return partial[0];
}

fn write_weight_tile(e: u32, t: u32) {
  let acc = weight_tile(e, t);
  if (t != 0u) { return; }
  let cog = p.cout / p.groups;
  let cig = p.cin / p.groups;
  let kxblocks = (p.kw + 3u) / 4u;
  let kb = e % kxblocks;
  let ky = (e / kxblocks) % p.kh;
  let j = (e / (kxblocks * p.kh)) % cig;
  let bg = e / (kxblocks * p.kh * cig);  // g·blocks + b
  let blocks = (cog + 3u) / 4u;
  let o0 = (bg / blocks) * cog + (bg % blocks) * 4u;
  let nout = min(4u, cog - (bg % blocks) * 4u);
  for (var q = 0u; q < nout; q++) {
    for (var k = 0u; k < 4u; k++) {
      let kx = kb * 4u + k;
      if (kx < p.kw) { out[(((o0 + q) * cig + j) * p.kh + ky) * p.kw + kx] = acc[q][k]; }
    }
  }
}

// Channel o of dy [n, cout, hout·wout], one workgroup: the bias gradient.
fn write_bias_sum(o: u32, t: u32) {
  let hw = p.hout * p.wout;
  var acc = 0.0;
  for (var n = 0u; n < p.n; n++) {
    let base = (n * p.cout + o) * hw;
    for (var r = t; r < hw; r += WG) { acc += dy[base + r]; }
  }
  let total = reduce_partial(vec4f(acc, 0.0, 0.0, 0.0), t);
  if (t == 0u) { out[o] = total.x; }
}

// NOTE: every conv_tile entry names `bias`, so layout "auto" wants a buffer at binding 3 even
// without one; the op then binds the weight there (has_bias = 0, never read).
@compute @workgroup_size(WG)
fn conv2d_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i < conv_tiles()) { conv_tile(i); }
}

@compute @workgroup_size(WG)
fn conv2d_backward_input(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i < conv_tiles()) { conv_tile(i); }
}

@compute @workgroup_size(WG)
fn conv2d_backward_weight(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                          @builtin(local_invocation_index) t: u32) {
  let e = group_index(g, nw);
  if (e < p.total) { write_weight_tile(e, t); }  // uniform per workgroup
}

@compute @workgroup_size(WG)
fn conv2d_backward_bias(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                        @builtin(local_invocation_index) t: u32) {
  let o = group_index(g, nw);
  if (o < p.total) { write_bias_sum(o, t); }
}

@compute @workgroup_size(WG)
fn conv_transpose2d_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i < conv_tiles()) { conv_tile(i); }
}

@compute @workgroup_size(WG)
fn conv_transpose2d_backward_input(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i < conv_tiles()) { conv_tile(i); }
}

@compute @workgroup_size(WG)
fn conv_transpose2d_backward_weight(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                                    @builtin(local_invocation_index) t: u32) {
  let e = group_index(g, nw);
  if (e < p.total) { write_weight_tile(e, t); }
}

@compute @workgroup_size(WG)
fn conv_transpose2d_backward_bias(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                                  @builtin(local_invocation_index) t: u32) {
  let o = group_index(g, nw);
  if (o < p.total) { write_bias_sum(o, t); }
}
