// Softmax and log-softmax along one dim of a contiguous tensor viewed as
// [outer, len, inner]: row r (of outer * inner) holds the `len` elements
// base(r) + k * inner. One workgroup handles one row, threads striding over k and
// combining partial max / sums in workgroup memory.
override WG: u32 = 256;

struct Params { rows: u32, len: u32, inner: u32 }  // mirrored in src/tensor/ops/softmax.ts
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;

// #include "lib/grid.wgsl"
// #include "lib/reduce.wgsl"

fn base(r: u32) -> u32 { return (r / p.inner) * p.len * p.inner + r % p.inner; }

// Row max and log of sum exp(x - max): subtracting the max keeps every exp in (0, 1],
// so logits of any size (1e3 and beyond) neither overflow nor lose the largest term.
fn row_stats(b: u32, t: u32) -> vec2f {
  var m = -0x1.fffffep+127f;  // -FLT_MAX, exact (Tint rejects decimals that round past it)
  for (var k = t; k < p.len; k += WG) { m = max(m, x[b + k * p.inner]); }
  m = wg_max(t, m);
  var s = 0.0;
  for (var k = t; k < p.len; k += WG) { s += exp(x[b + k * p.inner] - m); }
  return vec2f(m, log(wg_sum(t, s)));
}

@compute @workgroup_size(WG)
fn softmax_forward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                   @builtin(local_invocation_index) t: u32) {
  let r = group_index(g, nw);
  if (r >= p.rows) { return; }  // uniform per workgroup
  let b = base(r);
  let st = row_stats(b, t);
  for (var k = t; k < p.len; k += WG) { let i = b + k * p.inner; y[i] = exp(x[i] - st.x - st.y); }
}

// NOTE: x - max - log(sum) rather than log(softmax): exact for the largest logit and
// finite where softmax underflows to 0.
@compute @workgroup_size(WG)
fn log_softmax_forward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                       @builtin(local_invocation_index) t: u32) {
  let r = group_index(g, nw);
  if (r >= p.rows) { return; }
  let b = base(r);
  let st = row_stats(b, t);
  for (var k = t; k < p.len; k += WG) { let i = b + k * p.inner; y[i] = (x[i] - st.x) - st.y; }
}

// From the saved output y = softmax(x): dx = y * (dy - sum_k dy_k y_k).
@compute @workgroup_size(WG)
fn softmax_backward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                    @builtin(local_invocation_index) t: u32) {
  let r = group_index(g, nw);
  if (r >= p.rows) { return; }
  let b = base(r);
  var acc = 0.0;
  for (var k = t; k < p.len; k += WG) { let i = b + k * p.inner; acc += dy[i] * y[i]; }
  let d = wg_sum(t, acc);
  for (var k = t; k < p.len; k += WG) { let i = b + k * p.inner; dx[i] = y[i] * (dy[i] - d); }
}

// From the saved output y = log_softmax(x): dx = dy - exp(y) * sum_k dy_k.
@compute @workgroup_size(WG)
fn log_softmax_backward(@builtin(workgroup_id) g: vec3u, @builtin(num_workgroups) nw: vec3u,
                        @builtin(local_invocation_index) t: u32) {
  let r = group_index(g, nw);
  if (r >= p.rows) { return; }
  let b = base(r);
  var acc = 0.0;
  for (var k = t; k < p.len; k += WG) { acc += dy[b + k * p.inner]; }
  let d = wg_sum(t, acc);
  for (var k = t; k < p.len; k += WG) { let i = b + k * p.inner; dx[i] = dy[i] - exp(y[i]) * d; }
}
