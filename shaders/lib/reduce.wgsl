// Workgroup tree reductions of one f32 (wg_max, wg_sum) or two (wg_sum2) per thread
// (included with `// #include "lib/reduce.wgsl"`). Needs the includer's `override WG: u32`,
// a power of two; every thread of the workgroup must call, with t its local_invocation_index.
// The trailing barrier lets the caller's next reduction reuse the shared array safely.
// An entry point is given only the workgroup arrays it uses, so the unused one costs nothing.

var<workgroup> sv: array<f32, WG>;
var<workgroup> sv2: array<vec2f, WG>;

fn wg_max(t: u32, v: f32) -> f32 {
  sv[t] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (t < s) { sv[t] = max(sv[t], sv[t + s]); }
    workgroupBarrier();
  }
  let r = sv[0];
  workgroupBarrier();
  return r;
}

fn wg_sum(t: u32, v: f32) -> f32 {
  sv[t] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (t < s) { sv[t] += sv[t + s]; }
    workgroupBarrier();
  }
  let r = sv[0];
  workgroupBarrier();
  return r;
}

// Two sums at once (layer and batch norm: mean and variance terms, or two gradients).
fn wg_sum2(t: u32, v: vec2f) -> vec2f {
  sv2[t] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (t < s) { sv2[t] += sv2[t + s]; }
    workgroupBarrier();
  }
  let r = sv2[0];
  workgroupBarrier();
  return r;
}
