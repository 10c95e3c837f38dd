// Segmented reductions (included with `// #include "lib/segment.wgsl"`, after lib/grid.wgsl;
// needs the includer's `override WG: u32`). A workgroup of WG threads is WG / SEG segments of
// SEG threads (SEG a power of two <= WG, both chosen by src/gpu/tuning.ts segmentBlocking),
// one row (or column) each. A segment's partial results meet in a tree over log2(SEG)
// barriers, so a short row costs a few barriers per workgroup instead of a full WG-wide tree
// per row (which CPU adapters, SwiftShader above all, pay dearly for). Every thread must
// reach every barrier: out-of-range segments compute on nothing and store nothing, with no
// early return.
override SEG: u32 = 1;
var<workgroup> seg_v: array<vec2f, WG>;

// This thread's segment (row or column) and lane; the segment may be out of range.
fn segment(g: vec3u, nw: vec3u, t: u32) -> vec2u { return vec2u(group_index(g, nw) * (WG / SEG) + t / SEG, t % SEG); }

// How seg_tree combines two partial results.
const SEG_SUM = 0u;      // both sums
const SEG_SOFTMAX = 1u;  // two running softmax states (max m, sum l of exp(s - m)) as one

// Two running softmax states (max m, sum l of exp(s - m)) as one.
fn softmax_join(a: vec2f, b: vec2f) -> vec2f {
  let m = max(a.x, b.x);
  return vec2f(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

fn seg_combine(a: vec2f, b: vec2f, op: u32) -> vec2f {
  if (op == SEG_SOFTMAX) { return softmax_join(a, b); }
  return a + b;
}

// v combined (by op, above) over the SEG threads of thread t's segment, given to all of them.
fn seg_tree(t: u32, v: vec2f, op: u32) -> vec2f {
  seg_v[t] = v;
  workgroupBarrier();
  let lane = t % SEG;
  for (var s = SEG / 2u; s > 0u; s = s >> 1u) {
    if (lane < s) { seg_v[t] = seg_combine(seg_v[t], seg_v[t + s], op); }
    workgroupBarrier();
  }
  let r = seg_v[t - lane];
  workgroupBarrier();
  return r;
}

// The sums of v over thread t's segment.
fn seg_sum2(t: u32, v: vec2f) -> vec2f { return seg_tree(t, v, SEG_SUM); }
