// Checked mode for class and row indices (src/tensor/index_check.ts): find the first
// index outside [lo, hi) that is not `ignore`, without stopping the GPU. `report` holds
// [first bad position (0xffffffff: none), its value as i32 bits]; the host reads it at the
// next read back on the device and throws there. Off by default: nothing runs.
override WG: u32 = 256;

struct Params { n: u32, lo: i32, hi: i32, ignore: i32, use_ignore: u32 }  // mirrored in src/tensor/index_check.ts
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> idx: array<i32>;
@group(0) @binding(2) var<storage, read_write> report: array<atomic<u32>>;

// #include "lib/grid.wgsl"

@compute @workgroup_size(WG)
fn range_check(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let v = idx[i];
  let ignored = p.use_ignore != 0u && v == p.ignore;
  if (!ignored && (v < p.lo || v >= p.hi)) { atomicMin(&report[0], i); }
}

// One thread, after range_check: copy the value at the first bad position beside it (the
// index tensor may be gone by the time the host reads).
@compute @workgroup_size(1)
fn range_pick() {
  let at = atomicLoad(&report[0]);
  if (at != 0xffffffffu) { atomicStore(&report[1], bitcast<u32>(idx[at])); }
}
