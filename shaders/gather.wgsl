// Indexing ops driven by an i32 index tensor: index_select (and embedding, which is
// index_select along dim 0), gather (torch.gather) and one_hot.
// index_select views x as [outer, size, inner] and y as [outer, k, inner] (k indices).
// gather pads x's and the index's shapes on the left to 6 dims (x0..x5, i0..i5) and
// indexes along `dim` (counted in the padded shape).
// An index outside [0, size) reads 0 in the forward and receives no gradient: checking
// it would need a read back, so the op documents it instead of throwing.
// Backward kernels are gathers, one thread per element of dx summing the dy entries whose
// index points at it in ascending position order: repeated indices sum, in the same order
// on every run (no float atomics). gather's backward scans the index along `dim` (usually
// short); index_select's first sorts the index so each row reads only its own entries.
override WG: u32 = 256;

struct Params {  // mirrored in src/tensor/ops/gather_kernel.ts
  n: u32, size: u32, k: u32, inner: u32, pad: i32, dim: u32, block: u32, stride: u32,
  x0: u32, x1: u32, x2: u32, x3: u32, x4: u32, x5: u32,
  i0: u32, i1: u32, i2: u32, i3: u32, i4: u32, i5: u32,
  mode: u32, bags: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
// NOTE: forward data moves as u32 bits, so any 4-byte dtype is copied exactly.
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@group(0) @binding(3) var<storage, read> idx: array<i32>;
@group(0) @binding(4) var<storage, read> dy: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<f32>;
@group(0) @binding(6) var<storage, read_write> keys: array<u32>;
@group(0) @binding(7) var<storage, read_write> pos: array<u32>;
@group(0) @binding(8) var<storage, read_write> bounds: array<u32>;
@group(0) @binding(9) var<storage, read> offs: array<i32>;
@group(0) @binding(10) var<storage, read_write> arg: array<i32>;

// #include "lib/grid.wgsl"

fn in_range(s: i32, size: u32) -> bool { return s >= 0 && u32(s) < size; }

// y[o, j, e] = x[o, idx[j], e]
@compute @workgroup_size(WG)
fn index_select_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let e = i % p.inner;
  let q = i / p.inner;
  let j = q % p.k;
  let o = q / p.k;
  let s = idx[j];
  if (!in_range(s, p.size)) { y[i] = 0u; return; }
  y[i] = x[(o * p.size + u32(s)) * p.inner + e];
}

// The backward of index_select sorts the (index, position) pairs first, so each row s of
// dx sums its own run of positions (ascending j) instead of scanning every index:
// keys, then a bitonic sort (one pass per (block, stride)), then the run bounds, then
// the sums. Out-of-range indices and row `pad` (embedding's padding_idx) get key `size`,
// which no row reads.

// keys[t] = idx[t] (or size), pos[t] = t; t >= k pads to a power of two with 0xffffffff.
@compute @workgroup_size(WG)
fn index_select_backward_keys(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let t = index(g, nw); if (t >= p.n) { return; }
  pos[t] = t;
  if (t >= p.k) { keys[t] = 0xffffffffu; return; }
  let s = idx[t];
  keys[t] = select(p.size, u32(s), in_range(s, p.size) && s != p.pad);
}

// Bitonic compare-exchange t of a pass (block, stride): the pair (i, i + stride) it orders,
// and whether (key, position) pairs ki/pi, kl/pl must swap (ordered by key, then position).
fn bitonic_first(t: u32, stride: u32) -> u32 { return (t / stride) * 2u * stride + t % stride; }
fn bitonic_swap(i: u32, block: u32, ki: u32, kl: u32, pi: u32, pl: u32) -> bool {
  let greater = ki > kl || (ki == kl && pi > pl);
  return greater == ((i & block) == 0u);
}

// One bitonic compare-exchange pass over (keys, pos) pairs.
@compute @workgroup_size(WG)
fn index_select_backward_sort(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let t = index(g, nw); if (t >= p.n) { return; }
  let i = bitonic_first(t, p.stride);
  let l = i + p.stride;
  let ki = keys[i]; let kl = keys[l];
  let pi = pos[i]; let pl = pos[l];
  if (bitonic_swap(i, p.block, ki, kl, pi, pl)) {
    keys[i] = kl; keys[l] = ki;
    pos[i] = pl; pos[l] = pi;
  }
}

// The whole bitonic sort of p.n pairs (a power of two, at most LOCAL_SORT) in one workgroup:
// every pass of index_select_backward_sort over workgroup memory, a barrier between passes.
// Same compare-exchanges, same order: the same sorted pairs in one launch, not log2(n)²/2.
const LOCAL_SORT: u32 = 1024u;
var<workgroup> sort_keys: array<u32, LOCAL_SORT>;
var<workgroup> sort_pos: array<u32, LOCAL_SORT>;
@compute @workgroup_size(WG)
fn index_select_backward_sort_local(@builtin(local_invocation_index) lid: u32) {
  for (var t = lid; t < p.n; t += WG) { sort_keys[t] = keys[t]; sort_pos[t] = pos[t]; }
  workgroupBarrier();
  for (var block = 2u; block <= p.n; block *= 2u) {
    for (var stride = block / 2u; stride >= 1u; stride /= 2u) {
      for (var t = lid; t < p.n / 2u; t += WG) {
        let i = bitonic_first(t, stride);
        let l = i + stride;
        let ki = sort_keys[i]; let kl = sort_keys[l];
        let pi = sort_pos[i]; let pl = sort_pos[l];
        if (bitonic_swap(i, block, ki, kl, pi, pl)) {
          sort_keys[i] = kl; sort_keys[l] = ki;
          sort_pos[i] = pl; sort_pos[l] = pi;
        }
      }
      workgroupBarrier();
    }
  }
  for (var t = lid; t < p.n; t += WG) { keys[t] = sort_keys[t]; pos[t] = sort_pos[t]; }
}

// bounds[2s], bounds[2s + 1] = the run [start, end) of key s in the sorted keys (bounds
// start zeroed: an absent row has an empty run).
@compute @workgroup_size(WG)
fn index_select_backward_bounds(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let t = index(g, nw); if (t >= p.n) { return; }
  let s = keys[t];
  if (s >= p.size) { return; }
  if (t == 0u || keys[t - 1u] != s) { bounds[2u * s] = t; }
  if (t + 1u == p.n || keys[t + 1u] != s) { bounds[2u * s + 1u] = t + 1u; }
}

// dx[o, s, e] = Σ_{j: idx[j] = s} dy[o, j, e], over s's run in ascending j.
@compute @workgroup_size(WG)
fn index_select_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let e = i % p.inner;
  let q = i / p.inner;
  let s = q % p.size;
  let o = q / p.size;
  let base = o * p.k * p.inner + e;
  let end = bounds[2u * s + 1u];
  var acc = 0.0;
  for (var t = bounds[2u * s]; t < end; t++) { acc += dy[base + pos[t] * p.inner]; }
  dx[i] = acc;
}

fn xdims() -> array<u32, 6> { return array<u32, 6>(p.x0, p.x1, p.x2, p.x3, p.x4, p.x5); }
fn idims() -> array<u32, 6> { return array<u32, 6>(p.i0, p.i1, p.i2, p.i3, p.i4, p.i5); }

// Multi-index of flat position i in a row-major 6-D shape.
fn unravel(i: u32, d: array<u32, 6>) -> array<u32, 6> {
  var c: array<u32, 6>;
  var r = i;
  for (var k = 5; k >= 0; k--) {
    c[k] = r % d[k];
    r = r / d[k];
  }
  return c;
}

// Flat position of a multi-index in a row-major 6-D shape.
fn ravel(c: array<u32, 6>, d: array<u32, 6>) -> u32 {
  var o = 0u;
  for (var k = 0; k < 6; k++) { o = o * d[k] + c[k]; }
  return o;
}

// y[c] = x[c with c[dim] replaced by idx[c]]; y and idx share the index's shape.
@compute @workgroup_size(WG)
fn gather_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let xd = xdims();
  var c = unravel(i, idims());
  let s = idx[i];
  if (!in_range(s, xd[p.dim])) { y[i] = 0u; return; }
  c[p.dim] = u32(s);
  y[i] = x[ravel(c, xd)];
}

// dx[c] = Σ_j dy[c with c[dim] = j] over j where idx there equals c[dim], for positions c
// inside the index's shape (elsewhere nothing was gathered: 0).
@compute @workgroup_size(WG)
fn gather_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let id = idims();
  var c = unravel(i, xdims());
  let s = i32(c[p.dim]);
  for (var k = 0u; k < 6u; k++) {
    if (k != p.dim && c[k] >= id[k]) { dx[i] = 0.0; return; }
  }
  c[p.dim] = 0u;
  let base = ravel(c, id);
  var stride = 1u;
  for (var k = 5u; k > p.dim; k--) { stride *= id[k]; }
  var acc = 0.0;
  for (var j = 0u; j < id[p.dim]; j++) {
    let at = base + j * stride;
    if (idx[at] == s) { acc += dy[at]; }
  }
  dx[i] = acc;
}

// y[r, c] = 1.0 where idx[r] == c (c < size = numClasses), else 0.0.
@compute @workgroup_size(WG)
fn one_hot_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let c = i % p.size;
  y[i] = select(0u, bitcast<u32>(1.0), idx[i / p.size] == i32(c));
}

// embedding_bag: bag b holds positions [offs[b], offs[b + 1]) of idx (the last bag ends at
// k); each reduces rows of x = weight [size, inner] by p.mode: 0 sum, 1 mean, 2 max.
// Out-of-range indices and row `pad` are left out (mean divides by the rows kept); a bag
// with none gives 0 in every mode, as PyTorch. arg holds max's chosen position (or -1).
fn bag_bounds(b: u32) -> vec2u {
  let start = u32(clamp(offs[b], 0, i32(p.k)));
  var end = p.k;
  if (b + 1u < p.bags) { end = u32(clamp(offs[b + 1u], i32(start), i32(p.k))); }
  return vec2u(start, end);
}
fn bag_keeps(s: i32) -> bool { return in_range(s, p.size) && s != p.pad; }

// y[b, e] = reduce over the bag's kept rows s of x[s, e]. NOTE: strict `>` keeps the first maximum.
@compute @workgroup_size(WG)
fn embedding_bag_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let e = i % p.inner;
  let r = bag_bounds(i / p.inner);
  var acc = 0.0;
  var cnt = 0u;
  var at = -1;
  for (var t = r.x; t < r.y; t++) {
    let s = idx[t];
    if (!bag_keeps(s)) { continue; }
    let v = bitcast<f32>(x[u32(s) * p.inner + e]);
    cnt++;
    if (p.mode == 2u) {
      if (at < 0 || v > acc) { acc = v; at = i32(t); }
    } else {
      acc += v;
    }
  }
  if (p.mode == 1u && cnt > 0u) { acc = acc / f32(cnt); }
  y[i] = bitcast<u32>(acc);
  arg[i] = at;
}

// dx[t, e] = what position t's row receives from its bag's dy[b, e]: dy (sum), dy / kept
// rows (mean), dy where max chose t (max); then index_select_backward sums them per row.
// The bag of t is the last b with offs[b] <= t (offsets ascend; empty bags hold none).
@compute @workgroup_size(WG)
fn embedding_bag_backward_spread(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let e = i % p.inner;
  let t = i / p.inner;
  var lo = 0u;
  var hi = p.bags;  // find the last b in [0, bags) with offs[b] <= t
  while (lo < hi) {
    let mid = (lo + hi) / 2u;
    if (offs[mid] <= i32(t)) { lo = mid + 1u; } else { hi = mid; }
  }
  if (lo == 0u || !bag_keeps(idx[t])) { dx[i] = 0.0; return; }
  let b = lo - 1u;
  var grad = dy[b * p.inner + e];
  if (p.mode == 1u) {
    let r = bag_bounds(b);
    var cnt = 0u;
    for (var u = r.x; u < r.y; u++) { if (bag_keeps(idx[u])) { cnt++; } }
    grad = grad / f32(cnt);
  } else if (p.mode == 2u && arg[b * p.inner + e] != i32(t)) {
    grad = 0.0;
  }
  dx[i] = grad;
}
