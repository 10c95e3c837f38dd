// 2-D pooling over the last two dims of [nc, hi, wi] planes (NCHW with n·c merged),
// PyTorch semantics. Forward entries run one thread per output element; backward
// entries one thread per input element, gathering from the outputs whose window holds
// it, so no atomics are needed. Window of output (oy, ox): rows oy·stride_h − pad_h +
// ky·dil_h for ky < kh (likewise columns); padded positions are skipped.
override WG: u32 = 256;

struct Params {  // mirrored in src/tensor/ops/pool.ts
  nc: u32, hi: u32, wi: u32, ho: u32, wo: u32, kh: u32, kw: u32,
  stride_h: i32, stride_w: i32, pad_h: i32, pad_w: i32, dil_h: i32, dil_w: i32,
  count_include_pad: u32, total: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> idx: array<i32>;
@group(0) @binding(4) var<storage, read> dy: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<f32>;
@group(0) @binding(6) var<storage, read> sel: array<i32>;

// #include "lib/grid.wgsl"

// Floor and ceiling of a / b for b > 0 (WGSL's `/` truncates toward zero).
// NOTE: no `%`, and the quotient kept comes from a non-negative dividend: Deno's WebGPU on NVIDIA computes
// i32 `%` of a negative number as the unsigned remainder of its bit pattern (-12 % 3 gave 1).
fn fdiv(a: i32, b: i32) -> i32 { return select(a / b, -((b - 1 - a) / b), a < 0); }
fn cdiv(a: i32, b: i32) -> i32 { return -fdiv(-a, b); }

// -inf for a window with no element inside the input (from a `var`: Tint rejects
// constant expressions that overflow to infinity).
fn neg_inf() -> f32 {
  var bits = 0xff800000u;
  return bitcast<f32>(bits);
}

// Max over the window; idx = iy·wi + ix of the element chosen, within its plane (as
// PyTorch's indices). NOTE: strict `>` keeps the first maximum in row-major window
// order, and a NaN replaces the running max, so the last NaN wins, as in PyTorch's
// kernel (on adapters that honour NaN).
@compute @workgroup_size(WG)
fn max_pool2d_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.total) { return; }
  let ox = i32(i % p.wo);
  let oy = i32((i / p.wo) % p.ho);
  let plane = i / (p.wo * p.ho) * p.hi * p.wi;
  var best = neg_inf();
  var at = -1;
  for (var ky = 0; ky < i32(p.kh); ky++) {
    let iy = oy * p.stride_h - p.pad_h + ky * p.dil_h;
    if (iy < 0 || iy >= i32(p.hi)) { continue; }
    for (var kx = 0; kx < i32(p.kw); kx++) {
      let ix = ox * p.stride_w - p.pad_w + kx * p.dil_w;
      if (ix < 0 || ix >= i32(p.wi)) { continue; }
      let k = iy * i32(p.wi) + ix;
      let v = x[plane + u32(k)];
      if (at < 0 || v > best || v != v) { best = v; at = k; }
    }
  }
  y[i] = best;
  idx[i] = at;
}

// Outputs whose window span [o·stride − pad, o·stride − pad + (k − 1)·dil] holds input row i;
// the caller still checks that i falls on a tap (a multiple of dil from the window start).
fn span_rows(i: i32, stride: i32, pad: i32, dil: i32, k: u32, count: u32) -> vec2i {
  let first = max(cdiv(i + pad - (i32(k) - 1) * dil, stride), 0);
  let last = min(fdiv(i + pad, stride) + 1, i32(count));
  return vec2i(first, max(last, first));
}

// dx at (iy, ix) = Σ dy over the outputs that chose it. Loops over the outputs whose window
// spans it (one for a plain 2x2 stride-2 pool), not over every kernel tap.
@compute @workgroup_size(WG)
fn max_pool2d_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.total) { return; }
  let ix = i32(i % p.wi);
  let iy = i32((i / p.wi) % p.hi);
  let oplane = i / (p.wi * p.hi) * p.ho * p.wo;
  let me = iy * i32(p.wi) + ix;
  let ry = span_rows(iy, p.stride_h, p.pad_h, p.dil_h, p.kh, p.ho);
  let rx = span_rows(ix, p.stride_w, p.pad_w, p.dil_w, p.kw, p.wo);
  var acc = 0.0;
  for (var oy = ry.x; oy < ry.y; oy++) {
    // Both offsets are >= 0 here (oy <= (iy + pad) / stride), so `%` is safe (see fdiv).
    if ((iy + p.pad_h - oy * p.stride_h) % p.dil_h != 0) { continue; }
    let orow = oplane + u32(oy) * p.wo;
    for (var ox = rx.x; ox < rx.y; ox++) {
      if ((ix + p.pad_w - ox * p.stride_w) % p.dil_w != 0) { continue; }
      let o = orow + u32(ox);
      if (sel[o] == me) { acc += dy[o]; }
    }
  }
  dx[i] = acc;
}

// Window of output (oy, ox) clipped to the input, and PyTorch's divisor: the window
// clipped to the padded input (so a ceil-mode window hanging past the padding counts
// only up to it) with count_include_pad, else the number of input elements in it.
struct AvgWindow { y0: i32, y1: i32, x0: i32, x1: i32, divisor: f32 }

fn avg_window(oy: i32, ox: i32) -> AvgWindow {
  var y0 = oy * p.stride_h - p.pad_h;
  var x0 = ox * p.stride_w - p.pad_w;
  var y1 = min(y0 + i32(p.kh), i32(p.hi) + p.pad_h);
  var x1 = min(x0 + i32(p.kw), i32(p.wi) + p.pad_w);
  let padded = (y1 - y0) * (x1 - x0);
  y0 = max(y0, 0);
  x0 = max(x0, 0);
  y1 = min(y1, i32(p.hi));
  x1 = min(x1, i32(p.wi));
  let d = select((y1 - y0) * (x1 - x0), padded, p.count_include_pad != 0u);
  return AvgWindow(y0, y1, x0, x1, f32(d));
}

@compute @workgroup_size(WG)
fn avg_pool2d_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.total) { return; }
  let win = avg_window(i32((i / p.wo) % p.ho), i32(i % p.wo));
  let plane = i / (p.wo * p.ho) * p.hi * p.wi;
  var acc = 0.0;
  for (var iy = win.y0; iy < win.y1; iy++) {
    let row = plane + u32(iy) * p.wi;
    for (var ix = win.x0; ix < win.x1; ix++) { acc += x[row + u32(ix)]; }
  }
  y[i] = acc / win.divisor;
}

@compute @workgroup_size(WG)
fn avg_pool2d_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.total) { return; }
  let ix = i32(i % p.wi);
  let iy = i32((i / p.wi) % p.hi);
  let oplane = i / (p.wi * p.hi) * p.ho * p.wo;
  let ry = span_rows(iy, p.stride_h, p.pad_h, 1, p.kh, p.ho);
  let rx = span_rows(ix, p.stride_w, p.pad_w, 1, p.kw, p.wo);
  var acc = 0.0;
  for (var oy = ry.x; oy < ry.y; oy++) {
    for (var ox = rx.x; ox < rx.y; ox++) {
      acc += dy[oplane + u32(oy) * p.wo + u32(ox)] / avg_window(oy, ox).divisor;
    }
  }
  dx[i] = acc;
}

// Adaptive pooling: output o of `count` covers input [⌊o·size/count⌋, ⌈(o+1)·size/count⌉).
fn adaptive_start(o: u32, size: u32, count: u32) -> u32 { return o * size / count; }
fn adaptive_end(o: u32, size: u32, count: u32) -> u32 { return ((o + 1u) * size + count - 1u) / count; }

@compute @workgroup_size(WG)
fn adaptive_avg_pool2d_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.total) { return; }
  let ox = i % p.wo;
  let oy = (i / p.wo) % p.ho;
  let plane = i / (p.wo * p.ho) * p.hi * p.wi;
  let y0 = adaptive_start(oy, p.hi, p.ho);
  let y1 = adaptive_end(oy, p.hi, p.ho);
  let x0 = adaptive_start(ox, p.wi, p.wo);
  let x1 = adaptive_end(ox, p.wi, p.wo);
  var acc = 0.0;
  for (var iy = y0; iy < y1; iy++) {
    for (var ix = x0; ix < x1; ix++) { acc += x[plane + iy * p.wi + ix]; }
  }
  y[i] = acc / f32((y1 - y0) * (x1 - x0));
}

// Input row i lies in the windows of outputs [⌊i·count/size⌋, ⌈(i+1)·count/size⌉): the
// same formulas with the roles of size and count swapped.
@compute @workgroup_size(WG)
fn adaptive_avg_pool2d_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= p.total) { return; }
  let ix = i % p.wi;
  let iy = (i / p.wi) % p.hi;
  let oplane = i / (p.wi * p.hi) * p.ho * p.wo;
  var acc = 0.0;
  for (var oy = adaptive_start(iy, p.ho, p.hi); oy < adaptive_end(iy, p.ho, p.hi); oy++) {
    let ny = adaptive_end(oy, p.hi, p.ho) - adaptive_start(oy, p.hi, p.ho);
    for (var ox = adaptive_start(ix, p.wo, p.wi); ox < adaptive_end(ix, p.wo, p.wi); ox++) {
      let nx = adaptive_end(ox, p.wi, p.wo) - adaptive_start(ox, p.wi, p.wo);
      acc += dy[oplane + oy * p.wo + ox] / f32(ny * nx);
    }
  }
  dx[i] = acc;
}
